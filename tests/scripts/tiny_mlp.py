"""NNabla's Python API tutorial, as a script: an MLP trained one step by hand and by an Sgd solver before
the loop, the name ``loss`` then bound to a second, deeper and tinier MLP trained by Adam in the loop
(functions of a few microseconds each), and after the loop the prediction run eagerly on NdArrays.

    python tiny_mlp.py --iterations 30
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
from nnabla import solvers as S


def vector2length(x):
    return np.sqrt(np.sum(x ** 2, axis=1, keepdims=True))


def length_mlp(x):
    h = x
    for i, hnum in enumerate([4, 8, 4, 2]):
        h = F.tanh(PF.affine(h, hnum, name="fc{}".format(i)))
    return PF.affine(h, 1, name="fc")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()

    # The first MLP: one step by hand (imperative), one by a solver.
    nn.clear_parameters()
    batchsize = 16
    x = nn.Variable([batchsize, 2])
    with nn.parameter_scope("fc1"):
        h = F.tanh(PF.affine(x, 512))
    with nn.parameter_scope("fc2"):
        y = PF.affine(h, 1)
    label = nn.Variable([batchsize, 1])
    loss = F.reduce_mean(F.squared_error(y, label))
    x.d, label.d = np.random.randn(*x.shape), np.random.randn(*label.shape)
    loss.forward()
    for name, param in nn.get_parameters().items():
        param.grad.zero()
    loss.backward()
    for name, param in nn.get_parameters().items():
        param.data -= param.grad * 0.001  # eager: F.mul_scalar and F.sub2 on NdArrays
    solver = S.Sgd(lr=0.00001)
    solver.set_parameters(nn.get_parameters())
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()

    # The second: a deep and tiny MLP, the same name for its loss, trained in the loop.
    nn.clear_parameters()
    batchsize = 100
    x = nn.Variable([batchsize, 2])
    y = length_mlp(x)
    label = nn.Variable([batchsize, 1])
    loss = F.reduce_mean(F.squared_error(y, label))
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(nn.get_parameters())
    ends = []
    for i in range(args.iterations):
        xx = np.random.uniform(-1, 1, size=(batchsize, 2))
        x.d, label.d = xx, vector2length(xx)
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.weight_decay(1e-6)
        solver.update()
        ends.append(time.perf_counter())
    y.persistent = True
    loss.forward(clear_buffer=True)
    # The prediction, eagerly on NdArrays, as the tutorial plots it.
    grid = np.random.uniform(-1, 1, size=(400, 2))
    predictions = [length_mlp(nn.NdArray.from_numpy_array(grid[i:i + batchsize])).data.copy()
                   for i in range(0, grid.shape[0], batchsize)]
    print("loss %.4f, %d predictions" % (float(loss.d), sum(len(p) for p in predictions)))
    if args.time_steps:
        steps = sorted(b - a for a, b in zip(ends[1:], ends[2:]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
