"""The interfaces between the recording's parts: what each part may ask of the one that owns it.

The recorder (``recorder.Recorder``) makes the stand-ins it gives the program (``proxies``), the
sampler of the program's own lines (``sampler``), the count of its steps (``counting``) and the keeper
of its windows (``windowing``); these talk back to it only through the protocols here, so that none
imports the recorder, and a test can hand them a small object of its own.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence

from ..assembly.iterations import Counter
from ..assembly.steps import Loop
from .faults import Faults
from .raw import RawSolver
from .stack import Stacks
from .toggles import Toggles
from .waits import CpuWaits
from .window import Window


class SolverTimer(Protocol):
    """What a solver's or a communicator's proxy asks of the recording (``solvers.Solvers``): how to time its calls."""

    @property
    def faults(self) -> Faults:
        """Where a proxy notes what it could not do."""

    def timed_solver_call(self, index: int, method: str) -> Callable[..., Any]:
        """The solver ``index``'s ``method``, timed while the recording lasts."""

    def timed_comm_call(self, proxy: Any, method: str, bound: Callable[..., Any]) -> Callable[..., Any]:
        """A communicator's collective ``bound``, timed while the recording lasts."""


class CallTimer(Protocol):
    """What a function object's proxy asks of the recording: how to record its call."""

    @property
    def faults(self) -> Faults:
        """Where a proxy notes what it could not do."""

    def function_mode(self, inputs: Sequence[Any], kwargs: Dict[str, Any]) -> int:
        """How a function object's call is recorded now (``raw.PLAIN`` and the rest)."""

    def run_function(
        self, call: Callable[[], Any], function: Any, made_ns: Optional[int], mode: int, inputs: Sequence[Any]
    ) -> Any:
        """The function's call run (exactly once), recorded as ``mode`` says."""


class SampledProgram(Protocol):
    """What the sampler reads of the recording, from its timer's handler or its thread."""

    program_thread: int  # the thread recorded (the program's own)
    capturing: bool  # a window is open
    open_calls: List[Any]  # the calls nnprofile times that are open now (a sample inside one is dropped)
    passes: Any  # the passes' tracker (``passes.PassTracker``): the call sites of passes seen, in ``site_phases``
    window: Window  # the window open: its samples, and the sampler's own stretches, left out of every figure
    builds: Any  # the dynamic builds (``building.Builds``): a sample while NNabla makes a function is the pass's
    faults: Faults  # what could not be recorded (the program took the sampler's signal)


class PassHost(Protocol):
    """What the tracker of passes (``passes.PassTracker``) tells the recording as a pass ends."""

    loop: Loop  # the window's sequence of passes, updates, reads and marks
    solvers: List[RawSolver]  # the program's solvers made so far (none: passes mark the steps)
    builds: Any  # the dynamic builds (``building.Builds``): a pass ends their run
    solver_calls: Any  # the solvers' part (``solvers.Solvers``): the program's classes looked at as a pass begins

    @property
    def steps(self) -> Any:
        """Its count of steps (``counting.StepCount``)."""


class HooksHost(Protocol):
    """What the function hooks (``hooks.FunctionHooks``) read of the recording, and tell it."""

    capturing: bool  # a window is open
    hooks_on: bool  # the function hooks are set (the hooks set it)
    shared: bool  # another thread ran NNabla functions: the hooks are off for good (the pre-hook sets it)
    elsewhere: int  # functions other threads ran (not recorded)
    program_thread: int  # the thread recorded (the program's own)
    sync: Optional[Callable[[], None]]  # the device's wait, on an asynchronous device
    clock: Callable[[], int]
    _mark: Callable[[], int]  # a call's mark now
    open_calls: List[Any]  # the calls open now
    faults: Faults
    window: Window  # the window open: its events, and nnprofile's own stretches
    loop: Loop  # the window's sequence of passes, updates, reads and marks
    passes: Any  # the pass under way (``passes.PassTracker``)
    solver_calls: Any  # the solvers' part (``solvers.Solvers``): the program's classes looked at as a pass begins
    sampler: Any  # the program's lines sampled (``sampler.Sampler``), or None

    @property
    def steps(self) -> Any:
        """Its count of steps (``counting.StepCount``)."""

    def aside(self, t0: int) -> None:
        """nnprofile's own work since ``t0``: left out of every call, pass and step."""


class FunctionCallHost(Protocol):
    """What the program's functions run now (``wrappers.FunctionCalls``) read of the recording."""

    recording: bool  # started, not yet stopped
    capturing: bool  # a window is open
    hooks_on: bool  # the function hooks are set (in a window's kept steps)
    note_sites: bool  # where functions are made is noted (the first steps of a window)
    program_thread: int  # the thread recorded (the program's own)
    open_calls: List[Any]  # the calls open now
    clock: Callable[[], int]
    _mark: Callable[[], int]  # a call's mark now
    faults: Faults
    window: Window  # the window open: its events, and nnprofile's own stretches
    cpu: CpuWaits  # what a call's marks are
    builds: Any  # the dynamic builds (``building.Builds``)
    passes: Any  # the pass under way (``passes.PassTracker``)
    stacks: Stacks  # the program's frames, as stacks

    @property
    def steps(self) -> Any:
        """Its count of steps (``counting.StepCount``)."""

    def past_the_loop(self, frame: Any) -> None:
        """A call of the program's that may lie past its step loop (the hooks go back on there)."""


class CountingHost(Protocol):
    """What the count of steps (``counting.StepCount``) reads of the recording, and tells it."""

    capturing: bool  # a window is open
    hooks_on: bool  # the function hooks are set
    past: bool  # they are set because the program was past its loop (``Recorder.past_the_loop``)
    solvers: List[RawSolver]  # the program's solvers made so far
    stacks: Stacks
    loop: Loop  # the window's sequence of passes, updates, reads and marks (a new one as a window opens)
    clock: Callable[[], int]
    cpu: CpuWaits

    def step_ended(self, late: bool = False) -> None:
        """A step has ended (the count says how many): the schedule's windows follow."""

    def aside(self, t0: int) -> None:
        """nnprofile's own work since ``t0``: left out of every call, pass and step."""

    def past_the_loop(self, frame: Any) -> None:
        """A call of the program's that may lie past its step loop (the hooks go back on there)."""


class CountedSteps(Protocol):
    """What the keeper of the windows reads of the count of steps (``counting.StepCount``), and sets."""

    done: int  # steps counted so far
    countable: bool  # False: the steps show only in passes, which only the hooks see
    by_frame_only: bool  # between windows, updates counted by the loop's frame alone

    @property
    def frame_loop(self) -> object:
        """The loop counted from its own frame (False: it cannot be; None: not yet known): read for whether there is
        one."""

    @property
    def counter(self) -> Counter:
        """The count of the loop's iterations."""

    def by_iterations(self) -> bool:
        """Whether the steps are the loop's iterations (else the pattern of updates, marks or reads)."""


class WindowsHost(Protocol):
    """What the keeper of the windows (``windowing.WindowKeeper``) reads of the recording, and asks of it."""

    recording: bool  # started, not yet stopped
    capturing: bool  # a window is open
    clock: Callable[[], int]
    cpu: CpuWaits
    faults: Faults
    toggles: Toggles  # the wrappers switched between windows
    solvers: List[RawSolver]
    loop: Loop
    window: Window  # the window open, or the last closed (a new one made as one opens)
    _import_locks: Any  # importlib's own locks while the reentrant ones stand in (``importlock``)
    hooks_on: bool  # the function hooks are set
    past: bool  # they are set because the program was past its loop (``Recorder.past_the_loop``)

    @property
    def steps(self) -> CountedSteps:
        """Its count of steps."""

    def begin_capture(self) -> None:
        """A window begins: its events kept from here."""

    def end_capture(self) -> None:
        """A window's steps are done: the hooks off, its capture ended (its events still held)."""

    def snapshot_parameters(self) -> None:
        """The parameters' names noted as they are now."""

    def _switch_hooks(self, on: bool) -> None:
        """The function hooks on or off (for the steps that measure what they cost)."""


class ProgramCallHost(Protocol):
    """What a part that times the program's own calls (its reads, its solvers' calls) reads of the recording."""

    recording: bool  # started, not yet stopped
    capturing: bool  # a window is open
    program_thread: int  # the thread recorded (the program's own)
    open_calls: List[Any]  # the calls open now
    window: Window  # the window open: its events, and nnprofile's own stretches
    faults: Faults
    cpu: CpuWaits
    clock: Callable[[], int]
    steps: Any  # its count of steps (``counting.StepCount``, which imports this module)

    def aside(self, t0: int) -> None:
        """nnprofile's own work since ``t0``: left out of every call, pass and step."""

    def break_pass(self) -> None:
        """The pass under way has ended (a call of the program's between passes)."""


class InputsHost(ProgramCallHost, Protocol):
    """What the program's iterators and monitors (``inputs.Inputs``) read of the recording besides, and ask of it."""

    hooks_on: bool  # the function hooks are set
    loop: Loop
    stacks: Stacks

    def between_calls(self) -> None:
        """A call of the program's own begins between NNabla's: the pass before it ends, its classes are looked at."""

    def past_the_loop(self, frame: Any) -> None:
        """A call of the program's that may lie past its step loop (the hooks go back on there)."""


class SolversHost(ProgramCallHost, Protocol):
    """What the program's solvers and communicators (``solvers.Solvers``) read of the recording besides, and ask
    of it."""

    sync: Optional[Callable[[], None]]  # the device's wait, on an asynchronous device
    _mark: Callable[[], int]  # a call's mark now
    _patches: Any  # what the recording put in place (``patching.Patches``)

    def updated(self, index: int, end: int) -> None:
        """A solver's update has ended, outside any other call."""

    @property
    def functions(self) -> CallTimer:
        """The functions run now (``wrappers.FunctionCalls``): a custom PythonFunction's call is recorded there."""
