"""A training loop that catches Ctrl-C itself, as many do to save their work before they exit: it prints where it
was stopped and exits with a status of its own (3)."""
import sys

import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

x = nn.Variable((16, 8))
t = nn.Variable((16, 1))
h = F.tanh(PF.affine(x, 16, name="fc1"))
loss = F.mean(F.softmax_cross_entropy(PF.affine(h, 4, name="fc2"), t))
solver = S.Sgd(0.1)
solver.set_parameters(nn.get_parameters())
rng = np.random.RandomState(0)
i = 0
try:
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 200):
        x.d, t.d = rng.rand(16, 8), rng.randint(0, 4, (16, 1))
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
except KeyboardInterrupt:
    print("stopped by Ctrl-C at iteration %d: saved" % i, flush=True)
    sys.exit(3)
print("done")
