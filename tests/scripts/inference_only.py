"""An inference loop, as an evaluation script writes it: no solver, no data iterator, no step mark; its steps show
only in its passes. ``--epochs E --n N``: a function evaluating N batches (a while loop) called E times, then a
final line after the loop.

    python inference_only.py --epochs 3 --n 50
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--n", type=int, default=120)
    args = parser.parse_args()
    x = nn.Variable((8, 1, 12, 12))
    y = PF.affine(F.relu(PF.convolution(x, 4, (3, 3), name="c1")), 10, name="fc")

    def evaluate(n):
        seen, i = 0, 0
        while i < n:
            x.d = np.random.randn(*x.shape)
            y.forward(clear_buffer=True)
            if i % 7 == 0:
                seen += 1
            i += 1
        return seen

    batches = 0
    for _ in range(args.epochs):
        evaluate(args.n)
        batches += args.n
    print("evaluated", batches)


if __name__ == "__main__":
    main()
