"""The example LeNet training loop without nnprofile, timing each step itself (for make bench).

    python benchmarks/plain_steps.py --iterations 30    prints the median step time in ms (steps 2 to 21)
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import numpy as np  # noqa: E402

import nnabla as nn  # noqa: E402
import nnabla.functions as F  # noqa: E402
import nnabla.solvers as S  # noqa: E402

from digits import load  # noqa: E402
from lenet_train import lenet  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    images, labels = load("training")
    rng = np.random.RandomState(0)
    x = nn.Variable((args.batch_size, 1, 28, 28))
    t = nn.Variable((args.batch_size, 1))
    loss = F.mean(F.softmax_cross_entropy(lenet(x), t))
    solver = S.Adam(alpha=1e-3)
    solver.set_parameters(nn.get_parameters())
    steps = []
    last = time.perf_counter()
    for i in range(args.iterations):  # the example's loop, step for step
        index = rng.randint(0, len(images), args.batch_size)
        x.d, t.d = images[index], labels[index]
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        now = time.perf_counter()
        steps.append(now - last)
        last = now
    kept = sorted(steps[1:21])
    print("%.6f" % (kept[len(kept) // 2] * 1e3))


if __name__ == "__main__":
    main()
