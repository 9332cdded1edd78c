"""A small MLP training loop that does what a program may do to its process mid-run: change its working folder
(``--chdir DIR``), rewrite its module search path (``--clear-sys-path``), at iteration ``--at``; or train in a
thread of its own (``--in-thread``).

    python hostile_train.py --iterations 30 --chdir elsewhere --at 10
"""
import argparse
import os
import sys

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
    args = parser.parse_args()
    if args.in_thread:
        import threading
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
            if args.chdir:
                os.makedirs(args.chdir, exist_ok=True)
                os.chdir(args.chdir)
            if args.clear_sys_path:
                sys.path[:] = ["/nonexistent"]
    print("ran %d iterations" % args.iterations)


if __name__ == "__main__":
    main()
