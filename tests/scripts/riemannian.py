"""Poincare embeddings trained by a solver of the program's own: a Python subclass of NNabla's
``Solver`` whose ``update`` is Riemannian SGD written as NdArray arithmetic (the gradient rescaled by
the metric, the point projected back into the unit ball).

    python riemannian.py --iterations 12
"""
from _helpers import timed_steps
import time
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


class RiemannianSgd(S.Solver):
    """SGD on the Poincare ball."""

    def __init__(self, lr=0.01, eps=1e-5):
        self.lr, self.eps = lr, eps
        self.params = {}

    def set_parameters(self, params):
        self.params = dict(params)

    def get_parameters(self):
        return self.params

    def zero_grad(self):
        for p in self.params.values():
            p.grad.zero()

    def update(self):
        for p in self.params.values():
            sq = F.sum(p.data ** 2, axis=1, keepdims=True)
            p.data -= self.lr * ((1 - sq) ** 2 / 4) * p.grad
            norm = F.maximum_scalar(F.sum(p.data ** 2, axis=1, keepdims=True) ** 0.5, 1 - self.eps)
            p.data.copy_from(p.data / norm * (1 - self.eps))


def distance(u, v):
    sq = F.sum(F.squared_error(u, v), axis=1)
    nu = 1 - F.sum(u ** 2, axis=1)
    nv = 1 - F.sum(v ** 2, axis=1)
    return F.acosh(1 + 2 * sq / (nu * nv))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    parser.add_argument("--nodes", type=int, default=500)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    batch, negatives, dim = 64, 10, 10
    u_idx, v_idx = nn.Variable((batch,)), nn.Variable((batch, negatives + 1))
    u = PF.embed(u_idx, args.nodes, dim, initializer=nn.initializer.UniformInitializer((-1e-3, 1e-3)),
                 name="embedding")
    v = PF.embed(v_idx, args.nodes, dim, name="embedding")
    d = distance(F.broadcast(F.reshape(u, (batch, 1, dim)), (batch, negatives + 1, dim)), v)
    loss = F.mean(F.softmax_cross_entropy(-d, nn.Variable.from_numpy_array(np.zeros((batch, 1)))))
    solver = RiemannianSgd(lr=0.1)
    solver.set_parameters(nn.get_parameters())
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        u_idx.d = rng.randint(0, args.nodes, batch)
        v_idx.d = rng.randint(0, args.nodes, (batch, negatives + 1))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    print("loss %.4f" % float(loss.d))


if __name__ == "__main__":
    main()
