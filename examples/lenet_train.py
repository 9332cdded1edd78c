"""Train LeNet on the bundled digits with a static graph (nnabla.parametric_functions).

python examples/lenet_train.py --iterations 60
nnprofile run examples/lenet_train.py --iterations 60     # the same, profiled
"""

import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

from digits import load


def lenet(x):
    with nn.parameter_scope("conv1"):
        h = PF.convolution(x, 16, (5, 5))
    h = F.max_pooling(F.relu(h), (2, 2))
    with nn.parameter_scope("conv2"):
        h = PF.convolution(h, 30, (3, 3))
    h = F.tanh(F.max_pooling(h, (2, 2)))
    with nn.parameter_scope("fc1"):
        h = F.relu(PF.affine(h, 150))
    with nn.parameter_scope("fc2"):
        return PF.affine(h, 10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    images, labels = load("training")
    rng = np.random.RandomState(0)
    x = nn.Variable((args.batch_size, 1, 28, 28))
    t = nn.Variable((args.batch_size, 1))
    y = lenet(x)
    loss = F.mean(F.softmax_cross_entropy(y, t))
    solver = S.Adam(alpha=1e-3)
    solver.set_parameters(nn.get_parameters())
    for i in range(args.iterations):
        index = rng.randint(0, len(images), args.batch_size)
        x.d, t.d = images[index], labels[index]
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        if i % 20 == 0 or i == args.iterations - 1:
            print("iteration %d: loss %.3f" % (i, float(loss.d)))


if __name__ == "__main__":
    main()
