"""What the recorder keeps of the program's objects while it runs, before ``capturing`` makes them data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple


OPENED = object()  # a wrapper's call on the open-call stack (``Recorder.open_calls``)
PLAIN, MADE, EAGER_CALL, DYNAMIC_CALL = 0, 1, 2, 3  # how a function proxy's call is recorded


@dataclass
class RawSolver:
    solver: Any  # the real solver
    type_name: str  # Adam
    variable: str = ""  # what the program calls it, where the bytecode says
    parameters: Dict[str, Any] = field(default_factory=dict)  # its parameters when first called
    created: Optional[str] = None
    own: bool = False  # a solver class of the program's own (NNabla's C++ methods are never called on it)
    made_ns: int = 0  # when the program made it (the recorder's clock; 0: before recording started)


@dataclass
class EagerInfo:
    """What an eager call ran on: its function's type and arguments, and the arrays' shapes."""

    type_name: str
    args: Dict[str, Any]
    inputs: List[Tuple[Tuple[int, ...], Optional[str]]]  # (shape, dtype)
    outputs: List[Tuple[Tuple[int, ...], Optional[str]]]
    source: Optional[str]


def device_sync(context: Any = None, import_extension: Any = None) -> Optional[Callable[[], None]]:
    """A wait for the device of the current context when it is a GPU (CUDA runs asynchronously)."""
    import nnabla as nn

    context = context if context is not None else nn.get_current_context()
    backends = list(getattr(context, "backend", []) or [])
    name = backends[0].split(":")[0] if backends else "cpu"
    if name not in ("cuda", "cudnn"):
        return None
    if import_extension is None:
        from nnabla.ext_utils import import_extension_module

        import_extension = import_extension_module
    try:
        ext = import_extension(name)
    except Exception:
        return None
    device_id = str(getattr(context, "device_id", "0") or "0")
    return lambda: ext.synchronize(device_id=device_id)


class _DetachedInfo:
    __slots__ = ("type_name", "args")

    def __init__(self, type_name: str, args: Dict[str, Any]) -> None:
        self.type_name, self.args = type_name, args


class Detached:
    """A function run under auto_forward whose outputs keep no graph (``nn.no_grad()``: no function is their parent),
    described from the function object itself, as a graph's function is (``nnprofile.base.functions.Describer``)."""

    __slots__ = ("function", "info", "name")

    def __init__(self, function: Any) -> None:
        self.function = function
        self.name = str(getattr(function, "name", "Function"))
        self.info = _DetachedInfo(self.name, dict(getattr(function, "args", {}) or {}))

    @property
    def inputs(self) -> List[Any]:
        return list(self.function.inputs)

    @property
    def outputs(self) -> List[Any]:
        return list(self.function.outputs)

    def inplace_data(self, i: int) -> int:
        return int(self.function.inplace_data(i))

    def grad_depends_input_data(self, i: int, j: int) -> bool:
        return bool(self.function.grad_depends_input_data(i, j))

    def grad_depends_output_data(self, i: int, j: int) -> bool:
        return bool(self.function.grad_depends_output_data(i, j))
