"""A custom layer written as NNabla's own ``PythonFunction`` docstring writes it: ``Mul2`` computes on
NdArrays inside ``forward_impl`` (``y.copy_from(F.mul2(x0, x1))``) and ``backward_impl``
(``dx0 += F.mul2(dy, x1)``), and a pass-through layer copies its input (``copy_from``). An MLP uses
both in one trained graph, read from an iterator, with a validation graph every few steps.

    python custom_layer.py --iterations 12
"""
from _helpers import timed_steps
import time
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.function import PythonFunction
from nnabla.utils.data_iterator import data_iterator_simple


class PythonMul2(PythonFunction):
    """The naive multiplication of two variables, as NNabla's docstring writes it."""

    def __init__(self, ctx):
        super(PythonMul2, self).__init__(ctx)

    @property
    def name(self):
        return self.__class__.__name__

    def min_outputs(self):
        return 1

    def setup_impl(self, inputs, outputs):
        i0, i1 = inputs[0], inputs[1]
        assert i0.shape == i1.shape, "Shapes of inputs are different."
        outputs[0].reset_shape(i0.shape, True)

    def forward_impl(self, inputs, outputs):
        x0, x1, y = inputs[0].data, inputs[1].data, outputs[0].data
        y.copy_from(F.mul2(x0, x1))

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        x0, x1 = inputs[0].data, inputs[1].data
        dx0, dx1, dy = inputs[0].grad, inputs[1].grad, outputs[0].grad
        if propagate_down[0]:
            if accum[0]:
                dx0 += F.mul2(dy, x1)
            else:
                dx0.copy_from(F.mul2(dy, x1))
        if propagate_down[1]:
            if accum[1]:
                dx1 += F.mul2(dy, x0)
            else:
                dx1.copy_from(F.mul2(dy, x0))

    def grad_depends_output_data(self, i, o):
        return False

    def grad_depends_input_data(self, i, j):
        return True


class PassThrough(PythonFunction):
    """A layer that copies its input (a hook point in a user's network)."""

    @property
    def name(self):
        return "PassThrough"

    def min_outputs(self):
        return 1

    def setup_impl(self, inputs, outputs):
        outputs[0].reset_shape(inputs[0].shape, True)

    def forward_impl(self, inputs, outputs):
        outputs[0].data.copy_from(inputs[0].data)

    def backward_impl(self, inputs, outputs, propagate_down, accum):
        if propagate_down[0]:
            if accum[0]:
                inputs[0].grad += outputs[0].grad
            else:
                inputs[0].grad.copy_from(outputs[0].grad)

    def grad_depends_output_data(self, i, o):
        return False

    def grad_depends_input_data(self, i, j):
        return False


def mul2(x, y, ctx=None):
    return PythonMul2(ctx)(x, y)


def pass_through(x, ctx=None):
    return PassThrough(ctx)(x)


def mlp(x, test=False):
    h = F.relu(PF.affine(x, 64, name="fc1"))
    h = mul2(h, h)                       # a gated square, on NdArrays inside
    h = pass_through(h)
    return PF.affine(h, 10, name="fc2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    parser.add_argument("--val-interval", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    images, labels = rng.randn(256, 32).astype(np.float32), rng.randint(0, 10, (256, 1))

    def load(i):
        return images[i], labels[i]
    di = data_iterator_simple(load, len(images), 32, shuffle=True, rng=rng)
    x, t = nn.Variable((32, 32)), nn.Variable((32, 1))
    loss = F.mean(F.softmax_cross_entropy(mlp(x), t))
    vx, vt = nn.Variable((32, 32)), nn.Variable((32, 1))
    verror = F.mean(F.top_n_error(mlp(vx, test=True), vt))
    solver = S.Adam(1e-3)
    solver.set_parameters(nn.get_parameters())
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        if i % args.val_interval == 0:
            vx.d, vt.d = images[:32], labels[:32]
            verror.forward(clear_buffer=True)
        x.d, t.d = di.next()
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
    print("loss %.4f error %.3f" % (float(loss.d), float(verror.d)))


if __name__ == "__main__":
    main()
