"""Model-agnostic meta-learning as NNabla's meta-learning examples write it: each iteration samples a
batch of tasks; for each task a new graph is built, the inner loss's gradients taken with
``nn.grad``, the fast weights made from them, and the query loss built on the fast weights; the tasks'
query losses are joined with ``F.sink`` and run forward and backward, which backpropagates through
the gradients (BatchNormalization's double backward builds functions inside a backward); one
meta-update a step. A validation every few iterations adapts to a new task and evaluates it.

    python maml.py --iterations 12
"""
from _helpers import timed_steps
import time
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def net(x, params=None, test=False):
    """A small regressor; with ``params`` (fast weights) the layers read those instead."""
    h = x
    for i in range(2):
        name = "layer%d" % i
        if params is None:
            h = PF.affine(h, 40, name=name)
            with nn.parameter_scope(name):
                h = PF.batch_normalization(h, batch_stat=not test)
        else:
            h = F.affine(h, params[name + "/affine/W"], params[name + "/affine/b"])
            h = F.batch_normalization(h, params[name + "/bn/beta"], params[name + "/bn/gamma"],
                                      params[name + "/bn/mean"], params[name + "/bn/var"], batch_stat=not test)
        h = F.relu(h)
    if params is None:
        return PF.affine(h, 1, name="out")
    return F.affine(h, params["out/affine/W"], params["out/affine/b"])


def sample_task(rng, shots):
    amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
    xs = rng.uniform(-5, 5, (2 * shots, 1)).astype(np.float32)
    return xs, amplitude * np.sin(xs - phase)


def adapted_loss(rng, shots, inner_lr):
    """One task's graph: the inner loss, its gradients (nn.grad), the query loss on the fast weights."""
    xs, ys = sample_task(rng, shots)
    x_tr, y_tr = nn.Variable.from_numpy_array(xs[:shots]), nn.Variable.from_numpy_array(ys[:shots])
    x_te, y_te = nn.Variable.from_numpy_array(xs[shots:]), nn.Variable.from_numpy_array(ys[shots:])
    params = nn.get_parameters(grad_only=False)
    inner = F.mean(F.squared_error(net(x_tr, params), y_tr))
    trainable = {k: v for k, v in params.items() if v.need_grad}
    grads = nn.grad([inner], list(trainable.values()))
    fast = dict(params)
    for (k, p), g in zip(trainable.items(), grads):
        fast[k] = p - inner_lr * g
    return F.mean(F.squared_error(net(x_te, fast), y_te))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--shots", type=int, default=10)
    parser.add_argument("--val-interval", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    net(nn.Variable((args.shots, 1)))           # the meta-parameters
    solver = S.Adam(1e-3)
    solver.set_parameters({k: v for k, v in nn.get_parameters().items() if v.need_grad})
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        losses = [adapted_loss(rng, args.shots, 0.01) for _ in range(args.tasks)]
        meta = F.sink(*losses)
        solver.zero_grad()
        meta.forward()
        meta.backward()
        solver.update()
        if i % args.val_interval == 0:
            vloss = adapted_loss(rng, args.shots, 0.01)
            vloss.forward(clear_buffer=True)
    print("meta loss %.4f" % float(np.mean([float(l.d) for l in losses])))


if __name__ == "__main__":
    main()
