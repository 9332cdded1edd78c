"""Data-parallel training as NNabla documents it: a communicator, comm.init(), the gradients
all-reduced between backward and update, launched with ``mpirun -n N python data_parallel.py``.
One rank may read a slower data source (``--slow-rank``, ``--slow-ms``), through a DataIterator
without a prefetch thread, so that nothing hides the delay: a straggler.

    mpirun -n 2 python data_parallel.py --iterations 12 --slow-rank 1 --slow-ms 30
"""
import argparse
import json
import os
import signal
import time

import numpy as np

import nnabla as nn
import nnabla.communicators as C
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.ext_utils import get_extension_context
from nnabla.utils.data_iterator import data_iterator
from nnabla.utils.data_source import DataSource


class Images(DataSource):
    def __init__(self, size, seed, delay_s=0.0, batch=16):
        super().__init__(shuffle=False)
        rng = np.random.RandomState(seed)
        self._images = rng.rand(size, 1, 16, 16).astype(np.float32)
        self._labels = rng.randint(0, 10, size=(size, 1)).astype(np.int32)
        self._size, self._delay, self._batch = size, delay_s, batch
        self._variables = ("x", "y")
        self.reset()

    def _get_data(self, position):
        if self._delay and position % self._batch == 0:
            time.sleep(self._delay)  # a slow disk, once a batch
        return self._images[position], self._labels[position]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=0.0)
    parser.add_argument("--die-rank", type=int, default=-1,
                        help="this rank is killed (SIGKILL, as the OOM killer does) at iteration --die-at")
    parser.add_argument("--die-at", type=int, default=6)
    parser.add_argument("--comm-log", help="write the time (ns) around each all_reduce here, as JSON, per rank "
                        "(and around each read of a batch, in COMM_LOG.reads)")
    args = parser.parse_args()
    ctx = get_extension_context("cpu")
    comm = C.MultiProcessDataParallelCommunicator(ctx)
    comm.init()
    nn.set_default_context(ctx)
    delay = args.slow_ms / 1e3 if comm.rank == args.slow_rank else 0.0
    data = data_iterator(Images(1024, comm.rank, delay, args.batch_size), args.batch_size, use_thread=False)

    x = nn.Variable((args.batch_size, 1, 16, 16))
    t = nn.Variable((args.batch_size, 1))
    with nn.parameter_scope("conv"):
        h = F.relu(PF.convolution(x, 16, (3, 3), pad=(1, 1)))
    h = F.max_pooling(h, (2, 2))
    with nn.parameter_scope("fc"):
        y = PF.affine(h, 10)
    loss = F.mean(F.softmax_cross_entropy(y, t))
    params = nn.get_parameters()
    solver = S.Adam(1e-3)
    solver.set_parameters(params)
    around, reads = [], []
    for i in range(args.iterations):
        if i == args.die_at and comm.rank == args.die_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        start = time.perf_counter_ns()
        x.d, t.d = data.next()
        reads.append(time.perf_counter_ns() - start)
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        start = time.perf_counter_ns()
        comm.all_reduce([p.grad for p in params.values()], division=True, inplace=False)
        around.append(time.perf_counter_ns() - start)
        solver.update()
    comm.barrier()
    if args.comm_log:
        with open("%s.%d" % (args.comm_log, comm.rank), "w") as f:
            json.dump(around, f)
        with open("%s.reads.%d" % (args.comm_log, comm.rank), "w") as f:
            json.dump(reads, f)
    if comm.rank == 0:
        print("loss %.3f on %d ranks" % (float(loss.d), comm.size))


if __name__ == "__main__":
    main()
