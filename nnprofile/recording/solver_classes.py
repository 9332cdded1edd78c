"""What the recorder reads of solvers: their parameters (also of a solver class of the program's own), and the
solver classes a program defined below NNabla's (whose methods are timed as NNabla's are)."""

from __future__ import annotations

from typing import Any, Dict, List


def solver_parameters(solver: Any, own: bool = False) -> Dict[str, Any]:
    """A solver's parameters: NNabla's ``get_parameters``; for a solver of the program's own (whose C++ part
    was never made: calling it would crash), its own ``get_parameters`` where its class has one, else the
    dict of variables it holds."""
    try:
        if not own or any(
            "get_parameters" in vars(c) for c in type(solver).__mro__ if not (c.__module__ or "").startswith("nnabla")
        ):
            found = dict(solver.get_parameters())
            if found:
                return found
    except Exception:
        pass
    try:
        import nnabla as nn

        for value in vars(solver).values():
            if isinstance(value, dict) and value and all(isinstance(v, nn.Variable) for v in value.values()):
                return dict(value)
    except Exception:
        pass
    return {}


def all_subclasses(base: Any) -> List[type]:
    if base is None:
        return []
    out, todo = [], list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def count_direct(base: Any) -> int:
    return len(base.__subclasses__()) if base is not None else 0
