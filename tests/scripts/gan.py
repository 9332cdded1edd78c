"""A small DCGAN as NNabla's example writes one: a generator and a discriminator in their own
parameter scopes, the discriminator applied to a fake (unlinked) and a real batch, two solvers made
through ``nnabla.solver``, both updated every iteration, monitors, and the generator saved at the end.

    python gan.py --iterations 10
"""
import argparse
from _helpers import scratch
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solver as S
from nnabla.monitor import Monitor, MonitorSeries


def generator(z, width=8, test=False):
    with nn.parameter_scope("gen"):
        with nn.parameter_scope("fc"):
            h = F.relu(PF.affine(z, width * 4 * 4))
        h = F.reshape(h, (z.shape[0], width, 4, 4))
        with nn.parameter_scope("deconv"):
            h = PF.deconvolution(h, 1, (4, 4), stride=(2, 2), pad=(1, 1))
        return F.tanh(h)


def discriminator(x, width=8, test=False):
    with nn.parameter_scope("dis"):
        with nn.parameter_scope("conv1"):
            h = F.leaky_relu(PF.convolution(x, width, (3, 3), pad=(1, 1), stride=(2, 2)), 0.2)
        with nn.parameter_scope("fc"):
            return PF.affine(h, 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--width", type=int, default=8, help="channels of the layers")
    parser.add_argument("--time-steps", action="store_true",
                        help="print the median step (steps 2 to 21, update to update), for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    b = args.batch_size

    z = nn.Variable((b, 16))
    fake = generator(z, args.width)
    fake.persistent = True
    pred_fake = discriminator(fake, args.width)
    loss_gen = F.mean(F.sigmoid_cross_entropy(pred_fake, F.constant(1, pred_fake.shape)))
    fake_dis = fake.get_unlinked_variable(need_grad=True)
    pred_fake_dis = discriminator(fake_dis, args.width)
    loss_dis = F.mean(F.sigmoid_cross_entropy(pred_fake_dis, F.constant(0, pred_fake_dis.shape)))
    x = nn.Variable((b, 1, 8, 8))
    pred_real = discriminator(x, args.width)
    loss_dis += F.mean(F.sigmoid_cross_entropy(pred_real, F.constant(1, pred_real.shape)))

    solver_gen = S.Adam(2e-4, beta1=0.5)
    solver_dis = S.Adam(2e-4, beta1=0.5)
    with nn.parameter_scope("gen"):
        solver_gen.set_parameters(nn.get_parameters())
    with nn.parameter_scope("dis"):
        solver_dis.set_parameters(nn.get_parameters())
    monitor = Monitor(scratch(prefix="gan_monitor-"))
    monitor_loss_gen = MonitorSeries("Generator loss", monitor, interval=5, verbose=False)
    monitor_loss_dis = MonitorSeries("Discriminator loss", monitor, interval=5, verbose=False)
    ends = []
    for i in range(args.iterations):
        x.d = rng.rand(*x.shape) * 2 - 1
        z.d = rng.randn(*z.shape)
        # Generator update.
        solver_gen.zero_grad()
        loss_gen.forward(clear_no_need_grad=True)
        loss_gen.backward(clear_buffer=True)
        solver_gen.weight_decay(1e-4)
        solver_gen.update()
        monitor_loss_gen.add(i, loss_gen.d.copy())
        # Discriminator update.
        solver_dis.zero_grad()
        loss_dis.forward(clear_no_need_grad=True)
        loss_dis.backward(clear_buffer=True)
        solver_dis.weight_decay(1e-4)
        solver_dis.update()
        ends.append(time.perf_counter())
        monitor_loss_dis.add(i, loss_dis.d.copy())
    print("generator loss %.3f, discriminator loss %.3f" % (float(loss_gen.d), float(loss_dis.d)))
    if args.time_steps:
        steps = sorted(b - a for a, b in zip(ends[:21], ends[1:22]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
