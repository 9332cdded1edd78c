"""A multi-scale GAN in SinGAN's manner: one stage per scale, each with new generator and
discriminator models and new solvers; in every iteration of a stage, three discriminator updates
then three generator updates.

    python multiscale_gan.py --scales 3 --iterations 8
"""
import argparse

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def generator(z, scale):
    with nn.parameter_scope("gen%d" % scale):
        h = F.leaky_relu(PF.convolution(z, 16, (3, 3), pad=(1, 1), name="conv1"))
        return F.tanh(PF.convolution(h, 3, (3, 3), pad=(1, 1), name="conv2"))


def discriminator(x, scale):
    with nn.parameter_scope("dis%d" % scale):
        h = F.leaky_relu(PF.convolution(x, 16, (3, 3), pad=(1, 1), name="conv1"))
        return PF.convolution(h, 1, (3, 3), pad=(1, 1), name="conv2")


def train_scale(scale, size, iterations, real_image, d_steps=3, g_steps=3):
    z = nn.Variable((1, 3, size, size))
    real = nn.Variable.from_numpy_array(real_image)
    fake = generator(z, scale)
    fake_unlinked = fake.get_unlinked_variable(need_grad=False)
    loss_dis = F.mean(discriminator(fake_unlinked, scale)) - F.mean(discriminator(real, scale))
    loss_gen = -F.mean(discriminator(fake, scale)) + 10 * F.mean(F.squared_error(fake, real))
    with nn.parameter_scope("dis%d" % scale):
        solver_dis = S.Adam(5e-4, beta1=0.5)
        solver_dis.set_parameters(nn.get_parameters())
    with nn.parameter_scope("gen%d" % scale):
        solver_gen = S.Adam(5e-4, beta1=0.5)
        solver_gen.set_parameters(nn.get_parameters())
    for i in range(iterations):
        for _ in range(d_steps):
            z.d = np.random.randn(*z.shape)
            fake.forward(clear_no_need_grad=True)
            solver_dis.zero_grad()
            loss_dis.forward(clear_no_need_grad=True)
            loss_dis.backward(clear_buffer=True)
            solver_dis.update()
        for _ in range(g_steps):
            z.d = np.random.randn(*z.shape)
            solver_gen.zero_grad()
            loss_gen.forward(clear_no_need_grad=True)
            loss_gen.backward(clear_buffer=True)
            solver_gen.update()
    return float(loss_gen.d)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=8)
    args = parser.parse_args()
    image = np.random.RandomState(0).rand(1, 3, 32, 32).astype(np.float32) * 2 - 1
    for scale in range(args.scales):
        size = 8 * 2 ** scale
        step = 32 // size
        loss = train_scale(scale, size, args.iterations, image[:, :, ::step, ::step])
        print("scale %d: generator loss %.4f" % (scale, loss))


if __name__ == "__main__":
    main()
