"""A training that keeps many objects alive and collects its garbage every step, as a program that calls
gc.collect() in its loop (or allocates enough to set off full collections) does."""

import argparse
import gc

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

p = argparse.ArgumentParser()
p.add_argument("--iterations", type=int, default=30)
args = p.parse_args()
kept = [{"index": i, "values": [i, i + 1]} for i in range(300_000)]  # a cache the program holds
x = nn.Variable((32, 64))
t = nn.Variable((32, 1))
y = PF.affine(F.relu(PF.affine(x, 128, name="fc1")), 10, name="fc2")
loss = F.mean(F.softmax_cross_entropy(y, t))
solver = S.Sgd()
solver.set_parameters(nn.get_parameters())
rng = np.random.RandomState(0)
for i in range(args.iterations):
    x.d = rng.rand(32, 64)
    t.d = rng.randint(0, 10, (32, 1))
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    gc.collect()
print("loss %.3f (%d kept)" % (float(loss.d), len(kept)))
