"""A small MLP training loop that does what a program may do to its process mid-run, at iteration ``--at``:
change its working folder (``--chdir DIR``), rewrite its module search path (``--clear-sys-path``), set SIGPROF's
disposition back to its default (``--reset-sigprof``) or install a handler of its own for it (``--own-sigprof``:
how often it was called is printed), end a pool of forked workers (``--pool``), take modules out of
``sys.modules`` (``--drop-modules``), replace ``open`` (``--replace-open``), lower the recursion limit
(``--recursion-limit N``); or train in a thread of its own (``--in-thread``), or with a daemon thread running
steps of its own beside the loop (``--daemon-steps``).

    python hostile_train.py --iterations 30 --chdir elsewhere --at 10
"""
import argparse
import multiprocessing
import os
import signal
import sys
import threading

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--at", type=int, default=10)
    parser.add_argument("--chdir")
    parser.add_argument("--clear-sys-path", action="store_true")
    parser.add_argument("--in-thread", action="store_true", help="train in a thread of its own")
    parser.add_argument("--reset-sigprof", action="store_true")
    parser.add_argument("--own-sigprof", action="store_true")
    parser.add_argument("--pool", action="store_true")
    parser.add_argument("--drop-modules", action="store_true")
    parser.add_argument("--replace-open", action="store_true")
    parser.add_argument("--recursion-limit", type=int)
    parser.add_argument("--daemon-steps", action="store_true")
    parser.add_argument("--thread-steps", action="store_true", help="a few steps of another graph, in a thread, joined")
    args = parser.parse_args()
    if args.in_thread:
        worker = threading.Thread(target=train, args=(args,))
        worker.start()
        worker.join()
    else:
        train(args)


def train(args):
    x, t = nn.Variable((32, 20)), nn.Variable((32, 1))
    h = F.relu(PF.affine(x, 64, name="fc1"))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(h, 10, name="fc2"), t))
    solver = S.Adam()
    solver.set_parameters(nn.get_parameters())
    rng = np.random.RandomState(0)
    for i in range(args.iterations):
        x.d, t.d = rng.randn(32, 20), rng.randint(0, 10, (32, 1))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        if i == args.at:
            hostile(args)
    print("ran %d iterations" % args.iterations)
    if args.own_sigprof:
        print("own SIGPROF handler called %d times" % len(CALLED))


CALLED = []


def _square(x):
    return x * x


def hostile(args):
    """What the program does to its process at iteration ``--at``."""
    if args.chdir:
        os.makedirs(args.chdir, exist_ok=True)
        os.chdir(args.chdir)
    if args.clear_sys_path:
        sys.path[:] = ["/nonexistent"]
    if args.reset_sigprof:
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
    if args.own_sigprof:
        signal.signal(signal.SIGPROF, lambda number, frame: CALLED.append(number))
    if args.pool:
        pool = multiprocessing.get_context("fork").Pool(2)
        print("pool: %s" % pool.map(_square, range(4)))
        pool.terminate()
        pool.join()
    if args.drop_modules:
        for name in list(sys.modules):
            if name.split(".")[0] in ("json", "csv", "gzip", "zipfile", "pandas"):
                del sys.modules[name]
    if args.replace_open:
        import builtins
        import io

        def refused(*a, **k):
            raise PermissionError("this program opens no files after iteration %d" % args.at)

        builtins.open = io.open = refused
    if args.recursion_limit:
        sys.setrecursionlimit(args.recursion_limit)
    if args.daemon_steps:
        threading.Thread(target=_steps_beside, daemon=True).start()
    if args.thread_steps:
        worker = threading.Thread(target=_steps_beside, args=(5,))
        worker.start()
        worker.join()


def _steps_beside(steps=None):
    """Steps of another small graph, in a thread (a daemon's: as long as the program runs)."""
    x = nn.Variable((8, 4))
    y = F.mean(F.tanh(PF.affine(x, 4, name="beside")))
    rng = np.random.RandomState(1)
    for _ in iter(int, 1) if steps is None else range(steps):
        x.d = rng.randn(8, 4)
        y.forward()
        y.backward()


if __name__ == "__main__":
    main()
