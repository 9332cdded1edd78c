"""A learned prior over a frozen encoder's codes, in dynamic mode (the second stage of a VQ-VAE or a latent
diffusion, made small): a pretrained encoder, whose parameters no solver holds, encodes each batch; its codes,
unlinked from it, are what the prior is trained on; only the prior's parameters are updated. Every few iterations
the prior's loss on validation codes is evaluated, forward only.

    python frozen_prior.py [--iterations N] [--val-interval K]
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple

from _helpers import timed_steps

CODES = 8


def encoder(x):
    with nn.parameter_scope("encoder"):
        h = F.relu(PF.affine(x, 32, name="fc1"))
        return F.tanh(PF.affine(h, CODES, name="fc2"))


def prior_loss(codes):
    with nn.parameter_scope("prior"):
        h = F.relu(PF.affine(codes, 32, name="fc1"))
        mu = PF.affine(h, CODES, name="mu")
    return F.mean(F.squared_error(mu, codes))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--val-interval", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(2)
    images = rng.rand(160, 48).astype(np.float32)
    data = data_iterator_simple(lambda i: (images[i],), 128, args.batch_size, shuffle=True,
                                with_memory_cache=False, with_file_cache=False, rng=rng)
    vdata = data_iterator_simple(lambda i: (images[128 + i],), 32, args.batch_size, shuffle=False,
                                 with_memory_cache=False, with_file_cache=False)
    nn.set_auto_forward(True)
    encoder(nn.Variable((1, 48)))  # the pretrained encoder's parameters (made, as loading them would)
    solver = S.Adam(1e-3)
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        x = nn.Variable.from_numpy_array(data.next()[0])
        codes = encoder(x).get_unlinked_variable(need_grad=False)
        loss = prior_loss(codes)
        if i == 0:
            with nn.parameter_scope("prior"):
                solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.backward()
        solver.update()
        if i % args.val_interval == 0:
            vcodes = encoder(nn.Variable.from_numpy_array(vdata.next()[0]))
            vloss = prior_loss(vcodes)
            print("iteration %d: loss %.4f validation %.4f" % (i, float(loss.d), float(vloss.d)))


if __name__ == "__main__":
    main()
