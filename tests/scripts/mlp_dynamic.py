"""A dynamic-mode MLP, trained with Adam."""
import numpy as np

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

rng = np.random.RandomState(0)
solver = S.Adam()
with nn.auto_forward():
    for i in range(6):
        x = nn.Variable.from_numpy_array(rng.rand(16, 20).astype(np.float32))
        with nn.parameter_scope("fc1"):
            h = F.relu(PF.affine(x, 32))
        with nn.parameter_scope("fc2"):
            y = PF.affine(h, 4)
        loss = F.mean(F.squared_error(y, nn.Variable.from_numpy_array(np.zeros((16, 4), np.float32))))
        if i == 0:
            solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.backward()
        solver.update()
