"""A siamese network: one encoder applied to two inputs in one graph (a contrastive loss), one
solver from ``nnabla.solvers``, batches from ``data_iterator_simple``, and ``for`` over the steps.

    python siamese.py --iterations 8
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple


def encoder(x):
    with nn.parameter_scope("encoder"):
        with nn.parameter_scope("conv"):
            h = F.relu(PF.convolution(x, 8, (3, 3), pad=(1, 1)))
        h = F.max_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            return PF.affine(h, 16)


def contrastive(a, b, same, margin=1.0):
    d = F.sum(F.squared_error(a, b), axis=1, keepdims=True)
    return F.mean(same * d + (1 - same) * F.maximum_scalar(margin - d, 0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    pairs = rng.rand(128, 2, 1, 16, 16).astype(np.float32)
    same = rng.randint(0, 2, size=(128, 1)).astype(np.float32)

    def load(i):
        return pairs[i, 0], pairs[i, 1], same[i]
    pairs_data = data_iterator_simple(load, 128, args.batch_size, shuffle=True, rng=rng)
    left = nn.Variable((args.batch_size, 1, 16, 16))
    right = nn.Variable((args.batch_size, 1, 16, 16))
    label = nn.Variable((args.batch_size, 1))
    loss = contrastive(encoder(left), encoder(right), label)
    solver = S.Momentum(0.01, 0.9)
    solver.set_parameters(nn.get_parameters())
    for i in range(args.iterations):
        left.d, right.d, label.d = pairs_data.next()
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    print("loss %.3f" % float(loss.d))


if __name__ == "__main__":
    main()
