"""Inference only: LeNet (untrained) on the validation digits, batch after batch.

With no solver there is no update to end a step; the script marks its steps with
nnprofile.step() when nnprofile is there (it runs the same without it).

    nnprofile run examples/lenet_infer.py --batches 25
"""

import argparse

import nnabla as nn
import nnabla.functions as F

from digits import load
from lenet_train import lenet

try:
    from nnprofile import step
except ImportError:  # profiling is optional

    def step():
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=100)
    args = parser.parse_args()
    images, labels = load("validation")
    x = nn.Variable((args.batch_size, 1, 28, 28))
    y = F.softmax(lenet(x))
    correct = seen = 0
    for b in range(args.batches):
        start = (b * args.batch_size) % (len(images) - args.batch_size)
        x.d = images[start : start + args.batch_size]
        y.forward(clear_buffer=True)
        correct += int((y.d.argmax(axis=1) == labels[start : start + args.batch_size, 0]).sum())
        seen += args.batch_size
        step()
    print("accuracy of the untrained network: %.3f" % (correct / seen))


if __name__ == "__main__":
    main()
