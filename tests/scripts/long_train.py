"""A plain MLP training loop as a long training runs it, made controllable for the tests of windows:
data from ``data_iterator_simple``, Adam, a loss monitor. It can run until a file appears, slow its input
down from some step on (a loader falling behind), pause at an iteration until a file appears (so that a
test reads the files of a window while the program still runs), or kill itself (an out-of-memory kill).
With ``--inference`` it evaluates instead: no solver, the network's forward on each batch, an accuracy
summed as an evaluation loop sums it (its steps show only as passes and reads).

    python long_train.py --iterations 200 --slow-input-after 100 --slow-ms 5
"""
import argparse
import os
import signal
import sys
import tempfile
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.monitor import Monitor, MonitorSeries
from nnabla.utils.data_iterator import data_iterator_simple


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100, help="0: until --stop-file exists")
    parser.add_argument("--stop-file")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--slow-input-after", type=int, default=-1, help="from this iteration on, the input ...")
    parser.add_argument("--slow-ms", type=float, default=0.0, help="... takes this much longer per batch")
    parser.add_argument("--pause-at", type=int, default=-1, help="at this iteration, wait until --pause-file exists")
    parser.add_argument("--pause-file")
    parser.add_argument("--mark-at", type=int, default=-1, help="at this iteration, create --mark-file (a test "
                                                                    "then knows the loop is under way)")
    parser.add_argument("--mark-file")
    parser.add_argument("--kill-at", type=int, default=-1, help="SIGKILL this process at this iteration")
    parser.add_argument("--inference", action="store_true", help="forward only, no solver: an evaluation loop")
    parser.add_argument("--print-argv", action="store_true")
    parser.add_argument("--seconds-per-step", type=float, default=0.0, help="sleep this long in each step's own code")
    parser.add_argument("--report", help="write each step's duration (ns) and the resident memory (every 100 steps, "
                                         "KiB) here, as JSON, for make bench")
    args = parser.parse_args()
    if args.print_argv:
        print("argv %s" % sys.argv)

    rng = np.random.RandomState(0)
    images = rng.rand(512, 64).astype(np.float32)
    labels = rng.randint(0, 10, size=(512, 1)).astype(np.int32)
    state = {"iteration": 0}

    def load(i):
        if 0 <= args.slow_input_after <= state["iteration"] and i % args.batch_size == 0:
            time.sleep(args.slow_ms / 1e3)  # a loader falling behind
        return images[i], labels[i]
    data = data_iterator_simple(load, len(images), args.batch_size, shuffle=True, with_memory_cache=False,
                                with_file_cache=False, rng=rng)
    data._use_thread = False  # the wait is then the loading itself

    x = nn.Variable((args.batch_size, 64))
    t = nn.Variable((args.batch_size, 1))
    with nn.parameter_scope("fc1"):
        h = F.relu(PF.affine(x, args.units))
    with nn.parameter_scope("fc2"):
        y = PF.affine(h, 10)
    loss = F.mean(F.softmax_cross_entropy(y, t))
    if args.inference:
        y.persistent = True
        solver, correct = None, 0
    else:
        solver = S.Adam(1e-3)
        solver.set_parameters(nn.get_parameters())
    monitor = MonitorSeries("Training loss", Monitor(_scratch(prefix="long_train_")), interval=50)
    i = 0
    ends, memory = [time.perf_counter_ns()], []
    while args.iterations == 0 or i < args.iterations:
        if args.stop_file and os.path.exists(args.stop_file):
            break
        if i == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if i == args.mark_at and args.mark_file:
            open(args.mark_file, "w").close()
        if i == args.pause_at and args.pause_file:
            while not os.path.exists(args.pause_file):
                time.sleep(0.02)
        state["iteration"] = i
        x.d, t.d = data.next()
        if solver is None:
            y.forward(clear_buffer=True)
            correct += int((y.d.argmax(axis=1) == t.d[:, 0]).sum())
        else:
            loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            solver.update()
            monitor.add(i, float(loss.d))
        if args.seconds_per_step:
            time.sleep(args.seconds_per_step)
        i += 1
        if args.report:
            ends.append(time.perf_counter_ns())
            if i % 100 == 0:
                with open("/proc/self/statm") as f:
                    memory.append(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024)
    if solver is None:
        print("ran %d iterations, accuracy %.3f" % (i, correct / max(1, i * args.batch_size)))
    else:
        print("ran %d iterations, loss %.4f" % (i, float(loss.d)))
    if args.report:
        import json
        with open(args.report, "w") as f:
            json.dump({"steps_ns": [b - a for a, b in zip(ends, ends[1:])], "rss_kib": memory}, f)


_SCRATCH = []


def _scratch(prefix="monitor-"):
    """A monitor folder removed when the program exits (nothing is left in /tmp)."""
    _SCRATCH.append(tempfile.TemporaryDirectory(prefix=prefix))
    return _SCRATCH[-1].name


if __name__ == "__main__":
    main()
