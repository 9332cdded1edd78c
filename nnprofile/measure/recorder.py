"""Recording a running NNabla program: every function's forward and backward, every solver call.

What NNabla 1.39 offers, and how each piece is used:

- Global function hooks (``nn.set_function_pre_hook``/``post_hook``) see every
  function of a static graph, forward and backward. They do not say which pass
  is running: the pass is read from the Python frame that called
  ``forward``/``backward`` (the hook is called from C++, so that frame is the
  caller's), once per call site.
- Under ``nn.auto_forward()`` the global hooks do not fire for forward. There,
  forward runs when the function is called, inside the function classes of
  ``nnabla.function`` (``F.Affine(ctx)(x, w, b)``); those are module attributes,
  wrapped while recording so that each call is timed.
- ``nnabla.solver.Solver`` cannot be patched, and the solver hooks fire once per
  parameter (not at all for lazily zeroed gradients). The factories in
  ``nnabla.solvers`` are wrapped instead: the solver a script creates is a
  proxy that times each call (``zero_grad``, ``weight_decay``, ``update``,
  ``clip_grad_by_norm`` ...). A training step ends at each ``update``.

Steps follow torch.profiler's schedule: the first ``skip_first`` steps are
recorded but set aside (buffers are built then), the next ``active`` ones are
kept, after which everything is unhooked and the program runs on at full
speed. A program with fewer steps keeps what it has: the skip shrinks.
"""
from __future__ import annotations

import dis
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

HOOK_KEY = "nnprofile"
SOLVER_CALLS = ("zero_grad", "weight_decay", "update", "clip_grad_by_norm", "scale_grad",
                "check_inf_grad", "check_nan_grad", "check_inf_or_nan_grad")
FORWARD_NAMES = ("forward", "forward_all")
BACKWARD_NAMES = ("backward",)


@dataclass
class FunctionCall:
    """One function's forward or backward, as recorded."""

    phase: str          # "forward" or "backward"
    function: Any       # NNabla's function (hashes and compares by the function it wraps)
    start_ns: int
    end_ns: int
    site: Any = None    # the call site of the pass (code object, instruction), None for a dynamic call
    dynamic: bool = False


@dataclass
class SolverCall:
    method: str
    solver: str
    start_ns: int
    end_ns: int


@dataclass
class RawStep:
    """Everything recorded between two step boundaries."""

    index: int            # 1-based
    start_ns: int
    end_ns: int = 0
    calls: List[Any] = field(default_factory=list)  # FunctionCall and SolverCall, in order


class _TimedSolver:
    """A solver whose calls are timed; everything else goes to the real one."""

    def __init__(self, solver: Any, recorder: "Recorder"):
        object.__setattr__(self, "_solver", solver)
        object.__setattr__(self, "_recorder", recorder)

    @property  # type: ignore[misc]
    def __class__(self):  # isinstance(solver, nnabla.solver.Solver) still holds
        return type(self._solver)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._solver, name)
        if name in SOLVER_CALLS and self._recorder.recording:
            return self._recorder.timed_solver_call(self._solver, name, attr)
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._solver, name, value)

    def __repr__(self) -> str:
        return repr(self._solver)


class _TimedFunction:
    """A function object of ``nnabla.function`` whose call (forward, under auto_forward) is timed."""

    __slots__ = ("_function", "_recorder")

    def __init__(self, function: Any, recorder: "Recorder"):
        self._function = function
        self._recorder = recorder

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        recorder = self._recorder
        if not kwargs.get("auto_forward") or not recorder.recording:
            return self._function(*inputs, **kwargs)
        now = recorder.clock
        start = now()
        outputs = self._function(*inputs, **kwargs)
        end = now()
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = getattr(first, "parent", None)
        if parent is not None:
            recorder.current.calls.append(FunctionCall("forward", parent, start, end, None, True))
        return outputs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)


class Recorder:
    """Hooks into NNabla while started; keeps the raw steps of a program's run."""

    def __init__(self, skip_first: int = 1, active: int = 20,
                 clock: Optional[Callable[[], int]] = None):
        self.skip_first = max(0, skip_first)
        self.active = max(1, active)
        self.clock: Callable[[], int] = clock or time.perf_counter_ns
        self.steps: List[RawStep] = []
        self.recording = False
        self.finished = False  # the schedule is done: hooks removed
        self.current = RawStep(1, 0)
        self._start = 0
        self._site_phase: Dict[Tuple[Any, int], str] = {}
        self._patched: List[Tuple[Any, str, Any]] = []
        self.started_ns = 0
        self.solvers: List[Any] = []  # the solvers the program made (for their state's memory)
        # Waits for the device before each reading on an asynchronous backend (CUDA). The
        # program sets its context once running: it is looked up at the end of each step
        # (the first step, skipped by default, is then read unsynchronised).
        self.sync: Optional[Callable[[], None]] = None
        self._sync_known = False

    # -- hooks -----------------------------------------------------------------

    def _pre(self, f: Any) -> None:
        if self.sync is not None:
            self.sync()  # what ran before this function is not its time
        self._start = self.clock()

    def _post(self, f: Any) -> None:
        if self.sync is not None:
            self.sync()
        end = self.clock()
        frame = sys._getframe(1)
        self.current.calls.append(FunctionCall("", f, self._start, end, (frame.f_code, frame.f_lasti)))

    def timed_solver_call(self, solver: Any, method: str, bound: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.sync is not None:
                self.sync()
            start = self.clock()
            result = bound(*args, **kwargs)
            if self.sync is not None:
                self.sync()
            end = self.clock()
            self.current.calls.append(SolverCall(method, solver.name, start, end))
            if method == "update":
                self.step(end)
            return result
        return call

    # -- start, steps, stop ----------------------------------------------------

    def start(self) -> "Recorder":
        import nnabla as nn
        import nnabla.function as function_module
        import nnabla.solvers as solvers
        self.started_ns = self.clock()
        self.current = RawStep(1, self.started_ns)
        nn.set_function_pre_hook(HOOK_KEY, self._pre)
        nn.set_function_post_hook(HOOK_KEY, self._post)
        for name in dir(solvers):
            factory = getattr(solvers, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                self._patch(solvers, name, self._solver_factory(factory))
        for name in dir(function_module):
            factory = getattr(function_module, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                self._patch(function_module, name, self._function_factory(factory))
        self.recording = True
        return self

    def _patch(self, module: Any, name: str, value: Any) -> None:
        self._patched.append((module, name, getattr(module, name)))
        setattr(module, name, value)

    def _solver_factory(self, factory: Callable) -> Callable:
        def make(*args: Any, **kwargs: Any) -> Any:
            solver = factory(*args, **kwargs)
            self.solvers.append(solver)
            return _TimedSolver(solver, self)
        make.__name__ = getattr(factory, "__name__", "solver")
        make.__doc__ = getattr(factory, "__doc__", None)
        return make

    def _function_factory(self, factory: Callable) -> Callable:
        def make(*args: Any, **kwargs: Any) -> Any:
            return _TimedFunction(factory(*args, **kwargs), self)
        return make

    def step(self, end_ns: Optional[int] = None) -> None:
        """End the current step (at a solver update, or where the program says so)."""
        if not self.recording:
            return
        end = self.clock() if end_ns is None else end_ns
        self.current.end_ns = end
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
        self.steps.append(self.current)
        self.current = RawStep(len(self.steps) + 1, end)
        if len(self.steps) >= self.skip_first + self.active:
            self.stop()

    def stop(self) -> None:
        """Unhook; a step in progress with anything recorded counts as the last one."""
        if not self.recording:
            return
        self.recording = False
        end = self.clock()
        if self.current.calls and len(self.steps) < self.skip_first + self.active:
            self.current.end_ns = end
            self.steps.append(self.current)
        import nnabla as nn
        nn.unset_function_pre_hook(HOOK_KEY)
        nn.unset_function_post_hook(HOOK_KEY)
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)
        self._patched.clear()
        self.finished = True

    # -- after the run ------------------------------------------------------------

    def phase_of(self, site: Any) -> str:
        """'forward' or 'backward': which method the frame at ``site`` was calling."""
        phase = self._site_phase.get(site)
        if phase is None:
            phase = self._site_phase[site] = _called_method(*site)
        return phase

    def kept_steps(self) -> Tuple[List[RawStep], int]:
        """The active steps, and the skip actually applied (it shrinks for a short program)."""
        skip = min(self.skip_first, max(0, len(self.steps) - 1))
        return self.steps[skip:skip + self.active], skip


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


def _called_method(code: Any, lasti: int) -> str:
    """The pass a call site runs: the last forward/backward name loaded on that line before the call."""
    instructions = list(dis.get_instructions(code))
    line_start = 0
    name = ""
    for i, ins in enumerate(instructions):
        if ins.starts_line is not None:
            line_start = i
        if ins.offset >= lasti:
            for previous in reversed(instructions[line_start:i + 1]):
                if previous.opname in ("LOAD_METHOD", "LOAD_ATTR", "LOAD_GLOBAL", "LOAD_NAME") and \
                        previous.argval in FORWARD_NAMES + BACKWARD_NAMES:
                    name = previous.argval
                    break
            break
    return "backward" if name in BACKWARD_NAMES else "forward" if name else ""
