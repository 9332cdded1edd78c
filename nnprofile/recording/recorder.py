"""Recording a running NNabla program: its raw calls, in order, and nothing interpreted yet.

What NNabla 1.39 offers, and how each piece is used:

- Global function hooks (``nn.set_function_pre_hook``/``post_hook``) see every function of a
  static graph, forward and backward, and every backward under ``auto_forward``. Each call keeps
  its call site: the code and instruction of the Python frame that called ``forward``/``backward``
  (the hook is called from C++, so that frame is the program's), from which the pass and the
  graph's name are read (``nnprofile.recording.callsite``).
- Under ``nn.auto_forward()`` the hooks do not fire for forward, and a function called on
  NdArrays (eager work: ``F.pow_scalar(p.grad)``, ``p.grad ** 2``, ``+=``) runs at once with no
  hook at all: the function classes of ``nnabla.function`` (what ``F.relu`` and ``PF.affine`` make
  and call) are wrapped (``proxies.TimedFunction``), and such a call is timed, from the making of
  its function object to its return. The same wrapper notes where each function is created: the
  first frame outside NNabla and nnprofile, as torch.profiler's ``with_stack`` does.
- ``nnabla.solver.Solver`` cannot be patched, and its hooks fire once per parameter; the solver
  factories are wrapped instead, wherever they are bound (``nnabla.solver``, ``nnabla.solvers``, a
  program's own ``from ... import``), and a solver made while recording is a proxy that times each
  call (``proxies.TimedSolver``); communicators likewise.
- ``DataIterator.next`` and the monitors' ``add`` are Python methods: wrapped on their classes,
  each call is timed (for an iterator, that is the program's wait for the next batch: NNabla loads
  batches in a thread by default).
- Parameter names are read while the program runs (at step ends, and before
  ``clear_parameters``), so that a program that clears or replaces its parameters keeps the names
  its layers had.

Recording follows torch.profiler's schedule: ``skip_first`` steps recorded and set aside,
``active`` kept, a few more without the function hooks (what they cost in the program), then
everything is unhooked and the program runs on at full speed. The loop's structure is followed as
it comes (``nnprofile.assembly.steps.Loop``), only to know when to stop; the steps themselves are
found afterwards, by the same rule, from the events (``nnprofile.assembly``), once ``describe``
has turned them into data.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional, Sequence, Tuple

from ..assembly.events import DYNAMIC, EAGER, Call, CommCall, Event, Hooks, InputCall, IteratorInfo, MonitorCall, \
    SolverCall, StepMark
from ..assembly.steps import Loop, pattern
from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at, first_outside, receiver_of_caller
from .patching import Patches
from .proxies import SOLVER_CALLS, TimedCommunicator, TimedFunction, TimedSolver
from .schedule import OFF, Schedule, Windows

HOOK_KEY = "nnprofile"
_getframe = sys._getframe
MONITOR_CLASSES = ("MonitorSeries", "MonitorTimeElapsed", "MonitorImage", "MonitorImageTile")
# Creation sites are noted for functions made in the first step and before (a dynamic graph makes
# them anew every step; its layers are known by position, and named from the first step they ran in).
SITE_STEPS = 1
# After the kept steps, a few more measure what the hooks cost in the program itself: CALIBRATION, steps
# without the function hooks (False) and with them (True). The second step without the hooks is the
# program as it runs unrecorded (the first carries what the hooks before it left in the caches, and their
# switching off); the step with the hooks after it, what they add; the next, what a step with the hooks
# carries into the one after (``nnprofile.assembly.hookfit``). The kept steps stay one run of the loop:
# no step of theirs is left without the hooks (a validation every few steps would fall into those).
# Only for steps marked by solver updates or nnprofile.step(): without hooks, passes cannot mark steps.
CALIBRATION = (False, False, True, True) * 5
MIN_PAIRS = 3
# Without a window open, steps are counted by the loop as it comes until it has shown this many updates
# (or marks); then by the pattern it showed, so that what is kept stays small over a run of any length.
FREEZE_AT = 64
MIN_READS = 2  # a loop without a solver counts its steps by its reads from its second read on
WATCH_EVERY = 16
MAX_CREATED = 20_000  # functions whose source is remembered across windows  # pairs the estimate needs (``nnprofile.base.hookcost.measured_in_program``)


@dataclass
class RawSolver:
    solver: Any             # the real solver
    type_name: str          # Adam
    variable: str = ""      # what the program calls it, where the bytecode says
    parameters: Dict[str, Any] = field(default_factory=dict)  # its parameters when first called
    created: Optional[str] = None


@dataclass
class EagerInfo:
    """What an eager call ran on: its function's type and arguments, and the arrays' shapes."""

    type_name: str
    args: Dict[str, Any]
    inputs: List[Tuple[Tuple[int, ...], Optional[str]]]    # (shape, dtype)
    outputs: List[Tuple[Tuple[int, ...], Optional[str]]]
    source: Optional[str]


def _arrays(values: Any) -> List[Tuple[Tuple[int, ...], Optional[str]]]:
    out = []
    for v in values if isinstance(values, (list, tuple)) else [values]:
        try:
            import numpy as np
            dtype: Optional[str] = np.dtype(v.dtype).name
        except Exception:
            dtype = None
        try:
            out.append((tuple(int(d) for d in v.shape), dtype))
        except Exception:  # a scalar argument, not an array
            continue
    return out


class Recorder:
    """Hooks into NNabla while started; keeps the raw events of a program's run.

    ``namespaces``: further namespaces (a notebook's) in which NNabla's factories are replaced,
    and in which solvers made before recording started are replaced by timed ones.
    """

    def __init__(self, skip_first: int = 1, active: int = 20,
                 clock: Optional[Callable[[], int]] = None, namespaces: Tuple[Any, ...] = (),
                 calibrate: bool = True, schedule: Optional[Schedule] = None,
                 on_window: Optional[Callable[["Recorder"], None]] = None):
        self.schedule = schedule or Schedule(warmup=max(0, skip_first), active=max(1, active))
        self.skip_first, self.active = self.schedule.warmup, self.schedule.active
        self.calibrate = calibrate
        self.windows = Windows(self.schedule, CALIBRATION if calibrate else ())
        self.on_window = on_window   # called as each window closes, with its events still here
        self.capturing = False       # a window is open: its events are kept
        self.window = 0              # the window open, or the last closed
        self.window_start = 0        # the steps of the run before the open window began
        self.countable = True        # False: steps show only as passes, which only the hooks see
        self._base = 0               # steps counted before the loop now followed began
        self._per_step: Optional[Tuple[str, int]] = None  # counting without the hooks: (updates|marks|reads, per step)
        self._light = 0              # updates (or marks, or reads) since then
        self._reads: List[int] = []  # before any window, in a program without a solver: the iterators read
        self._asked = False          # a window on demand was asked for (a signal)
        self.last_step_ns = 0        # when the last step ended
        self.window_end = 0          # the steps of the run when the last window closed
        self.watch: Optional[Callable[[], None]] = None  # called every WATCH_EVERY steps between windows
        self.ended_ns = 0            # when the recording ended (the program's end)
        self.hooks_on = False
        self.clock: Callable[[], int] = clock or time.perf_counter_ns
        self.namespaces = namespaces
        self.events: List[Event] = []
        self.recording = False
        self.finished = False  # the schedule is done: hooks removed
        self.started_ns = 0
        self.stopped_ns = 0
        self.solvers: List[RawSolver] = []
        self.iterators: List[IteratorInfo] = []
        self._iterator_index: Dict[int, int] = {}
        self.eager: Dict[Hashable, EagerInfo] = {}
        self.loop = Loop()
        self.steps_done = 0
        self._pass_site: Any = None
        self._pass_functions: set = set()
        self._pass_first: Any = None
        self._pass_last: Any = None
        self._pass_start = 0
        self._dynamic_pass = False
        self._recent_dynamic: set = set()  # functions made under auto_forward since the last update
        self._site_phases: Dict[Any, str] = {}
        # Parameter variable -> its full name, as seen while the program ran; function -> source.
        self.parameter_names: Dict[Any, str] = {}
        self.created: Dict[Any, str] = {}
        self.note_sites = True
        self.communicators: List[str] = []  # the type of each communicator made
        self.comm_rank: Optional[Tuple[int, int]] = None  # (rank, size) once a communicator is initialised
        self.callback_used = False  # all_reduce_callback: its communication runs inside backward
        self.excluded: List[Tuple[int, int]] = []  # nnprofile's own work between the program's calls
        self._patches = Patches()
        self._start = 0
        self._in_monitor = False
        self._skip = ("nnabla", "nnabla_ext", "nnprofile")  # modules whose frames are not the program's
        self.ndarray_type: Any = None
        # Waits for the device before each reading on an asynchronous backend (CUDA). The
        # program sets its context once running: it is looked up at each step's end.
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
        frame = _getframe(1)
        site = (frame.f_code, frame.f_lasti)
        self.events.append(Call(f, self._start, end, site))
        if site != self._pass_site or f in self._pass_functions:  # a new pass starts
            self._close_pass()
            self._pass_site, self._pass_functions = site, {f}
            self._pass_first, self._pass_start = f, self._start
        else:
            self._pass_functions.add(f)
        self._pass_last = f

    def _phase(self, site: Any) -> str:
        phase = self._site_phases.get(site)
        if phase is None:
            method, _ = call_at(site[0], site[1], FORWARD_NAMES + BACKWARD_NAMES)
            phase = self._site_phases[site] = "backward" if method in BACKWARD_NAMES else "forward"
        return phase

    def _close_pass(self) -> None:
        """The pass that just ended, to the loop's structure (its graph: what it ran on)."""
        if self._pass_site is not None:
            phase = self._phase(self._pass_site)
            root = self._pass_first if phase == "backward" else self._pass_last
            graph = ("auto_forward", self._pass_site) if root in self._recent_dynamic else ("static", root)
            self.loop.pass_started(phase, graph, self._pass_site, self._pass_start)
            self._pass_site = None
            if not self.solvers and not self.loop.marks:  # a program without a solver: passes mark its steps
                self._count_steps()
        self._dynamic_pass = False

    def timed_solver_call(self, index: int, method: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            info = self.solvers[index]
            bound = getattr(info.solver, method)
            if not self.capturing:
                if not self.recording or method != "update":
                    return bound(*args, **kwargs)
                result = bound(*args, **kwargs)
                self._light_step("updates", index)
                return result
            t0 = self.clock()
            if not info.variable:
                info.variable = receiver_of_caller(sys._getframe(1), SOLVER_CALLS)
            if not info.parameters:
                info.parameters = dict(info.solver.get_parameters())
            self._break_pass()
            if self.sync is not None:
                self.sync()
            start = self.clock()
            self.excluded.append((t0, start))
            result = bound(*args, **kwargs)
            if self.sync is not None:
                self.sync()
            end = self.clock()
            self.events.append(SolverCall(method, index, start, end))
            if method == "update":
                self.loop.update(index, end)
                self._recent_dynamic = set()
                self._count_at_end()
            self.excluded.append((end, self.clock()))  # nnprofile's own work, no part of the step
            return result
        return call

    def timed_comm_call(self, proxy: Any, method: str, bound: Callable) -> Callable:
        """A collective, timed from the program's call to its return: the bookkeeping is in it, so that the
        entry is what the program itself would measure around the call (the first Python after a
        collective runs on cold caches: tens of microseconds where it costs one when warm)."""
        from .proxies import array_bytes

        def call(*args: Any, **kwargs: Any) -> Any:
            if not self.capturing:
                return bound(*args, **kwargs)
            if self.sync is not None:
                self.sync()
            start = self.clock()
            data = args[0] if args else kwargs.get("data", kwargs.get("ndarray_list", kwargs.get("ndarray")))
            moved = proxy._parameter_bytes if method == "allreduce" else array_bytes(data) if data is not None else 0
            event = CommCall(method, start, start, moved)
            result = bound(*args, **kwargs)
            if self.sync is not None:
                self.sync()
            self._break_pass()
            self.events.append(event)
            if method == "init":
                self.comm_rank = (int(getattr(proxy._comm, "rank", 0)), int(getattr(proxy._comm, "size", 1)))
            elif method == "all_reduce_callback":
                self.callback_used = True
            event.end_ns = self.clock()
            return result
        return call

    def _timed_next(self, original: Callable) -> Callable:
        recorder = self

        def next(iterator: Any) -> Any:  # noqa: A001 (DataIterator's own name)
            if recorder.capturing:  # the pass this read ends may close the window: the read is then the next step's
                recorder._break_pass()
            if not recorder.capturing:
                result = original(iterator)
                if recorder.recording and recorder.counts_reads():
                    recorder._light_read(recorder._iterator_of(iterator, sys._getframe(1)))
                return result
            index = recorder._iterator_of(iterator, sys._getframe(1))
            start = recorder.clock()
            try:
                return original(iterator)
            finally:
                end = recorder.clock()
                recorder.events.append(InputCall(index, start, end))
                recorder.loop.input(index)
                recorder.excluded.append((end, recorder.clock()))
        return next

    def _iterator_of(self, iterator: Any, frame: Any) -> int:
        """The iterator's index (named, the first time, by what the program calls it)."""
        index = self._iterator_index.get(id(iterator))
        if index is None:
            if frame.f_code.co_name == "__next__" and frame.f_back is not None:
                frame = frame.f_back  # for batch in data / next(data): the program's frame
            name = receiver_of_caller(frame, ("next",)) or type(getattr(iterator, "_data_source", iterator)).__name__
            index = self._iterator_index[id(iterator)] = len(self.iterators)
            self.iterators.append(IteratorInfo(name, bool(getattr(iterator, "_use_thread", False))))
        return index

    def _timed_add(self, original: Callable) -> Callable:
        recorder = self

        def add(monitor: Any, *args: Any, **kwargs: Any) -> Any:
            if not recorder.capturing or recorder._in_monitor:  # one monitor's add calling another's
                return original(monitor, *args, **kwargs)
            recorder._in_monitor = True
            start = recorder.clock()
            try:
                return original(monitor, *args, **kwargs)
            finally:
                end = recorder.clock()
                recorder._in_monitor = False
                recorder._break_pass()
                recorder.events.append(MonitorCall(str(getattr(monitor, "name", type(monitor).__name__)), start, end))
        return add

    def _break_pass(self) -> None:
        self._close_pass()

    def dynamic_call(self, outputs: Any, start: int, end: int) -> None:
        """A function run under auto_forward (its graph's forward, as it is made)."""
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = getattr(first, "parent", None)
        if parent is None:
            return
        if not self._dynamic_pass:
            self._close_pass()
            self._dynamic_pass = True
            self.loop.pass_started("forward", None, "auto_forward", start)
            if not self.solvers and not self.loop.marks:
                self._count_steps()
        self.events.append(Call(parent, start, end, None, DYNAMIC))
        self._recent_dynamic.add(parent)
        if self.note_sites and self.steps_done < SITE_STEPS:
            self.note_creation(outputs, depth=3)

    def eager_call(self, function: Any, inputs: Sequence[Any], outputs: Any, start: int, end: int) -> None:
        """A function run on NdArrays: eager work, timed, with the program's line that called it (described
        in full the first time a line calls it on arrays of these shapes)."""
        where = first_outside(_getframe(2), self._skip)
        key = (function.name, where, tuple([getattr(v, "shape", None) for v in inputs]))
        if key not in self.eager:
            self.eager[key] = EagerInfo(str(function.name), dict(getattr(function, "args", {}) or {}), _arrays(inputs),
                                        _arrays(outputs), "%s:%d" % where if where is not None else None)
        self._break_pass()
        self.events.append(Call(key, start, end, None, EAGER))

    def note_creation(self, outputs: Any, depth: int = 2) -> None:
        """Where the program created the function behind ``outputs``: its first frame outside NNabla."""
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = getattr(first, "parent", None)
        if parent is None or parent in self.created:
            return
        where = first_outside(sys._getframe(depth), self._skip)
        if where is not None:
            self.created[parent] = "%s:%d" % where

    # -- start, steps, stop ----------------------------------------------------

    def start(self) -> "Recorder":
        import nnabla as nn
        import nnabla.parameter as parameter_module
        import nnabla.solver as solver_module
        self.ndarray_type = nn.NdArray
        self.started_ns = self.clock()
        self.snapshot_parameters()
        replacements: Dict[int, Tuple[Any, Any]] = {}
        for name in dir(solver_module):
            factory = getattr(solver_module, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                replacements[id(factory)] = (factory, self._tracking_factory(factory, self._track_solver,
                                                                              "solver"))
        for name in ("clear_parameters", "load_parameters"):
            original = getattr(parameter_module, name, None)
            if original is not None:
                replacements[id(original)] = (original, self._snapshot_first(original))
        for factory in communicator_factories():
            replacements[id(factory)] = (factory, self._tracking_factory(factory, self._track_communicator,
                                                                          "communicator"))
        self._patches.everywhere(replacements, self.namespaces)
        self._patch_functions(self._patches)
        self._patch_classes()
        self._wrap_existing_solvers()
        self.recording = True
        phase, window = self.windows.begin(0)
        if phase != OFF:  # the first window from the first step (else the program runs untouched until it)
            self._open_window(window)
            self._switch_hooks(True)
        return self

    def _patch_functions(self, patches: Patches) -> None:
        import nnabla.function as function_module
        for name in dir(function_module):
            factory = getattr(function_module, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                patches.attribute(function_module, name, self._function_factory(factory))

    @contextlib.contextmanager
    def hooked(self) -> Iterator["Recorder"]:
        """Only the function hooks and the function classes, for calibrating what they cost: no
        solvers, iterators or monitors, and no counting of steps."""
        import nnabla as nn
        patches = Patches()
        self.ndarray_type = nn.NdArray
        nn.set_function_pre_hook(HOOK_KEY, self._pre)
        nn.set_function_post_hook(HOOK_KEY, self._post)
        self._patch_functions(patches)
        self.recording = self.capturing = self.hooks_on = True
        self.note_sites = False
        self.loop.mark(0)  # marks: passes do not count steps
        try:
            yield self
        finally:
            self.recording = self.capturing = self.hooks_on = False
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
            patches.undo()

    def _patch_classes(self) -> None:
        from nnabla import monitor
        from nnabla.utils import data_iterator
        self._patches.attribute(data_iterator.DataIterator, "next",
                                self._timed_next(data_iterator.DataIterator.next))
        for name in MONITOR_CLASSES:
            cls = getattr(monitor, name, None)
            if cls is not None and "add" in vars(cls):
                self._patches.attribute(cls, "add", self._timed_add(vars(cls)["add"]))

    def _wrap_existing_solvers(self) -> None:
        """Solvers and communicators the program made before recording started (a notebook's earlier
        cell), where a namespace given holds them: replaced by timed ones for the recording."""
        import nnabla.solver as solver_module
        made: Dict[int, Tuple[Any, Any]] = {}
        places = _one_level_down(self.namespaces)
        for namespace in places:
            for name, value in list(namespace.items()):
                if type(value) is not TimedSolver and isinstance(value, solver_module.Solver):
                    made.setdefault(id(value), (value, self._track_solver(value)))
                elif _is_communicator(value) and id(value) not in made:
                    made[id(value)] = (value, self._track_communicator(value))
                    try:  # initialised already: it knows its rank
                        self.comm_rank = (int(value.rank), int(value.size))
                    except Exception:
                        pass
        if made:
            self._patches.everywhere(made, places)

    def _track_solver(self, solver: Any) -> TimedSolver:
        where = first_outside(sys._getframe(2), self._skip)
        self.solvers.append(RawSolver(solver, str(getattr(solver, "name", type(solver).__name__)),
                                      created="%s:%d" % where if where is not None else None))
        return TimedSolver(solver, self, len(self.solvers) - 1)

    def _tracking_factory(self, factory: Callable, track: Callable[[Any], Any], kind: str) -> Callable:
        """``factory`` whose products, made while recording, are timed (``track``: a solver's or a
        communicator's proxy)."""
        def make(*args: Any, **kwargs: Any) -> Any:
            made = factory(*args, **kwargs)
            return track(made) if self.recording else made
        make.__name__ = getattr(factory, "__name__", kind)
        make.__doc__ = getattr(factory, "__doc__", None)
        return make

    def _track_communicator(self, comm: Any) -> TimedCommunicator:
        self.communicators.append(type(comm).__name__)
        return TimedCommunicator(comm, self)

    def _function_factory(self, factory: Callable) -> Callable:
        clock = self.clock

        def make(*args: Any, **kwargs: Any) -> Any:
            if not self.capturing:
                return factory(*args, **kwargs)
            made = clock()
            return TimedFunction(factory(*args, **kwargs), self, made)
        return make

    def _snapshot_first(self, original: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.recording:
                self.snapshot_parameters()
            return original(*args, **kwargs)
        return call

    def snapshot_parameters(self) -> None:
        """Note every parameter's full name as it is now (names outlive clear_parameters)."""
        t0 = self.clock()
        for name, variable in all_parameters().items():
            self.parameter_names.setdefault(variable, name)
        self.excluded.append((t0, self.clock()))

    def step(self, end_ns: Optional[int] = None) -> None:
        """``nnprofile.step()``: the program marks the end of a step."""
        if not self.capturing:
            if self.recording:
                self._light_step("marks", 0)
            return
        at = self.clock() if end_ns is None else end_ns
        self._break_pass()
        self.events.append(StepMark(at))
        self.loop.mark(at)
        self._count_at_end()
        self.excluded.append((at, self.clock()))

    def _count_steps(self) -> None:
        """A program whose passes are its steps: counted as each pass starts."""
        before = self.steps_done
        self.steps_done = self._base + self.loop.steps()
        if self.steps_done != before:
            self._step_ended()

    def _count_at_end(self) -> None:
        """At a marker: count the steps, note the parameters while they exist, and at a step's end follow
        the schedule (the callers leave this work out of every step)."""
        before = self.steps_done
        self.steps_done = self._base + self.loop.steps()
        if self.steps_done != before:
            if not self._sync_known:
                self.sync, self._sync_known = device_sync(), True
            if self.steps_done - self.window_start <= SITE_STEPS + 1:
                self.snapshot_parameters()  # a dynamic graph makes its parameters in its first steps
            self._step_ended()

    def _light_step(self, kind: str, solver: int) -> None:
        """An update (or a step mark) with no window open: counted, the light way, to know where the steps are."""
        before = self.steps_done
        if self._per_step is None:  # no window has shown the loop yet: the solvers' updates as they come
            if kind == "updates":
                self.loop.hooks(False)
                self.loop.update(solver, 0)
            else:
                self.loop.mark(0)
            self.steps_done = self._base + self.loop.steps()
            if len(self.loop.segments) + len(self.loop.marks) >= FREEZE_AT:
                self._freeze()
        elif kind == self._per_step[0]:
            self._light += 1
            self.steps_done = self._base + self._light // self._per_step[1]
        if self.steps_done != before:
            self._step_ended()

    def counts_reads(self) -> bool:
        """Whether the steps are counted by the iterators' reads now (no window open): in a loop without a
        solver or a step mark, before any window (while its first FREEZE_AT reads may still show a
        pattern), or after windows that showed a fixed number a step."""
        if self._per_step is None:
            return not self.solvers and not self.loop.segments and not self.loop.marks and len(self._reads) < FREEZE_AT
        return self._per_step[0] == "reads"

    def _light_read(self, iterator: int) -> None:
        """An iterator's read with no window open, in a loop whose steps only passes show: a step ends where
        the next one's first read begins. Before any window, the steps are the repeating pattern of the
        iterators read (one read of one iterator a step, or two iterators read in turn, ...)."""
        before = self.steps_done
        if self._per_step is None:
            self._reads.append(iterator)
            found = pattern(self._reads) if len(self._reads) >= MIN_READS else None
            if found is not None:
                offset, period, _ = found
                self.steps_done = max(self.steps_done, self._base + max(0, len(self._reads) - offset - 1) // period)
                if len(self._reads) >= FREEZE_AT:
                    counted = self.steps_done - self._base
                    self._per_step, self._light = ("reads", period), len(self._reads) - offset - counted * period
                    self._base, self._reads = self.steps_done, []
        else:
            self._light += 1
            self.steps_done = self._base + max(0, self._light - 1) // self._per_step[1]
        if self.steps_done != before:
            self._step_ended()

    def _freeze(self) -> None:
        """Count from here on by the pattern the loop showed: updates (or marks) per step, and how many of
        the step under way are done; a loop whose steps only passes show cannot be counted so."""
        rule = self.loop.rule()
        counted = self.loop.steps()
        if rule.kind == "updates":
            done = max(0, len(self.loop.segments) - rule.offset) - counted * rule.period
            self._per_step, self._light = ("updates", rule.period), max(0, done)
        elif rule.kind == "marks":
            self._per_step, self._light = ("marks", 1), 0
        elif rule.kind == "passes" and (reads := self.loop.reads_per_step(rule)):
            self._per_step, self._light = ("reads", reads), self.loop.reads_after(rule)
        else:
            self.countable = False
        self._base += counted
        self.loop = Loop()

    def request_window(self) -> None:
        """A window on demand (a signal): from the next step on. Only a flag: safe in a signal handler."""
        self._asked = True

    def _step_ended(self) -> None:
        """A step has ended (``steps_done`` counts it): close the window whose steps are done, open the next
        where the schedule says, set the hooks for the step to come."""
        self.last_step_ns = self.clock()
        if self.watch is not None and not self.capturing and self.steps_done % WATCH_EVERY == 0:
            self.watch()
        if self.capturing and self.windows.window_done(self.steps_done):
            self._close_window()
        if self._asked:
            self._asked = False
            self.windows.ask(self.steps_done)
        if not self.capturing and self.countable:
            phase, window = self.windows.begin(self.steps_done)
            if phase != OFF:
                self._open_window(window)
        if self.capturing:
            self._switch_hooks(self.windows.hooked(self.steps_done) or self.loop.rule().kind == "passes")

    def _open_window(self, window: int) -> None:
        """A window begins: its events from here, a loop of its own (the steps counted go on)."""
        if self._per_step is None and self.loop.segments:
            self._freeze()
        self.window, self.window_start = window, self.steps_done
        self._reads = []
        self.events, self.excluded = [], []
        if len(self.created) > MAX_CREATED:  # bounded over any number of windows (sources noted anew)
            self.created = {}
        self.loop = Loop()
        self._base = self.steps_done
        self.started_ns = self.clock()
        self.capturing = True
        self.note_sites = True

    def _close_window(self) -> None:
        """The window's steps are done: the hooks off, the program runs on untouched; the window is handed
        over (``on_window``), and its events then forgotten."""
        self._break_pass()
        self.capturing = False
        self._switch_hooks(False)
        self.window_end = self.steps_done
        self.stopped_ns = self.clock()
        self.snapshot_parameters()
        self._freeze()
        if self.on_window is not None:
            self.on_window(self)
        self.events, self.excluded = [], []

    def _switch_hooks(self, on: bool) -> None:
        if on == self.hooks_on:
            return
        import nnabla as nn
        if on:
            nn.set_function_pre_hook(HOOK_KEY, self._pre)
            nn.set_function_post_hook(HOOK_KEY, self._post)
        else:
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
        self.hooks_on = on
        if self.capturing:
            self.events.append(Hooks(on, self.clock()))
            self.loop.hooks(on)

    def stop(self) -> None:
        """Unhook and put everything back (the program's end); a window still open keeps its events."""
        if not self.recording:
            return
        self._break_pass()
        self.recording = False
        self.ended_ns = self.clock()
        if not self.capturing and self._per_step is not None and self._per_step[0] == "reads":
            self.steps_done = max(self.steps_done, self._base + self._light // self._per_step[1])  # the last step ran
        if self.capturing:
            self.stopped_ns = self.ended_ns
        import nnabla as nn
        if self.hooks_on:
            nn.unset_function_pre_hook(HOOK_KEY)
            nn.unset_function_post_hook(HOOK_KEY)
            self.hooks_on = False
        self._patches.undo()
        if self.capturing:
            self.snapshot_parameters()
        self.finished = True


COMMUNICATOR_FACTORIES = ("MultiProcessDataParallelCommunicator", "MultiProcessCommunicator",
                          "MultiProcessDataParalellCommunicator", "Comm", "Dist", "DataParallelCommunicator")


def _one_level_down(namespaces: Sequence[Any]) -> List[Any]:
    """The namespaces, and one level down in them: the dicts they hold and the attributes of the objects
    they hold (a notebook's ``trainer.solver``, ``solvers["gen"]``), where an earlier cell's solver may be."""
    import types
    places: List[Any] = list(namespaces)
    seen = {id(ns) for ns in places}
    for namespace in namespaces:
        for value in list(namespace.values()):
            if isinstance(value, (types.ModuleType, type, types.FunctionType, types.MethodType)):
                continue
            try:
                inner = value if isinstance(value, dict) else getattr(value, "__dict__", None)
            except Exception:  # a proxy that fails on being asked
                continue
            if isinstance(inner, dict) and id(inner) not in seen:
                seen.add(id(inner))
                places.append(inner)
    return places


def _is_communicator(value: Any) -> bool:
    """An NNabla communicator (made before recording started): its type has the collectives."""
    kind = type(value)
    return kind is not TimedCommunicator and not isinstance(value, type) and all(
        callable(getattr(kind, m, None)) for m in ("init", "all_reduce", "bcast", "barrier"))


def communicator_factories() -> List[Callable]:
    """NNabla's communicator factories, each once: bound in nnabla.communicator and
    nnabla.communicators under several names (MultiProcessDataParallelCommunicator, its aliases Comm,
    Dist, MultiProcessCommunicator and the misspelled MultiProcessDataParalellCommunicator, and
    DataParallelCommunicator); none when NNabla cannot import its communicators."""
    try:
        import nnabla.communicators as communicators
    except Exception:
        return []
    seen: Dict[int, Callable] = {}
    for name in COMMUNICATOR_FACTORIES:
        value = getattr(communicators, name, None)
        if value is not None and callable(value):
            seen.setdefault(id(value), value)
    return list(seen.values())


def all_parameters() -> Dict[str, Any]:
    """Every parameter by its full name, whatever scope the program is in now (NNabla's own
    get_parameters names them relative to the current scope)."""
    from nnabla import parameter
    out: Dict[str, Any] = {}

    def walk(scope: Any, path: str) -> None:
        for key, value in list(scope.items()):
            name = "%s/%s" % (path, key) if path else key
            if isinstance(value, dict):
                walk(value, name)
            else:
                out[name] = value
    walk(parameter.root_scope, "")
    return out


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
