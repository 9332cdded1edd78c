"""A classifier as NNabla's examples write one: a training graph and a validation graph over shared
parameters, data iterators over a data source, monitors, the solver from ``nnabla.solver``, validation
every few iterations, and the parameters saved after the loop.

    python train_validate.py --iterations 12 --val-interval 4 --val-iter 2 --out /tmp/params
"""
import argparse
import os
from _helpers import scratch
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solver as S
from nnabla.monitor import Monitor, MonitorSeries, MonitorTimeElapsed
from nnabla.utils.data_iterator import data_iterator
from nnabla.utils.data_source import DataSource


class Digits(DataSource):
    """Random 16x16 images and labels, made on the fly (no download)."""

    def __init__(self, size, seed):
        super().__init__(shuffle=True, rng=np.random.RandomState(seed))
        rng = np.random.RandomState(seed)
        self._images = rng.rand(size, 1, 16, 16).astype(np.float32)
        self._labels = rng.randint(0, 10, size=(size, 1)).astype(np.int32)
        self._size = size
        self._variables = ("x", "y")
        self.reset()

    def _get_data(self, position):
        i = self._indexes[position]
        return self._images[i], self._labels[i]

    def reset(self):
        self._indexes = self._rng.permutation(self._size) if self._shuffle else np.arange(self._size)
        super().reset()


def model(image, test=False):
    with nn.parameter_scope("conv1"):
        h = F.relu(PF.convolution(image, 8, (3, 3), pad=(1, 1)))
    h = F.max_pooling(h, (2, 2))
    with nn.parameter_scope("conv2"):
        h = F.relu(PF.convolution(h, 16, (3, 3), pad=(1, 1)))
    h = F.average_pooling(h, (2, 2))
    with nn.parameter_scope("fc"):
        return PF.affine(h, 10)


def categorical_error(pred, label):
    return (pred.argmax(1) != label.flat).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--val-interval", type=int, default=4)
    parser.add_argument("--val-iter", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--out", default=None)
    parser.add_argument("--time-steps", action="store_true",
                        help="print the median step (steps 2 to 21, update to update), for make bench")
    args = parser.parse_args()
    data = data_iterator(Digits(256, 0), args.batch_size)
    vdata = data_iterator(Digits(64, 1), args.batch_size, with_memory_cache=False)

    image = nn.Variable((args.batch_size, 1, 16, 16))
    label = nn.Variable((args.batch_size, 1))
    pred = model(image)
    loss = F.mean(F.softmax_cross_entropy(pred, label))
    vimage = nn.Variable((args.batch_size, 1, 16, 16))
    vlabel = nn.Variable((args.batch_size, 1))
    vpred = model(vimage, test=True)

    solver = S.Adam(1e-3)
    solver.set_parameters(nn.get_parameters())
    monitor = Monitor(args.out or scratch(prefix="train_validate_monitor-"))
    monitor_loss = MonitorSeries("Training loss", monitor, interval=4, verbose=False)
    monitor_err = MonitorSeries("Test error", monitor, interval=1, verbose=False)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=100, verbose=False)
    ends = []
    for i in range(args.iterations):
        if i % args.val_interval == 0 and i != 0:
            ve = 0.0
            for j in range(args.val_iter):
                vimage.d, vlabel.d = vdata.next()
                vpred.forward(clear_buffer=True)
                ve += categorical_error(vpred.d, vlabel.d)
            monitor_err.add(i, ve / args.val_iter)
        image.d, label.d = data.next()
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.weight_decay(1e-5)
        solver.update()
        ends.append(time.perf_counter())
        monitor_loss.add(i, loss.d.copy())
        monitor_time.add(i)
    vpred.forward(clear_buffer=True)  # a final evaluation: not a step
    if args.out:
        nn.save_parameters(os.path.join(args.out, "params.h5"))
    print("final loss %.3f" % float(loss.d))
    if args.time_steps:
        steps = sorted(b - a for a, b in zip(ends[:21], ends[1:22]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
