"""The Recorder as its mixed-in parts see it: the state they share, and the methods they call on one another.

The Recorder (``recorder.Recorder``) still has two parts mixed in: its function hooks (``hooks``) and its
wrappers of functions run now (``wrappers``). Each part's methods take
``self`` as ``RecorderParts``, so that mypy checks every use of the shared state against the types here. The
parts that are objects of their own (its iterators and monitors, its solvers, its count of steps, its faults,
its toggled wrappers, its readings of other work, its sampler, the keeper of its windows) are reached through
their own fields, and reach it through the small protocols of ``parts``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Hashable, List, Optional, Protocol, Sequence, Set, Tuple

from .parts import CallTimer, CountingHost, SampledProgram, WindowsHost

if TYPE_CHECKING:
    from ..assembly.steps import Loop
    from .building import Builds
    from .counting import StepCount
    from .faults import Faults
    from .inputs import Inputs
    from .solvers import Solvers
    from .patching import Patches
    from .raw import EagerInfo, RawSolver
    from .sampler import Sampler
    from .windowing import WindowKeeper
    from .stack import Stacks
    from .toggles import Toggles
    from .waits import CpuWaits


class RecorderParts(CallTimer, CountingHost, SampledProgram, WindowsHost, Protocol):
    # -- what the recording is doing now
    recording: bool  # started, not yet stopped
    capturing: bool  # a window is open: its events are kept
    hooks_on: bool  # the function hooks are set
    shared: bool  # another thread of the program ran NNabla functions: the hooks are off for good
    calibrate: bool  # steps after the kept ones measure what the hooks cost
    note_sites: bool  # where functions are made is noted (the first steps of a window)
    program_thread: int  # the thread recorded (the program's own)
    clock: Callable[[], int]
    _mark: Callable[[], int]  # a call's mark now (``CpuWaits.mark``)
    sync: Optional[Callable[[], None]]  # the device's wait, on an asynchronous device
    _nn: Any  # nnabla, once started
    _deferred: Optional[BaseException]  # a Ctrl-C Python would have dropped, for the next hook
    _gc_start: int
    _import_locks: Any
    _patches: Patches
    # -- what it keeps of a window
    open_calls: List[Any]
    loop: Loop
    stacks: Stacks
    site_phases: Dict[Any, str]
    created: Dict[Any, str]  # function -> where the program made it
    eager: Dict[Hashable, EagerInfo]
    ended_ns: int
    _dynamic_pass: bool
    _pass_site: Any  # the pass under way: its call site, its functions, its first and last, when it began
    _pass_functions: Set[Any]
    _pass_first: Any
    _pass_last: Any
    _pass_start: int
    _sync_known: bool
    elsewhere: int  # functions other threads ran (not recorded)
    _dynamic_place: Any
    _recent_dynamic: Set[Any]
    # -- the parts it owns
    steps: StepCount
    builds: Builds
    faults: Faults
    toggles: Toggles
    cpu: CpuWaits
    sampler: Optional[Sampler]
    windowing: WindowKeeper
    inputs: Inputs
    solver_calls: Solvers
    # -- what the program made
    namespaces: Tuple[Any, ...]
    ndarray_type: Any
    solvers: List[RawSolver]
    _skip: Tuple[str, ...]
    SITE_STEPS: int

    def _pre(self, f: Any) -> None: ...
    def _start_of(self, f: Any) -> Optional[Tuple[Any, int, int]]: ...
    def _phase(self, site: Any) -> str: ...
    def _post(self, f: Any) -> None: ...
    def _close_pass(self) -> None: ...
    def _break_pass(self) -> None: ...
    def _find_sync(self) -> None: ...
    def snapshot_parameters(self) -> None: ...
    def aside(self, t0: int) -> None: ...
    def past_the_loop(self, frame: Any) -> None: ...
    def _outside_loop(self, frame: Any) -> bool: ...
    def _switch_hooks(self, on: bool) -> None: ...
    def _patch_functions(self, patches: Patches) -> None: ...
    def begin_capture(self) -> None: ...
    def end_capture(self) -> None: ...
    def function_mode(self, inputs: Sequence[Any], kwargs: Dict[str, Any]) -> int: ...
    def run_function(
        self, call: Callable[[], Any], function: Any, made_ns: Optional[int], mode: int, inputs: Sequence[Any]
    ) -> Any: ...
    def dynamic_call(
        self,
        outputs: Any,
        start: int,
        end: int,
        depth: int = 0,
        switches: Tuple[int, int] = (0, 0),
        function: Any = None,
    ) -> None: ...
    def _loop_place(self, frame: Any) -> Any: ...
    def eager_call(
        self,
        function: Any,
        inputs: Sequence[Any],
        outputs: Any,
        start: int,
        end: int,
        depth: int = 0,
        switches: Tuple[int, int] = (0, 0),
    ) -> None: ...
    def note_creation(self, outputs: Any, depth: int = 2, function: Any = None) -> None: ...
