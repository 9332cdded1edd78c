"""The stand-ins a recording gives the program: solvers, communicators and function objects that time their calls.

NNabla's ``Solver`` and communicator types cannot be patched, so a solver (or communicator) made
while recording is a proxy: every attribute goes to the real object, and the calls that matter
are timed. Its class still reads as the real one's (``isinstance`` holds). A function object of
``nnabla.function`` (what ``F.relu`` and ``PF.affine`` make and call) is wrapped too: under
``auto_forward`` its call runs the function, and on NdArrays (eager work) likewise, so the call
is timed; in a static graph it is only noted where the program made it.
"""

from __future__ import annotations

from typing import Any

from .parts import CallTimer, SolverTimer

SOLVER_CALLS = (
    "zero_grad",
    "weight_decay",
    "update",
    "clip_grad_by_norm",
    "scale_grad",
    "check_inf_grad",
    "check_nan_grad",
    "check_inf_or_nan_grad",
    "save_states",
    "load_states",
)
# A communicator's calls that are timed: its collectives, its set-up and its barrier.
COMM_CALLS = (
    "init",
    "all_reduce",
    "allreduce",
    "all_reduce_callback",
    "reduce",
    "bcast",
    "all_gather",
    "reduce_scatter",
    "barrier",
)


class TimedSolver:
    """A solver whose calls are timed; everything else goes to the real one. A timed method is made once
    and kept on the proxy (the program calls it every step, and the lookup is no part of its step); it
    times only while the recording lasts."""

    def __init__(self, solver: Any, recorder: SolverTimer, index: int):
        object.__setattr__(self, "_solver", solver)
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "_index", index)

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # isinstance(solver, nnabla.solver.Solver) still holds
        return type(self._solver)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._solver, name)
        if name in SOLVER_CALLS and callable(attr):
            timed = self._recorder.timed_solver_call(self._index, name)
            object.__setattr__(self, name, timed)
            return timed
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._solver, name, value)

    def __repr__(self) -> str:
        return repr(self._solver)


def _itemsize(array: Any) -> int:
    try:
        return int(array.dtype.itemsize)
    except Exception:  # an NdArray not yet written to has no dtype: NNabla's default, float32
        return 4


def array_bytes(data: Any) -> int:
    """Bytes held by an NdArray, a Variable, or a list of them (the list's arrays of one dtype, as a
    list of gradients is); 0 where it cannot tell. Cheap: it runs inside the program's collective."""
    try:
        if isinstance(data, (list, tuple)):
            return sum(d.size for d in data) * _itemsize(data[0]) if data else 0
        return int(data.size) * _itemsize(data)
    except Exception:
        return 0


class TimedCommunicator:
    """A communicator whose collectives are timed (its type cannot be patched); everything else goes
    to the real one. ``allreduce`` reduces the gradients of the parameters given to
    ``add_context_and_parameters``: their bytes are counted from there. A collective's timed
    method is made once and kept on the proxy (the program calls it every step); it times only
    while the recording lasts."""

    def __init__(self, comm: Any, recorder: SolverTimer):
        object.__setattr__(self, "_comm", comm)
        object.__setattr__(self, "_recorder", recorder)
        object.__setattr__(self, "_parameter_bytes", 0)

    @property  # type: ignore[misc]
    def __class__(self) -> Any:
        return type(self._comm)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._comm, name)
        if name == "add_context_and_parameters":

            def add(ctx_param_dict: Any) -> Any:
                try:
                    params = ctx_param_dict[1]
                    object.__setattr__(
                        self,
                        "_parameter_bytes",
                        self._parameter_bytes
                        + sum(array_bytes(v) for v in (params.values() if hasattr(params, "values") else params)),
                    )
                except Exception:
                    pass
                return attr(ctx_param_dict)

            return add
        if name in COMM_CALLS and callable(attr):
            timed = self._recorder.timed_comm_call(self, name, attr)
            object.__setattr__(self, name, timed)
            return timed
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._comm, name, value)

    def __repr__(self) -> str:
        return repr(self._comm)


class TimedFunction:
    """A function object of ``nnabla.function``, made while recording (``made_ns``: when its making
    began, which a call under auto_forward or on NdArrays counts: it is part of running it)."""

    __slots__ = ("_function", "_recorder", "_made_ns")

    def __init__(self, function: Any, recorder: CallTimer, made_ns: int):
        self._function = function
        self._recorder = recorder
        self._made_ns = made_ns

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        recorder = self._recorder
        try:
            mode = recorder.function_mode(inputs, kwargs)
        except Exception as e:  # nnprofile's own failure: the call goes on, unrecorded
            recorder.faults.add("a function proxy", e)
            mode = 0
        function = self._function
        if not mode:
            return function(*inputs, **kwargs)
        return recorder.run_function(lambda: function(*inputs, **kwargs), function, self._made_ns, mode, inputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)
