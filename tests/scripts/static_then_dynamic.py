"""NNabla's tutorial on static and dynamic graphs: a CNN trained with a static graph, then
``nn.clear_parameters()``, then the same network trained under ``nn.auto_forward()``.

    python static_then_dynamic.py --iterations 4
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def cnn(x):
    with nn.parameter_scope("cnn"):
        with nn.parameter_scope("conv11"):
            h = F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1)))
        h = F.max_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            return PF.affine(h, 10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x = nn.Variable((16, 1, 16, 16))
    t = nn.Variable((16, 1))
    loss = F.mean(F.softmax_cross_entropy(cnn(x), t))
    solver = S.Adam()
    solver.set_parameters(nn.get_parameters())
    for i in range(args.iterations):  # static
        x.d, t.d = rng.rand(*x.shape), rng.randint(0, 10, size=t.shape)
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
    nn.clear_parameters()
    solver = S.Adam()
    with nn.auto_forward():
        for i in range(args.iterations):  # dynamic
            xd = nn.Variable.from_numpy_array(rng.rand(16, 1, 16, 16).astype(np.float32))
            td = nn.Variable.from_numpy_array(rng.randint(0, 10, size=(16, 1)).astype(np.int32))
            dyn_loss = F.mean(F.softmax_cross_entropy(cnn(xd), td))
            if i == 0:
                solver.set_parameters(nn.get_parameters())
            solver.zero_grad()
            dyn_loss.backward(clear_buffer=True)
            solver.update()
    print("done")


if __name__ == "__main__":
    main()
