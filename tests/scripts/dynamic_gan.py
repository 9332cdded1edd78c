"""A GAN trained in dynamic mode, its graphs built anew each iteration inside ``with nn.auto_forward():``, over
several lines of the loop, as NNabla's users write it: the generator's loss reaches back through the discriminator
into the generator; the discriminator reads the generated images through an unlinked variable (no backward into
the generator), and real images from a DataIterator. Every few iterations a frozen copy of the generator's output
is scored by the discriminator, forward only (a check of the training, read by nothing trained).

    python dynamic_gan.py [--iterations N] [--check-interval K]
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

LATENT, PIXELS = 16, 64


def generator(z):
    with nn.parameter_scope("gen"):
        h = F.relu(PF.affine(z, 32, name="fc1"))
        return F.tanh(PF.affine(h, PIXELS, name="fc2"))


def discriminator(x):
    with nn.parameter_scope("dis"):
        h = F.leaky_relu(PF.affine(x, 32, name="fc1"), 0.2)
        return PF.affine(h, 1, name="fc2")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--check-interval", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(1)
    real_images = np.tanh(rng.randn(128, PIXELS)).astype(np.float32)
    data = data_iterator_simple(lambda i: (real_images[i],), len(real_images), args.batch_size, shuffle=True,
                                with_memory_cache=False, with_file_cache=False, rng=rng)
    solver_gen, solver_dis = S.Adam(2e-4, beta1=0.5), S.Adam(2e-4, beta1=0.5)
    ends = timed_steps(args)
    with nn.auto_forward():
        for i in range(args.iterations):
            ends.append(time.perf_counter())
            z = F.randn(shape=(args.batch_size, LATENT))
            fake = generator(z)
            pred_fake = discriminator(fake)
            loss_gen = F.mean(F.sigmoid_cross_entropy(pred_fake, F.constant(1, pred_fake.shape)))
            if i == 0:
                with nn.parameter_scope("gen"):
                    solver_gen.set_parameters(nn.get_parameters())
                with nn.parameter_scope("dis"):
                    solver_dis.set_parameters(nn.get_parameters())
            solver_gen.zero_grad()
            loss_gen.backward(clear_buffer=True)
            solver_gen.update()
            real = nn.Variable.from_numpy_array(data.next()[0])
            pred_real = discriminator(real)
            pred_fake_d = discriminator(fake.get_unlinked_variable(need_grad=False))
            loss_dis = F.mean(F.sigmoid_cross_entropy(pred_real, F.constant(1, pred_real.shape)))
            loss_dis += F.mean(F.sigmoid_cross_entropy(pred_fake_d, F.constant(0, pred_fake_d.shape)))
            solver_dis.zero_grad()
            loss_dis.backward(clear_buffer=True)
            solver_dis.update()
            if i % args.check_interval == 0:
                score = F.mean(F.sigmoid(discriminator(generator(F.randn(shape=(64, LATENT))))))
                print("iteration %d: generator %.4f discriminator %.4f score %.4f"
                      % (i, float(loss_gen.d), float(loss_dis.d), float(score.d)))


if __name__ == "__main__":
    main()
