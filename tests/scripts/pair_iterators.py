"""A siamese network reading two iterators a step, through a pair class of the program's own (its
``next`` reads ``self.itr0`` and ``self.itr1``); its validation reads a second pair every few steps.

    python pair_iterators.py --iterations 12
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple


class PairIterator:
    """Two images and whether they show the same digit, from two iterators over one data set."""

    def __init__(self, images, labels, batch_size, rng):
        def load(i):
            return images[i], labels[i]
        self.itr0 = data_iterator_simple(load, len(images), batch_size, shuffle=True, rng=rng)
        self.itr1 = data_iterator_simple(load, len(images), batch_size, shuffle=True, rng=rng)

    def next(self):
        x0, y0 = self.itr0.next()
        x1, y1 = self.itr1.next()
        return x0, x1, (y0 == y1).astype(np.float32)


def embed(x, test=False):
    h = F.relu(PF.convolution(x, 8, (3, 3), name="conv1"))
    h = F.max_pooling(h, (2, 2))
    return PF.affine(h, 16, name="fc")


def contrastive(e0, e1, same, margin=1.0):
    d = F.sum(F.squared_error(e0, e1), axis=1, keepdims=True)
    return F.mean(same * d + (1 - same) * F.maximum_scalar(margin - d, 0))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--val-interval", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    images = rng.rand(128, 1, 12, 12).astype(np.float32)
    labels = rng.randint(0, 4, (128, 1))
    train = PairIterator(images[:96], labels[:96], 16, rng)
    val = PairIterator(images[96:], labels[96:], 16, rng)
    x0, x1, same = nn.Variable((16, 1, 12, 12)), nn.Variable((16, 1, 12, 12)), nn.Variable((16, 1))
    loss = contrastive(embed(x0), embed(x1), same)
    vx0, vx1, vsame = nn.Variable((16, 1, 12, 12)), nn.Variable((16, 1, 12, 12)), nn.Variable((16, 1))
    vloss = contrastive(embed(vx0, test=True), embed(vx1, test=True), vsame)
    solver = S.Adam(1e-3)
    solver.set_parameters(nn.get_parameters())
    for i in range(args.iterations):
        x0.d, x1.d, same.d = train.next()
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        if i % args.val_interval == 0:
            vx0.d, vx1.d, vsame.d = val.next()
            vloss.forward(clear_buffer=True)
    print("loss %.4f val %.4f" % (float(loss.d), float(vloss.d)))


if __name__ == "__main__":
    main()
