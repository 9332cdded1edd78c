"""Virtual adversarial training as NNabla's example (mnist-collection/vat.py) writes it, made small: one
solver updated twice per iteration (on a labelled loss, then on an unlabelled one), the prediction on
the unlabelled batch run forward on its own and read by the unlabelled losses through an unlinked
variable, a power-iteration graph run forward and backward between (no solver update), validation
every few iterations and once after the loop, data from ``data_iterator_simple``.

    python vat.py --iterations 8 --val-interval 4
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solver as S
from nnabla.utils.data_iterator import data_iterator_simple


def mlp_net(x, n_h, n_y, test=False):
    h = x
    with nn.parameter_scope("fc1"):
        h = F.relu(PF.batch_normalization(PF.affine(h, n_h), batch_stat=not test), inplace=True)
    with nn.parameter_scope("fc2"):
        h = F.relu(PF.batch_normalization(PF.affine(h, n_h), batch_stat=not test), inplace=True)
    with nn.parameter_scope("fc3"):
        return PF.affine(h, n_y)


def distance(y0, y1):
    return F.kl_multinomial(F.softmax(y0), F.softmax(y1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--val-interval", type=int, default=4)
    parser.add_argument("--val-iter", type=int, default=2)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--time-steps", action="store_true",
                        help="print the median step (update to update of the unlabelled loss), for make bench")
    args = parser.parse_args()
    rng = np.random.RandomState(706)
    images = rng.rand(512, 1, 8, 8).astype(np.float32)
    labels = rng.randint(0, 10, size=(512, 1)).astype(np.int32)

    def feed(i):
        return images[i], labels[i]
    di_l = data_iterator_simple(feed, 64, 16, shuffle=True, rng=rng, with_file_cache=False)
    di_u = data_iterator_simple(feed, 512, 32, shuffle=True, rng=rng, with_file_cache=False)
    di_v = data_iterator_simple(feed, 128, 16, shuffle=False, with_file_cache=False)

    def forward(x, test=False):
        return mlp_net(x, args.units, 10, test)

    xl = nn.Variable((16, 1, 8, 8), need_grad=False)
    yl = forward(xl)
    tl = nn.Variable((16, 1), need_grad=False)
    loss_l = F.mean(F.softmax_cross_entropy(yl, tl))

    xu = nn.Variable((32, 1, 8, 8), need_grad=False)
    yu = forward(xu)
    y1 = yu.get_unlinked_variable()
    y1.need_grad = False
    noise = nn.Variable((32, 1, 8, 8), need_grad=True)
    r = noise / (F.sum(noise ** 2, [1, 2, 3], keepdims=True)) ** 0.5
    r.persistent = True
    y2 = forward(xu + 10.0 * r)
    y3 = forward(xu + 1.5 * r)
    loss_k = F.mean(distance(y1, y2))
    loss_u = F.mean(distance(y1, y3))

    xv = nn.Variable((16, 1, 8, 8), need_grad=False)
    hv = forward(xv, test=True)
    tv = nn.Variable((16, 1), need_grad=False)
    err = F.mean(F.top_n_error(hv, tv, n=1))

    solver = S.Adam(2e-3)
    solver.set_parameters(nn.get_parameters())

    def validate():
        ve = 0.0
        for _ in range(args.val_iter):
            xv.d, tv.d = di_v.next()
            err.forward(clear_buffer=True)
            ve += float(err.d)
        return ve / args.val_iter

    ends = []
    for i in range(args.iterations):
        if i % args.val_interval == 0 and i != 0:
            validate()
        xl.d, tl.d = di_l.next()
        solver.zero_grad()
        loss_l.forward(clear_no_need_grad=True)
        loss_l.backward(clear_buffer=True)
        solver.weight_decay(1e-5)
        solver.update()
        xu.d, _ = di_u.next()
        yu.forward(clear_buffer=True)
        noise.d = rng.normal(size=xu.shape).astype(np.float32)
        r.grad.zero()
        loss_k.forward(clear_no_need_grad=True)
        loss_k.backward(clear_buffer=True)
        noise.data.copy_from(r.grad)
        solver.zero_grad()
        loss_u.forward(clear_no_need_grad=True)
        loss_u.backward(clear_buffer=True)
        solver.weight_decay(1e-5)
        solver.update()
        ends.append(time.perf_counter())
    print("validation error %.3f" % validate())
    if args.time_steps:
        steps = sorted(b - a for a, b in zip(ends[1:], ends[2:]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
