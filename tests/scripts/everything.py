"""A program that goes through every place nnprofile hooks into: a static graph with a custom PythonFunction
layer read from a data iterator and logged by a monitor, trained by a solver of nnabla.solvers; a solver of the
program's own (a Python subclass of Solver) on a second graph; an auto_forward graph trained by its backward;
eager work on NdArrays; second-order gradients (nn.grad) with BatchNormalization; a target updated by F.assign. It prints what it computed,
so that a run under nnprofile can be compared with a run alone, digit for digit.

    python everything.py --iterations 8
"""
import argparse
import os
from _helpers import scratch

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.function import PythonFunction
from nnabla.monitor import Monitor, MonitorSeries
from nnabla.utils.data_iterator import data_iterator_simple


class Square(PythonFunction):
    @property
    def name(self):
        return "Square"

    def min_outputs(self):
        return 1

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(F.mul2(inputs[0].data, inputs[0].data))

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        g = F.mul_scalar(F.mul2(outputs[0].grad, inputs[0].data), 2.0)
        if accum[0]:
            inputs[0].grad += g
        else:
            inputs[0].grad.copy_from(g)

    def grad_depends_output_data(self, i, o):
        return False

    def grad_depends_input_data(self, i, j):
        return True


class PlainSgd(S.Solver):
    def __init__(self, lr):
        self.lr, self.params = lr, {}

    def set_parameters(self, params):
        self.params = dict(params)

    def zero_grad(self):
        for p in self.params.values():
            p.grad.zero()

    def update(self):
        for p in self.params.values():
            p.data -= self.lr * p.grad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    nn.random.seed(0)
    nn.clear_parameters()
    data = rng.randn(64, 6).astype(np.float32)
    di = data_iterator_simple(lambda i: (data[i], data[i, :1]), 64, 8, shuffle=False)
    x, t = nn.Variable((8, 6)), nn.Variable((8, 1))
    with nn.parameter_scope("net"):
        y = PF.affine(Square(None)(PF.affine(x, 5, name="fc1")), 1, name="fc2")
    loss = F.mean(F.squared_error(y, t))
    with nn.parameter_scope("net"):
        solver = S.Adam(1e-2)
        solver.set_parameters(nn.get_parameters())
    with nn.parameter_scope("side"):
        z = nn.Variable.from_numpy_array(rng.randn(8, 6).astype(np.float32))
        side = F.mean(PF.batch_normalization(PF.affine(z, 4, name="fc")) ** 2)
        own = PlainSgd(1e-2)
        own.set_parameters(nn.get_parameters())
    target = nn.parameter.get_parameter_or_create("target/fc/affine/W", (6, 4), need_grad=False)
    follow = F.assign(target, 0.9 * target + 0.1 * nn.get_parameters()["side/fc/affine/W"])  # a target network
    folder = scratch()
    monitor = MonitorSeries("loss", Monitor(folder), interval=1000, verbose=False)
    out = []
    for i in range(args.iterations):
        x.d, t.d = di.next()
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        monitor.add(i, float(loss.d))
        side.forward()
        own.zero_grad()
        w = nn.get_parameters()["side/fc/affine/W"]
        grads = nn.grad([side], [w])       # second order: the gradient's norm, then its gradient
        penalty = F.sum(grads[0] ** 2)
        penalty.forward()
        penalty.backward()
        own.update()
        follow.forward()
        with nn.auto_forward():
            h = F.tanh(PF.affine(nn.Variable.from_numpy_array(data[:8]), 3, name="dyn"))
            dyn = F.mean(h ** 2)
        dyn.backward()
        norm = float(F.sum(solver.get_parameters()["fc1/affine/W"].grad ** 2).data)  # eager, on NdArrays
        out.append("%d %.6f %.6f %.6f %.6f" % (i, float(loss.d), float(side.d), float(dyn.d), norm))
    print("\n".join(out))
    os.system("true")


if __name__ == "__main__":
    main()
