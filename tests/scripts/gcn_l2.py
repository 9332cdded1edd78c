"""A graph convolutional network as its users write one: two layers over a normalised adjacency
matrix, and an L2 regulariser summed over the layers' weights into the loss
(``F.pow_scalar(W, 2)`` of each weight), trained by Adam on the whole graph each step.

    python gcn_l2.py --iterations 12
"""
from _helpers import timed_steps
import time
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def gcn_layer(a, h, units, i, activation=True):
    with nn.parameter_scope("gcn_layer_%d" % i):
        h = PF.affine(h, units, with_bias=False)
    h = F.batch_matmul(F.reshape(a, (1,) + a.shape), F.reshape(h, (1,) + h.shape))
    h = F.reshape(h, h.shape[1:])
    return F.relu(h) if activation else h


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    n, d, k = args.nodes, 64, 7
    adj = (rng.rand(n, n) < 0.05).astype(np.float32)
    adj = np.maximum(adj, adj.T) + np.eye(n, dtype=np.float32)
    deg = adj.sum(1)
    a = nn.Variable.from_numpy_array(adj / np.sqrt(np.outer(deg, deg)))
    x = nn.Variable.from_numpy_array(rng.randn(n, d).astype(np.float32))
    labels = nn.Variable.from_numpy_array(rng.randint(0, k, (n, 1)))
    h = gcn_layer(a, x, 32, 0)
    y = gcn_layer(a, h, k, 1, activation=False)
    loss = F.mean(F.softmax_cross_entropy(y, labels))
    l2 = 0
    for name, w in nn.get_parameters().items():
        l2 = l2 + F.sum(F.pow_scalar(w, 2))
    loss = loss + args.weight_decay * l2
    solver = S.Adam(0.01)
    solver.set_parameters(nn.get_parameters())
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    print("loss %.4f" % float(loss.d))


if __name__ == "__main__":
    main()
