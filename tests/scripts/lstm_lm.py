"""An LSTM language model as NNabla's examples train one on PTB, made small and run on a corpus this script
makes (a seeded Markov chain over a small vocabulary): an embedding, an LSTM unrolled over the time steps
(its gates one PF.affine, shared by every step), a softmax cross entropy per step. SGD with gradient
clipping by the global norm written by hand with functions on NdArrays (F.pow_scalar and F.sum on each
p.grad, the squares summed by NdArray operators, p.grad scaled in place), a validation over the whole
validation set after each epoch (a forward-only graph over the same parameters), and after the loop the
test set, its perplexity printed. Data from ``data_iterator_simple``, losses to a ``MonitorSeries``.

    python lstm_lm.py --epochs 3 --iters-per-epoch 8
"""
import argparse
from _helpers import scratch
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.monitor import Monitor, MonitorSeries
from nnabla.utils.data_iterator import data_iterator_simple


def corpus(n, vocab, seed):
    """Tokens of a Markov chain whose next word depends on the last one (a language to learn)."""
    rng = np.random.RandomState(seed)
    successors = rng.randint(0, vocab, size=(vocab, 4))
    out = np.empty(n, dtype=np.int32)
    out[0] = 0
    for i in range(1, n):
        out[i] = successors[out[i - 1], rng.randint(0, 4)] if rng.rand() < 0.9 else rng.randint(0, vocab)
    return out


def sequences(tokens, steps, batch_size, name):
    n = (len(tokens) - 1) // steps
    xs = tokens[:n * steps].reshape(n, steps)
    ts = tokens[1:n * steps + 1].reshape(n, steps)

    def load(i):
        return xs[i], ts[i]
    return data_iterator_simple(load, n, batch_size, shuffle=False, with_memory_cache=False,
                                with_file_cache=False, rng=None) if n else None


def lstm_cell(x, h, c, units):
    with nn.parameter_scope("lstm"):
        gates = PF.affine(F.concatenate(x, h, axis=1), 4 * units)
    i, f, o, g = F.split(F.reshape(gates, (gates.shape[0], 4, units)), axis=1)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    return F.sigmoid(o) * F.tanh(c), c


def network(x, t, vocab, embed, units):
    """The mean cross entropy per token of a batch of sequences ``x`` (batch, steps) predicting ``t``."""
    batch, steps = x.shape
    e = PF.embed(x, vocab, embed, name="embed")
    h = F.constant(0, (batch, units))
    c = F.constant(0, (batch, units))
    losses = []
    for k, xk in enumerate(F.split(e, axis=1)):
        h, c = lstm_cell(xk, h, c, units)
        y = PF.affine(h, vocab, name="output")
        tk = F.reshape(F.slice(t, (0, k), (batch, k + 1)), (batch, 1))
        losses.append(F.softmax_cross_entropy(y, tk))
    return F.mean(F.concatenate(*losses, axis=1))


def clip_by_global_norm(params, max_norm):
    """Gradient clipping as programs write it by hand: the global norm from functions on NdArrays."""
    total = None
    for p in params.values():
        squared = F.sum(F.pow_scalar(p.grad, 2.0))
        total = squared if total is None else total + squared
    norm = float(np.sqrt(total.data))
    if norm > max_norm:
        for p in params.values():
            p.grad *= max_norm / norm
    return norm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--iters-per-epoch", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8, help="time steps a sequence is unrolled over")
    parser.add_argument("--vocab", type=int, default=200)
    parser.add_argument("--embed", type=int, default=32)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--valid-batches", type=int, default=3)
    parser.add_argument("--test-batches", type=int, default=4)
    parser.add_argument("--max-norm", type=float, default=0.25)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()

    b, s = args.batch_size, args.steps
    train = sequences(corpus(b * s * args.iters_per_epoch + 1, args.vocab, 0), s, b, "train")
    valid = sequences(corpus(b * s * args.valid_batches + 1, args.vocab, 1), s, b, "valid")
    test = sequences(corpus(b * s * args.test_batches + 1, args.vocab, 2), s, b, "test")

    x, t = nn.Variable((b, s)), nn.Variable((b, s))
    loss = network(x, t, args.vocab, args.embed, args.units)
    vx, vt = nn.Variable((b, s)), nn.Variable((b, s))
    vloss = network(vx, vt, args.vocab, args.embed, args.units)
    tx, tt = nn.Variable((b, s)), nn.Variable((b, s))
    tloss = network(tx, tt, args.vocab, args.embed, args.units)

    params = nn.get_parameters()
    solver = S.Sgd(lr=1.0)
    solver.set_parameters(params)
    monitor = Monitor(scratch(prefix="lstm_lm_"))
    monitor_loss = MonitorSeries("Training loss", monitor, interval=4)
    monitor_ppl = MonitorSeries("Validation perplexity", monitor, interval=1)
    ends = []
    for epoch in range(args.epochs):
        for i in range(args.iters_per_epoch):
            x.d, t.d = train.next()
            loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            clip_by_global_norm(params, args.max_norm)
            solver.update()
            monitor_loss.add(epoch * args.iters_per_epoch + i, float(loss.d))
            ends.append(time.perf_counter())
        # The validation set, after each epoch.
        total = 0.0
        for j in range(args.valid_batches):
            vx.d, vt.d = valid.next()
            vloss.forward(clear_buffer=True)
            total += float(vloss.d)
        monitor_ppl.add(epoch, float(np.exp(total / args.valid_batches)))
    # The test set, after the loop.
    total = 0.0
    for j in range(args.test_batches):
        tx.d, tt.d = test.next()
        tloss.forward(clear_buffer=True)
        total += float(tloss.d)
    print("test perplexity %.2f" % np.exp(total / args.test_batches))
    if args.time_steps:
        steps = sorted(b2 - a2 for a2, b2 in zip(ends[1:], ends[2:]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
