"""A static graph trained, and an evaluation built in dynamic mode every few iterations (``with
nn.auto_forward():`` around a function that builds the network anew on a validation batch), as programs mixing
both modes do.

    python static_train_dynamic_eval.py [--iterations N] [--val-interval K]
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

from _helpers import timed_steps


def net(x):
    with nn.parameter_scope("mlp"):
        h = F.relu(PF.affine(x, 32, name="fc1"))
        return PF.affine(h, 4, name="fc2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--val-interval", type=int, default=3)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(3)
    x, t = nn.Variable((16, 12)), nn.Variable((16, 1))
    loss = F.mean(F.softmax_cross_entropy(net(x), t))
    solver = S.Momentum(0.05)
    solver.set_parameters(nn.get_parameters())
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        x.d, t.d = rng.randn(16, 12), rng.randint(0, 4, (16, 1))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        if i % args.val_interval == 0:
            with nn.auto_forward():
                vx = nn.Variable.from_numpy_array(rng.randn(16, 12).astype(np.float32))
                verr = F.mean(F.top_n_error(net(vx), nn.Variable.from_numpy_array(rng.randint(0, 4, (16, 1)))))
            print("iteration %d: loss %.4f error %.4f" % (i, float(loss.d), float(verr.d)))


if __name__ == "__main__":
    main()
