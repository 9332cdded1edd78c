"""A validation before the first step and after the loop, each reading its own iterator (as nnabla-examples'
classification and distillation do), then counting its own passes: the test compares nnprofile's count with it.

Its loop may end in the steps after the kept ones that run without the function hooks: the read after the loop
ends the last step, and the validation's passes after it are seen from the first."""

import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=25)
    parser.add_argument("--val-iter", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x, t, vx = nn.Variable((8, 4)), nn.Variable((8, 1)), nn.Variable((8, 4))
    loss = F.mean(F.squared_error(PF.affine(x, 1, name="fc"), t))
    vpred = PF.affine(vx, 1, name="fc")
    solver = S.Adam()
    solver.set_parameters(nn.get_parameters())
    rows = rng.rand(64, 4).astype(np.float32)
    vdata = data_iterator_simple(lambda i: (rows[i],), 64, 8, shuffle=False)
    passes = 0

    def validate():
        nonlocal passes
        for _ in range(args.val_iter):
            vx.d = vdata.next()[0]
            vpred.forward(clear_buffer=True)
            passes += 1

    for i in range(args.iterations):
        if i == 0:
            validate()
        x.d, t.d = rows[:8], rows[:8, :1]
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
    validate()
    print("validation passes %d" % passes)


if __name__ == "__main__":
    main()
