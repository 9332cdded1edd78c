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
it comes (``counting``: the iterations of its loop, read off its code), only to know when to stop;
the steps themselves are found afterwards, by the same rule, from the events (``nnprofile.assembly``),
once ``describe`` has turned them into data.

Calls nest (a custom layer's ``forward_impl`` runs NNabla functions, a backward builds and runs
functions, a solver of the program's own computes on NdArrays): every timed call is open on ``_open``
while it runs, and a call that runs while another is open is recorded as its child (its ``depth``).
Only the thread that started the recording is recorded (a loader's thread runs untouched). Every hook
and wrapper is a guest: a failure of nnprofile's own is noted, never raised into the program
(``wrappers``).
"""
from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional, Sequence, Tuple

from ..assembly.events import STATIC, Call, Event, Hooks, IteratorInfo, StepMark
from ..assembly.iterations import Counter
from ..assembly.events import CPU
from ..base.interference import NoProbe, Probe
from ..assembly.steps import Loop
from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at, first_outside
from . import importlock
from .counting import WATCH_EVERY, Counting
from .patching import Patches
from .proxies import TimedCommunicator, TimedFunction, TimedSolver
from .sampler import Sampler
from .schedule import OFF, Schedule, Windows
from .stack import Stacks
from .raw import EagerInfo, RawSolver, device_sync  # noqa: F401 (the recorder's vocabulary)
from .wrappers import Wrappers

HOOK_KEY = "nnprofile"
_getframe = sys._getframe
_ident = threading.get_ident
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
# Only for steps that calls other than passes show (updates, reads, marks): without hooks, passes are unseen.
CALIBRATION = (False, False, True, True) * 5
MIN_PAIRS = 3  # pairs the estimate needs (``nnprofile.base.hookcost.measured_in_program``)
MAX_CREATED = 20_000  # functions whose source is remembered across windows
_nn: Any = None       # nnabla, once recording started (no import in a hook)


class Recorder(Wrappers, Counting):
    """Hooks into NNabla while started; keeps the raw events of a program's run.

    ``namespaces``: further namespaces (a notebook's) in which NNabla's factories are replaced,
    and in which solvers made before recording started are replaced by timed ones.
    """

    SITE_STEPS = SITE_STEPS

    def __init__(self, skip_first: int = 1, active: int = 20,
                 clock: Optional[Callable[[], int]] = None, namespaces: Tuple[Any, ...] = (),
                 calibrate: bool = True, schedule: Optional[Schedule] = None,
                 on_window: Optional[Callable[["Recorder"], None]] = None, probe: Any = None):
        self.schedule = schedule or Schedule(warmup=max(0, skip_first), active=max(1, active))
        self.skip_first, self.active = self.schedule.warmup, self.schedule.active
        self.calibrate = calibrate
        self.windows = Windows(self.schedule, CALIBRATION if calibrate else ())
        self.on_window = on_window   # called as each window closes, with its events still here
        self.on_active: Optional[Callable[["Recorder"], None]] = None  # called when a window's kept steps are done
        self._active_handed = False
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
        self.real_clock = clock is None
        # The kernel's accounting of other work (``nnprofile.base.interference``): read around every timed call (its
        # involuntary context switches) and as steps end (the time waited for a CPU). A scripted clock has none.
        self.probe = probe if probe is not None else (Probe() if clock is None else NoProbe())
        # Each call's marks: the thread's CPU time (short of its wall time where it was kept from running); on an
        # asynchronous device (its waits are no CPU time) its involuntary context switches (``_marks_for``).
        self._mark: Callable[[], int] = self.probe.cpu_ns
        # a wait (a read, a log, a collective): the involuntary context switches of the process's threads (the loader
        # thread it waits for among them)
        self._waits: Callable[[], int] = self.probe.process_switches
        self.marks = CPU if self.probe.available else ""
        self.waits: List[Tuple[int, int, int]] = []  # (ns, waited ns, switches so far) as steps ended, in a window
        self._gc_start = 0           # a collection nnprofile's own allocation began, under way
        self.namespaces = namespaces
        self.events: List[Event] = []
        self.recording = False
        self.finished = False  # the schedule is done: hooks removed
        self.started_ns = 0
        self.stopped_ns = 0
        self.solvers: List[RawSolver] = []
        self.iterators: List[IteratorInfo] = []
        self._iterator_index: Dict[int, int] = {}
        self._iterator_objects: List[Any] = []
        self._iterators_made: Dict[int, str] = {}  # id(iterator) -> the program's line that made it
        self._iterators_named: Dict[int, str] = {}  # id(iterator) -> the name the program stored it under
        self._read_stack: Any = None
        self.eager: Dict[Hashable, EagerInfo] = {}
        self.loop = Loop()
        self.stacks = Stacks()
        self.counter = Counter(self.stacks.codes)
        self.fast: Any = None        # the loop's iterations counted from its own frame, once the loop is known
        self._toggles: Dict[str, List[Tuple[Any, str, Any, Any]]] = {}  # wrappers on in windows (or as needed)
        self._toggled: Dict[str, bool] = {}
        self.lean = False            # between windows, the loop known: updates counted by its frame alone
        self._quiet_until = 0        # between windows: the step count before which a step's end needs nothing
        self._left = 0               # updates in a row outside the loop kept
        self._outside: List[Tuple[Any, Optional[str]]] = []  # the calls since the program left it (stack, key)
        self._counter_base = 0       # steps counted before the count of iterations began
        self._marked = False         # the program marks its steps (nnprofile.step())
        self.steps_done = 0
        self._open: List[Any] = []   # the calls open now: (function, start) for a hooked one, else a marker
        self._thread = _ident()      # the thread recorded (the program's own)
        self.faults: Dict[str, List[Any]] = {}  # what could not be recorded: text, count, traceback
        self._own_solvers: Dict[int, int] = {}  # id(a solver of the program's own class) -> its index
        self._patched_classes: set = set()
        self._subclasses_seen = -1
        self._solver_base: Any = None
        self._python_function: Any = None
        self._pass_site: Any = None
        self._pass_functions: set = set()
        self._pass_first: Any = None
        self._pass_last: Any = None
        self._pass_start = 0
        self._dynamic_pass = False
        self._dynamic_place: Any = None  # where in the loop's body the current run of auto_forward calls is built
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
        # The program's own lines between NNabla's calls, sampled in windows (only on the real clock: a test's
        # scripted clock must not be read from another thread).
        self.sampler: Optional[Sampler] = Sampler(self) if clock is None and os.environ.get(
            "NNPROFILE_SAMPLER", "1") != "0" else None  # NNPROFILE_SAMPLER=0: none (make bench weighs its cost)
        self._patches = Patches()
        self._import_locks: Any = None  # importlib's own _blocking_on, while the reentrant one stands in
        self._in_monitor = False
        self._skip = ("nnabla", "nnabla_ext", "nnprofile")  # modules whose frames are not the program's
        self.ndarray_type: Any = None
        # Waits for the device before each reading on an asynchronous backend (CUDA). The
        # program sets its context once running: it is looked up at each step's end.
        self.sync: Optional[Callable[[], None]] = None
        self._sync_known = False

    # -- hooks (called by NNabla from C++: nothing may be raised from here) ---------------------------

    def _pre(self, f: Any) -> None:
        try:
            if _ident() == self._thread:
                if self.sync is not None:
                    self.sync()  # what ran before this function is not its time
                self._open.append((f, self.clock(), self._mark()))
        except BaseException as e:  # noqa: B036 (a Ctrl-C is given back by hook_fault)
            self.hook_fault("the function pre-hook", e)

    def _start_of(self, f: Any) -> Optional[Tuple[Any, int, int]]:
        """``f``'s open call (f, its start, the switches then), taken off the open calls (with any call above it that
        never ended)."""
        opened = self._open
        for i in range(len(opened) - 1, -1, -1):
            top = opened[i]
            if type(top) is tuple and top[0] == f:
                del opened[i:]
                return top
            if top is not None and type(top) is not tuple:  # a wrapper's call, open around f: f began before it
                return None
        return None

    def _post(self, f: Any) -> None:
        try:
            if _ident() != self._thread:
                return
            if self.sync is not None:
                self.sync()
            end = self.clock()
            m1 = self._mark()
            opened = self._open
            top = opened[-1] if opened else None
            if type(top) is tuple and top[0] == f:  # (the usual case: f's own call on top; NNabla hands each hook
                # a new Python object for the same function)
                opened.pop()
            else:
                top = self._start_of(f)
                if top is None:
                    return
            _, start, m0 = top
            if opened:
                self.events.append(Call(f, start, end, None, STATIC, len(opened), None, m0, m1))
                return
            frame = _getframe(1)
            site = (frame.f_code, frame.f_lasti)
            call = Call(f, start, end, site, STATIC, 0, None, m0, m1)
            self.events.append(call)
            if site != self._pass_site or f in self._pass_functions:  # a new pass starts
                self._close_pass()
                self._pass_site, self._pass_functions = site, {f}
                self._pass_first, self._pass_start = f, start
                self._pass_last = f
                self._check_subclasses()
                call.stack = self._take(frame)
                self._moved(call.stack, "other", end, frame)
                self.excluded.append((end, self.clock()))  # nnprofile's own work inside the pass
            else:
                self._pass_functions.add(f)
                self._pass_last = f
        except BaseException as e:  # noqa: B036
            self.hook_fault("the function post-hook", e)

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

    def _break_pass(self) -> None:
        self._close_pass()

    # -- start, steps, stop ----------------------------------------------------

    def start(self) -> "Recorder":
        """Hook into NNabla (everything put back, and the error raised, where that fails half way)."""
        try:
            return self._start()
        except BaseException:
            self._patches.undo()
            importlock.uninstall(self._import_locks)
            self.recording = False
            raise

    def _start(self) -> "Recorder":
        global _nn
        if type(self.probe) is Probe:  # its files are the thread's that made it: the program's, that starts it
            self.probe = Probe()
            self._mark, self._waits = self.probe.cpu_ns, self.probe.process_switches
        import nnabla as nn
        import nnabla.function as function_module
        import nnabla.parameter as parameter_module
        import nnabla.solver as solver_module
        _nn = nn
        self._thread = _ident()
        self.stacks.around(_getframe(1))
        self._solver_base = solver_module.Solver
        self._python_function = getattr(function_module, "PythonFunction", None)
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
        self._import_locks = importlock.install()  # (see importlock: NNabla imports on its hot paths)
        self._patch_functions(self._patches)
        self._patch_classes()
        self._wrap_existing_solvers()
        try:
            self._check_subclasses()
        except Exception as e:  # the program's own classes then run untimed; the rest is recorded
            self.fault("looking for the program's own solver and function classes", e)
        self.recording = True
        if self.real_clock:  # (a test's scripted clock is read only where the test says)
            gc.callbacks.append(self._collected)
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
        self._thread = _ident()
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
        self._patch_toggled("reads", data_iterator.DataIterator, "next", self._timed_next)
        self._patches.attribute(data_iterator.DataIterator, "__init__",
                                self._made_iterator(data_iterator.DataIterator.__init__))
        for name in MONITOR_CLASSES:
            cls = getattr(monitor, name, None)
            if cls is not None and "add" in vars(cls):
                self._patch_toggled("monitors", cls, "add", self._timed_add)

    def _wrap_existing_solvers(self) -> None:
        """Solvers and communicators the program made before recording started (a notebook's earlier
        cell), where a namespace given holds them: replaced by timed ones for the recording."""
        import nnabla.solver as solver_module
        made: Dict[int, Tuple[Any, Any]] = {}
        places = _one_level_down(self.namespaces)
        for namespace in places:
            for value in list(namespace.values()):
                if type(value) is not TimedSolver and isinstance(value, solver_module.Solver) \
                        and (type(value).__module__ or "").startswith("nnabla"):  # the program's own: patched
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
        self.counter.expects_updates = True  # its loop is the one that updates (``Counter``)
        self.solvers.append(RawSolver(solver, str(getattr(solver, "name", type(solver).__name__)),
                                      created="%s:%d" % where if where is not None else None))
        return TimedSolver(solver, self, len(self.solvers) - 1)

    def _tracking_factory(self, factory: Callable, track: Callable[[Any], Any], kind: str) -> Callable:
        """``factory`` whose products, made while recording, are timed (``track``: a solver's or a
        communicator's proxy)."""
        def make(*args: Any, **kwargs: Any) -> Any:
            made = factory(*args, **kwargs)
            if not self.recording:
                return made
            try:
                return track(made)
            except Exception as e:
                self.fault("a new %s" % kind, e)
                return made
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
            function = factory(*args, **kwargs)
            try:
                return TimedFunction(function, self, made)
            except Exception as e:
                self.fault("a new function", e)
                return function
        return make

    def _snapshot_first(self, original: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.recording:
                self.snapshot_parameters()
                self.past_the_loop(_getframe(1))
            return original(*args, **kwargs)
        call.__name__, call.__doc__ = getattr(original, "__name__", "call"), getattr(original, "__doc__", None)
        return call

    def snapshot_parameters(self) -> None:
        """Note every parameter's full name as it is now (names outlive clear_parameters)."""
        t0 = self.clock()
        try:
            for name, variable in all_parameters().items():
                self.parameter_names.setdefault(variable, name)
        except Exception as e:
            self.fault("reading the parameters' names", e)
        self.excluded.append((t0, self.clock()))

    def step(self, end_ns: Optional[int] = None) -> None:
        """``nnprofile.step()``: the program marks the end of a step."""
        try:
            if _ident() != self._thread or not self.recording:
                return
            self._marked = True
            if not self.capturing:
                self._light_step("marks", 0)
                return
            at = self.clock() if end_ns is None else end_ns
            self._break_pass()
            self.events.append(StepMark(at, self.stacks.take(_getframe(1))))
            self.loop.mark(at)
            self._count_at_end()
            self.excluded.append((at, self.clock()))
        except Exception as e:
            self.fault("nnprofile.step()", e)

    def request_window(self) -> None:
        """A window on demand (a signal): from the next step on. Only a flag: safe in a signal handler."""
        self._asked = True
        try:
            self._toggle("reads", True)  # the step the window begins at is seen where it begins
        except Exception:
            pass

    def _step_ended(self, late: bool = False) -> None:
        """A step has ended (``steps_done`` counts it): close the window whose steps are done, open the next
        where the schedule says, set the hooks for the step to come. ``late``: seen at an update, after the
        step that follows began (its reads were not watched): a window asked for begins a step later."""
        self.last_step_ns = self.clock()
        if self.capturing:
            self._note_wait(self.last_step_ns)
        if self.steps_done < self._quiet_until and not self._asked and not self.capturing:
            return  # between windows, nothing is due before then
        if self.capturing and self.steps_done - self.window_start <= SITE_STEPS + 1:
            self.snapshot_parameters()  # a dynamic graph makes its parameters in its first steps
        if self.watch is not None and not self.capturing and self.steps_done % WATCH_EVERY == 0:
            self.watch()
        if self.capturing and self.windows.window_done(self.steps_done):
            self._close_window()
        elif self.capturing and not self._active_handed and self.on_active is not None \
                and self.windows.active_done(self.steps_done):
            self._active_handed = True  # its kept steps done: written now, not after the steps for the hooks' cost
            try:
                self.on_active(self)
            except Exception as e:
                self.fault("handing over window %d" % self.window, e)
        if self._asked:
            self._asked = False
            self.windows.ask(self.steps_done + (1 if late else 0))
        if not self.capturing and self.countable:
            phase, window = self.windows.begin(self.steps_done)
            if phase != OFF:
                self._open_window(window)
        if self.capturing:
            self._switch_hooks(self.windows.hooked(self.steps_done) or self._passes_only())
        self._sync_wrappers()
        self._quiet_until = self._next_due() if not self.capturing else 0

    def _passes_only(self) -> bool:
        """The steps show only in passes (no update, read or mark in the window): the hooks stay on."""
        if self._by_iterations():
            return not self.loop.segments and not self.loop.read_at and not self.loop.marks and not self.solvers
        return self.loop.rule().kind == "passes"

    def _open_window(self, window: int) -> None:
        """A window begins: its events from here, a loop of its own (the steps counted go on)."""
        if self._per_step is None and self.loop.segments:
            self._freeze()
        self.window, self.window_start = window, self.steps_done
        self._reads = []
        self._patch_subclasses()
        self.events, self.excluded, self.waits = [], [], []
        if len(self.created) > MAX_CREATED:  # bounded over any number of windows (sources noted anew)
            self.created = {}
        self.loop = Loop()
        self._base = self.steps_done
        self.started_ns = self.clock()
        self._note_wait(self.started_ns)
        self.capturing = True
        self._active_handed = False
        self.note_sites = True
        if self.sampler is not None:
            self.sampler.clear()
            self.sampler.start()
        self._sync_wrappers()

    def _close_window(self) -> None:
        """The window's steps are done: the hooks off, the program runs on untouched; the window is handed
        over (``on_window``), and its events then forgotten."""
        self._break_pass()
        self.capturing = False
        if self.sampler is not None:
            self.sampler.stop()
        self._switch_hooks(False)
        self.window_end = self.steps_done
        self.stopped_ns = self.clock()
        self._note_wait(self.stopped_ns)
        self.snapshot_parameters()
        self._freeze()
        self._sync_wrappers()
        if self.on_window is not None:
            try:
                self.on_window(self)
            except Exception as e:  # the program goes on, whatever happened to the window's files
                self.fault("handing over window %d" % self.window, e)
        self.events, self.excluded = [], []

    def _collected(self, phase: str, info: Any) -> None:
        """Python's garbage collector, run by an allocation: where nnprofile's own code allocated (an event, a stack),
        or NNabla inside a pass (the object it hands each hook: the program's own pass allocates none), its pause is
        nnprofile's work, left out of every call, pass and step like the rest of it (a collection of the window's
        many events once read 30 ms inside a 0.1 ms function). Where the program allocated, it is its time."""
        try:
            if not self.capturing or _ident() != self._thread:
                return
            if phase == "start":
                frame = _getframe(1)
                ours = frame is not None and (frame.f_globals.get("__name__", "").startswith("nnprofile.")
                                              or (frame.f_code, frame.f_lasti) in self._site_phases)
                self._gc_start = self.clock() if ours else 0
            elif self._gc_start:
                self.excluded.append((self._gc_start, self.clock()))
                self._gc_start = 0
        except Exception as e:
            self.fault("timing a garbage collection", e)

    def _note_wait(self, at_ns: int) -> None:
        """The time the thread has waited for a CPU so far, as a step ends (what other work took of each step)."""
        try:
            waited = self.probe.waited_ns()
            if waited is not None:
                self.waits.append((at_ns, int(waited), int(self.probe.switches())))
        except Exception as e:
            self.fault("reading what other work took", e)

    def past_the_loop(self, frame: Any) -> None:
        """A call of the program's outside its step loop while the steps that measure the hooks' cost run without them:
        the loop has ended (the program loads its best parameters, evaluates, saves): the hooks go back on, so that
        what it does after its last step is recorded (it is in no step)."""
        try:
            if self.capturing and not self.hooks_on and self.calibrate and self.counter.loop is not None \
                    and self._by_iterations() and self._outside_loop(frame):
                self._switch_hooks(True)
        except Exception as e:
            self.fault("following the program past its loop", e)

    def _outside_loop(self, frame: Any) -> bool:
        loop = self.counter.loop
        if loop is None:
            return False
        code, head = self.stacks.objects[loop[0]], loop[1]
        end = next((e for h, e in self.stacks.codes[loop[0]].loops if h == head), head)
        depth = 0
        while frame is not None and depth < 64:
            if frame.f_code is code:
                return not (head <= frame.f_lasti <= end)
            frame, depth = frame.f_back, depth + 1
        return True

    def _switch_hooks(self, on: bool) -> None:
        if on == self.hooks_on:
            return
        nn = _nn
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
        try:
            self._break_pass()
            if self._by_iterations() and self.counter.inside:  # the loop's last iteration ended with the program
                self.counter.inside = False
                self.steps_done = max(self.steps_done, self._counter_base + self.counter.completed)
                if self.capturing and self.windows.window_done(self.steps_done):
                    self._close_window()
        except Exception as e:  # what was recorded stays; everything is put back below, whatever happened
            self.fault("ending the recording", e)
        self.recording = self.lean = False
        if self.sampler is not None:
            self.sampler.stop()
        self.ended_ns = self.clock()
        if not self.capturing and self._per_step is not None and self._per_step[0] == "reads":
            self.steps_done = max(self.steps_done, self._base + self._light // self._per_step[1])  # the last step ran
        if self.capturing:
            self.stopped_ns = self.ended_ns
            self._note_wait(self.ended_ns)
        if self.hooks_on:
            try:
                _nn.unset_function_pre_hook(HOOK_KEY)
                _nn.unset_function_post_hook(HOOK_KEY)
            except Exception as e:
                self.fault("removing the hooks", e)
            self.hooks_on = False
        self._patches.undo()
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        importlock.uninstall(self._import_locks)
        self._import_locks = None
        if self.capturing:
            self.snapshot_parameters()
        self.stacks.release()
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
