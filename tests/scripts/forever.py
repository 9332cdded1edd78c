"""Trains until it is interrupted (most of its time inside NNabla's passes): for Ctrl-C tests."""
import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

x = nn.Variable((32, 3, 32, 32))
x.d = np.random.RandomState(0).rand(*x.shape)
with nn.parameter_scope("conv"):
    h = F.relu(PF.convolution(x, 32, (3, 3), pad=(1, 1)))
with nn.parameter_scope("conv2"):
    loss = F.mean(PF.convolution(h, 32, (3, 3), pad=(1, 1)))
solver = S.Sgd()
solver.set_parameters(nn.get_parameters())
print("training", flush=True)
while True:
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
