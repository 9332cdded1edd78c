"""Word embeddings by skip-gram with negative sampling, as NNabla's word-embedding example trains them, made
small and run on a corpus this script makes (a seeded Zipf-like stream of word ids): the centre word's
embedding and the embeddings of its context word and of a few sampled words are multiplied element-wise
(``Mul2``, the heaviest layer) and summed, a sigmoid cross entropy against 1 for the context and 0 for the
samples; Adam. After the loop, the nearest words of a few query words: a similarity graph over the
normalised embedding table, run once.

    python word2vec.py --iterations 20
"""
import argparse
import time

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.utils.data_iterator import data_iterator_simple


def pairs(n, vocab, window, seed):
    """(centre, context) pairs from a stream where nearby words are related."""
    rng = np.random.RandomState(seed)
    stream = np.minimum((rng.zipf(1.3, size=n + window) - 1), vocab - 1).astype(np.int32)
    offsets = rng.randint(1, window + 1, size=n)
    return stream[:n], stream[np.arange(n) + offsets]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=500)
    parser.add_argument("--embed", type=int, default=128)
    parser.add_argument("--negatives", type=int, default=5)
    parser.add_argument("--time-steps", action="store_true", help="print the median step, for make bench")
    args = parser.parse_args()

    b, k, v, e = args.batch_size, args.negatives, args.vocab, args.embed
    centres, contexts = pairs(b * args.iterations, v, 3, 0)
    rng = np.random.RandomState(1)

    def load(i):
        words = np.concatenate([[contexts[i]], rng.randint(0, v, size=k)]).astype(np.int32)
        labels = np.concatenate([[1.0], np.zeros(k)]).astype(np.float32)
        return np.full(k + 1, centres[i], dtype=np.int32), words, labels
    data = data_iterator_simple(load, len(centres), b, shuffle=True, with_memory_cache=False, rng=rng)

    x = nn.Variable((b, k + 1))       # the centre word, once per compared word
    y = nn.Variable((b, k + 1))       # the context word, then the sampled ones
    t = nn.Variable((b, k + 1))
    with nn.parameter_scope("word2vec"):
        ex = PF.embed(x, v, e, name="embed")
        ey = PF.embed(y, v, e, name="context")
    score = F.sum(ex * ey, axis=2)
    loss = F.mean(F.sigmoid_cross_entropy(score, t))

    solver = S.Adam(1e-3)
    solver.set_parameters(nn.get_parameters())
    ends = []
    for i in range(args.iterations):
        x.d, y.d, t.d = data.next()
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        ends.append(time.perf_counter())

    # The nearest words of a few queries, after the loop: cosine similarity against the whole table.
    table = nn.get_parameters()["word2vec/embed/embed/W"].d
    table = table / np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-8)
    queries = nn.Variable.from_numpy_array(table[:4])
    similarity = F.affine(queries, nn.Variable.from_numpy_array(table.T.copy()))
    similarity.forward()
    nearest = np.argsort(-similarity.d, axis=1)[:, 1:4]
    print("loss %.4f, nearest words of 0..3: %s" % (float(loss.d), nearest.tolist()))
    if args.time_steps:
        steps = sorted(b2 - a2 for a2, b2 in zip(ends[1:], ends[2:]))
        print("median step %.6f ms" % (steps[len(steps) // 2] * 1e3))


if __name__ == "__main__":
    main()
