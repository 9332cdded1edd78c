"""A training that saves its solver's state every second iteration, and loads it once: a checkpoint."""

import argparse
import os

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

p = argparse.ArgumentParser()
p.add_argument("--iterations", type=int, default=30)
args = p.parse_args()
x = nn.Variable((32, 64))
t = nn.Variable((32, 1))
y = PF.affine(F.relu(PF.affine(x, 256, name="fc1")), 10, name="fc2")
loss = F.mean(F.softmax_cross_entropy(y, t))
solver = S.Adam()
solver.set_parameters(nn.get_parameters())
rng = np.random.RandomState(0)
states = os.path.join(os.getcwd(), "states.h5")
for i in range(args.iterations):
    x.d = rng.rand(32, 64)
    t.d = rng.randint(0, 10, (32, 1))
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    if i % 2 == 1:
        solver.save_states(states)
    if i == 8:
        solver.load_states(states)
print("loss %.3f" % float(loss.d))
