"""A point-cloud classifier in PointNet's manner: shared per-point layers (1x1 convolutions with
BatchNormalization), a max over the points, a classifier; a validation graph (BatchNormalization with
its running statistics) runs in a minority of the steps.

    python bn_validation.py --iterations 16
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple


def pointnet(x, test=False):
    h = x
    for i, maps in enumerate((32, 64, 128)):
        with nn.parameter_scope("conv%d" % (i + 1)):
            h = PF.convolution(h, maps, (1, 1), with_bias=False)
            h = PF.batch_normalization(h, batch_stat=not test)
            h = F.relu(h)
    h = F.max(h, axis=2, keepdims=True)
    with nn.parameter_scope("fc1"):
        h = F.relu(PF.batch_normalization(PF.affine(h, 64), batch_stat=not test))
    with nn.parameter_scope("fc2"):
        return PF.affine(h, 8)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=16)
    parser.add_argument("--val-interval", type=int, default=5)
    parser.add_argument("--points", type=int, default=256)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    clouds = rng.randn(160, 3, args.points, 1).astype(np.float32)
    labels = rng.randint(0, 8, (160, 1))

    def load(i):
        return clouds[i], labels[i]
    di_train = data_iterator_simple(load, 128, 16, shuffle=True, rng=rng)
    di_val = data_iterator_simple(lambda i: load(128 + i), 32, 16, shuffle=False)
    x, t = nn.Variable((16, 3, args.points, 1)), nn.Variable((16, 1))
    loss = F.mean(F.softmax_cross_entropy(pointnet(x), t))
    vx, vt = nn.Variable((16, 3, args.points, 1)), nn.Variable((16, 1))
    verror = F.mean(F.top_n_error(pointnet(vx, test=True), vt))
    solver = S.Adam(1e-3)
    solver.set_parameters(nn.get_parameters())
    for i in range(args.iterations):
        x.d, t.d = di_train.next()
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        if i % args.val_interval == args.val_interval - 1:
            vx.d, vt.d = di_val.next()
            verror.forward(clear_buffer=True)
    print("loss %.4f error %.3f" % (float(loss.d), float(verror.d)))


if __name__ == "__main__":
    main()
