"""Two steps, then a bug of the user's."""
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

x = nn.Variable((2, 3))
x.d = 1.0
loss = F.mean(PF.affine(x, 2))
solver = S.Sgd()
solver.set_parameters(nn.get_parameters())
for i in range(2):
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()


def helper():
    raise ValueError("the user's own bug")


helper()
