"""Train LeNet on the bundled digits in dynamic mode (nn.auto_forward): the graph is built as it runs.

nnprofile run examples/lenet_dynamic.py --iterations 30
"""

import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.solvers as S

from digits import load
from lenet_train import lenet


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    images, labels = load("training")
    rng = np.random.RandomState(0)
    solver = S.Adam(alpha=1e-3)
    with nn.auto_forward():
        for i in range(args.iterations):
            index = rng.randint(0, len(images), args.batch_size)
            x = nn.Variable.from_numpy_array(images[index])
            t = nn.Variable.from_numpy_array(labels[index])
            loss = F.mean(F.softmax_cross_entropy(lenet(x), t))
            if i == 0:
                solver.set_parameters(nn.get_parameters())
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            solver.update()
            if i % 10 == 0 or i == args.iterations - 1:
                print("iteration %d: loss %.3f" % (i, float(loss.d)))


if __name__ == "__main__":
    main()
