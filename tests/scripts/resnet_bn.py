"""A static-graph residual CNN with batch normalization, trained with Momentum and weight decay."""
import argparse
import sys

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def block(h, name):
    with nn.parameter_scope(name):
        with nn.parameter_scope("conv1"):
            r = F.relu(PF.batch_normalization(PF.convolution(h, 8, (3, 3), pad=(1, 1), with_bias=False)))
        with nn.parameter_scope("conv2"):
            r = PF.batch_normalization(PF.convolution(r, 8, (3, 3), pad=(1, 1), with_bias=False))
    return F.relu(h + r)


def network(x):
    with nn.parameter_scope("stem"):
        h = F.relu(PF.batch_normalization(PF.convolution(x, 8, (3, 3), pad=(1, 1))))
    h = block(h, "block1")
    h = block(h, "block2")
    h = F.average_pooling(h, (2, 2))
    with nn.parameter_scope("head"):
        return PF.affine(h, 10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--exit", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x = nn.Variable((8, 3, 16, 16))
    t = nn.Variable((8, 1))
    loss = F.mean(F.softmax_cross_entropy(network(x), t))
    solver = S.Momentum(lr=0.01, momentum=0.9)
    solver.set_parameters(nn.get_parameters())
    for i in range(args.steps):
        x.d = rng.rand(*x.shape)
        t.d = rng.randint(0, 10, size=t.shape)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.weight_decay(1e-4)
        solver.clip_grad_by_norm(10.0)
        solver.update()
    print("loss %.3f" % float(loss.d))
    sys.exit(args.exit)


if __name__ == "__main__":
    main()
