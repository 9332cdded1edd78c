"""A variational autoencoder trained in dynamic mode, as the NNabla users who write eager code do: the whole program
runs under ``nn.set_auto_forward(True)``, the graph is built anew every iteration by the same function, a
validation every few iterations runs the same function on a validation batch, forward only, and a sampler draws
images from the decoder alone.

    python dynamic_vae.py [--iterations N] [--val-interval K]
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple

from nnabla.monitor import Monitor, MonitorSeries

from _helpers import scratch, timed_steps

LATENT = 8


def encode(x):
    with nn.parameter_scope("enc"):
        h = F.relu(PF.affine(x, 64, name="fc1"))
        return PF.affine(h, LATENT, name="mu"), PF.affine(h, LATENT, name="logvar")


def decode(z):
    with nn.parameter_scope("dec"):
        h = F.relu(PF.affine(z, 64, name="fc1"))
        return PF.affine(h, 196, name="out")


def vae_loss(x):
    mu, logvar = encode(x)
    z = mu + F.exp(0.5 * logvar) * F.randn(shape=mu.shape)
    logits = decode(z)
    reconstruction = F.sum(F.sigmoid_cross_entropy(logits, x)) / x.shape[0]
    kl = -0.5 * F.sum(1.0 + logvar - mu ** 2 - F.exp(logvar)) / x.shape[0]
    return reconstruction + kl


def images(rng, n):
    return (rng.rand(n, 196) > 0.7).astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--val-interval", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    train, val = images(rng, 256), images(rng, 64)
    data = data_iterator_simple(lambda i: (train[i],), len(train), args.batch_size, shuffle=True,
                                with_memory_cache=False, with_file_cache=False, rng=rng)
    vdata = data_iterator_simple(lambda i: (val[i],), len(val), args.batch_size, shuffle=False,
                                 with_memory_cache=False, with_file_cache=False)
    monitor = Monitor(scratch())
    train_loss, val_loss = MonitorSeries("train loss", monitor, interval=10), MonitorSeries("val loss", monitor, interval=1)
    nn.set_auto_forward(True)
    solver = S.Adam(1e-3)
    ends = timed_steps(args)
    for i in range(args.iterations):
        ends.append(time.perf_counter())
        x = nn.Variable.from_numpy_array(data.next()[0])
        loss = vae_loss(x)
        if i == 0:
            solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        train_loss.add(i, float(loss.d))
        if i % args.val_interval == 0:
            vx = nn.Variable.from_numpy_array(vdata.next()[0])
            vloss = vae_loss(vx)
            val_loss.add(i, float(vloss.d))
    sample = decode(F.randn(shape=(4, LATENT)))  # images drawn from the decoder alone, after training
    print("loss %.4f sample %.4f" % (float(loss.d), float(F.sigmoid(sample).d.mean())))


if __name__ == "__main__":
    main()
