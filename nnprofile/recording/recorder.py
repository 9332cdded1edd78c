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
functions, a solver of the program's own computes on NdArrays): every timed call is open on ``open_calls``
while it runs, and a call that runs while another is open is recorded as its child (its ``depth``).
Only the thread that started the recording is recorded (a loader's thread runs untouched). Every hook
and wrapper is a guest: a failure of nnprofile's own is noted, never raised into the program
(``wrappers``).
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, Hashable, Iterator, List, Optional, Tuple

from ..assembly.events import STATIC, Call, Event, IteratorInfo
from ..base.interference import NoProbe, Probe
from ..assembly.steps import Loop
from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at
from . import importlock
from .counting import StepCount
from .faults import Faults
from .waits import CpuWaits
from .toggles import Toggles
from .patching import Patches
from .sampler import Sampler
from .schedule import OFF, Schedule, Windows
from .stack import Stacks
from .raw import EagerInfo, RawSolver, device_sync  # noqa: F401 (the recorder's vocabulary)
from .wrappers import Wrappers
from .host import RecorderParts
from .installing import Installing
from .windowing import HOOK_KEY, MAX_CREATED, SITE_STEPS, Windowing  # noqa: F401 (the recorder's vocabulary)
from .bindings import all_parameters, communicator_factories

_getframe = sys._getframe
_ident = threading.get_ident
# After the kept steps, a few more measure what the hooks cost in the program itself: CALIBRATION, steps
# without the function hooks (False) and with them (True). The second step without the hooks is the
# program as it runs unrecorded (the first carries what the hooks before it left in the caches, and their
# switching off); the step with the hooks after it, what they add; the next, what a step with the hooks
# carries into the one after (``nnprofile.assembly.hookfit``). The kept steps stay one run of the loop:
# no step of theirs is left without the hooks (a validation every few steps would fall into those).
# Only for steps that calls other than passes show (updates, reads, marks): without hooks, passes are unseen.
CALIBRATION = (False, False, True, True) * 5
MIN_PAIRS = 3  # pairs the estimate needs (``nnprofile.base.hookcost.measured_in_program``)
_nn: Any = None  # nnabla, once recording started (no import in a hook)


class Recorder(Installing, Windowing, Wrappers):
    """Hooks into NNabla while started; keeps the raw events of a program's run.

    ``namespaces``: further namespaces (a notebook's) in which NNabla's factories are replaced,
    and in which solvers made before recording started are replaced by timed ones.
    """

    SITE_STEPS = SITE_STEPS

    def __init__(
        self,
        skip_first: int = Schedule.warmup,
        active: int = Schedule.active,
        clock: Optional[Callable[[], int]] = None,
        namespaces: Tuple[Any, ...] = (),
        calibrate: bool = True,
        schedule: Optional[Schedule] = None,
        on_window: Optional[Callable[["Recorder"], None]] = None,
        probe: Any = None,
    ):
        self.faults = Faults()  # what could not be recorded
        self.schedule = schedule or Schedule(warmup=max(0, skip_first), active=max(1, active))
        self.skip_first, self.active = self.schedule.warmup, self.schedule.active
        self.calibrate = calibrate
        self.windows = Windows(self.schedule, CALIBRATION if calibrate else ())
        self._init_windows(on_window)
        self._init_clock(clock, probe)
        self.namespaces = namespaces
        self._init_program()
        self._init_passes()

    def _init_clock(self, clock: Optional[Callable[[], int]], probe: Any) -> None:
        self.clock: Callable[[], int] = clock or time.perf_counter_ns
        self.real_clock = clock is None
        # The kernel's accounting of other work (``nnprofile.base.interference``): read around every timed call (its
        # involuntary context switches) and as steps end (the time waited for a CPU). A scripted clock has none.
        chosen = probe if probe is not None else (Probe() if clock is None else NoProbe())
        self.cpu = CpuWaits(chosen, self.clock, self.faults)
        self._mark = self.cpu.mark  # (the hooks' own copy of a call's mark: one lookup fewer in the hot path)
        self._gc_start = 0  # a collection nnprofile's own allocation began, under way
        self._deferred: Optional[BaseException] = None  # a Ctrl-C Python would have dropped, for the next hook

    def _init_program(self) -> None:
        """What the recorder learns of the program: its solvers, iterators, loop, wrappers, faults."""
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
        self.steps = StepCount(self)  # the live count of the program's steps
        self._quiet_until = 0  # between windows: the step count before which a step's end needs nothing
        self.open_calls: List[Any] = []  # the calls open now: (function, start) for a hooked one, else a marker
        self.elsewhere = 0  # functions run by other threads than the recorded one (not recorded)
        self.program_thread = _ident()  # the thread recorded (the program's own)
        self._own_solvers: Dict[int, int] = {}  # id(a solver of the program's own class) -> its index
        self._patched_classes: set = set()
        self._subclasses_seen = -1
        self._solver_base: Any = None
        self._python_function: Any = None

    def _init_passes(self) -> None:
        """The pass under way, the sites seen, the names and sources kept, nnprofile's own stretches."""
        self._pass_site: Any = None
        self._pass_functions: set = set()
        self._pass_first: Any = None
        self._pass_last: Any = None
        self._pass_start = 0
        self._dynamic_pass = False
        self._dynamic_place: Any = None  # where in the loop's body the current run of auto_forward calls is built
        self._recent_dynamic: set = set()  # functions made under auto_forward since the last update
        self.site_phases: Dict[Any, str] = {}
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
        self.sampler: Optional[Sampler] = (
            Sampler(self) if self.real_clock and os.environ.get("NNPROFILE_SAMPLER", "1") != "0" else None
        )  # NNPROFILE_SAMPLER=0: none (make bench weighs its cost)
        self._patches = Patches()
        self.toggles = Toggles(self._patches)  # the monitors' and iterators' wrappers, off between windows
        self._import_locks: Any = None  # importlib's own _blocking_on, while the reentrant one stands in
        self._in_monitor = False
        self._skip: Tuple[str, ...] = (
            "nnabla",
            "nnabla_ext",
            "nnprofile",
        )  # modules whose frames are not the program's
        self.ndarray_type: Any = None
        # Waits for the device before each reading on an asynchronous backend (CUDA). The
        # program sets its context once running: it is looked up at each step's end.
        self.sync: Optional[Callable[[], None]] = None
        self._sync_known = False

    # -- hooks (called by NNabla from C++: nothing may be raised from here) ---------------------------

    def _pre(self, f: Any) -> None:
        try:
            if self._deferred is not None:  # a Ctrl-C (or a SIGTERM) that landed in a garbage collection's callback
                signum = signal.SIGTERM if getattr(self._deferred, "exit_code", 130) == 143 else signal.SIGINT
                self._deferred = None
                _thread.interrupt_main(signum)
            if _ident() == self.program_thread:
                if self.sync is not None:
                    self.sync()  # what ran before this function is not its time
                self.open_calls.append((f, self.clock(), self._mark()))
            else:
                self.elsewhere += 1  # a function another thread ran: not recorded, but counted and said
        except BaseException as e:  # noqa: B036 (a Ctrl-C is given back by faults.in_hook)
            self.faults.in_hook("the function pre-hook", e)

    def _start_of(self, f: Any) -> Optional[Tuple[Any, int, int]]:
        """``f``'s open call (f, its start, the switches then), taken off the open calls (with any call above it that
        never ended)."""
        opened = self.open_calls
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
            if _ident() != self.program_thread:
                return
            if self.sync is not None:
                self.sync()
            end = self.clock()
            m1 = self._mark()
            opened = self.open_calls
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
                call.stack = self.steps.take(frame)
                self.steps.moved(call.stack, "other", end, frame, begun=(start, m0, m1))
                self.aside(end)  # nnprofile's own work inside the pass
            else:
                self._pass_functions.add(f)
                self._pass_last = f
        except BaseException as e:  # noqa: B036
            self.faults.in_hook("the function post-hook", e)

    def _phase(self, site: Any) -> str:
        phase = self.site_phases.get(site)
        if phase is None:
            method, _ = call_at(site[0], site[1], FORWARD_NAMES + BACKWARD_NAMES)
            phase = self.site_phases[site] = "backward" if method in BACKWARD_NAMES else "forward"
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
                self.steps.count_passes()
        self._dynamic_pass = False

    def _break_pass(self) -> None:
        self._close_pass()

    def _find_sync(self) -> None:
        """At the first update or step mark (the program has set its context by then): the device's wait, on an
        asynchronous device (CUDA), read before each reading of the clock; a call's marks are then its context
        switches (its waits for the device are no CPU time)."""
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
            if self.sync is not None:
                self.cpu.on_async_device()
                self._mark = self.cpu.mark

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
        self.cpu.in_this_thread()  # the program's, that starts it
        self._mark = self.cpu.mark
        import nnabla as nn
        import nnabla.function as function_module
        import nnabla.parameter as parameter_module
        import nnabla.solver as solver_module

        _nn = self._nn = nn
        self.program_thread = _ident()
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
                replacements[id(factory)] = (factory, self._tracking_factory(factory, self._track_solver, "solver"))
        for name in ("clear_parameters", "load_parameters"):
            original = getattr(parameter_module, name, None)
            if original is not None:
                replacements[id(original)] = (original, self._snapshot_first(original))
        for factory in communicator_factories():
            replacements[id(factory)] = (
                factory,
                self._tracking_factory(factory, self._track_communicator, "communicator"),
            )
        self._patches.everywhere(replacements, self.namespaces)
        self._import_locks = importlock.install()  # (see importlock: NNabla imports on its hot paths)
        self._patch_functions(self._patches)
        self._patch_classes()
        self._wrap_existing_solvers()
        try:
            self._check_subclasses()
        except Exception as e:  # the program's own classes then run untimed; the rest is recorded
            self.faults.add("looking for the program's own solver and function classes", e)
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
        self.program_thread = _ident()
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

    def snapshot_parameters(self) -> None:
        """Note every parameter's full name as it is now (names outlive clear_parameters)."""
        t0 = self.clock()
        try:
            for name, variable in all_parameters().items():
                self.parameter_names.setdefault(variable, name)
        except Exception as e:
            self.faults.add("reading the parameters' names", e)
        self.aside(t0)

    def stop(self) -> None:
        """Unhook and put everything back (the program's end); a window still open keeps its events. Again after a
        stop that a second Ctrl-C cut short, the sampler at least is off."""
        if not self.recording:
            if self.sampler is not None:
                self.sampler.stop()
            return
        try:
            self._break_pass()
            if self.steps.last_iteration() and self.capturing and self.windows.window_done(self.steps.done):
                self._close_window()
        except Exception as e:  # what was recorded stays; everything is put back below, whatever happened
            self.faults.add("ending the recording", e)
        self.recording = self.steps.by_frame_only = False
        if self.sampler is not None:
            self.sampler.stop()
        self.ended_ns = self.clock()
        if not self.capturing:
            self.steps.last_reads()
        if self.capturing:
            self.stopped_ns = self.ended_ns
            self.cpu.note(self.ended_ns)
        if self.hooks_on:
            try:
                _nn.unset_function_pre_hook(HOOK_KEY)
                _nn.unset_function_post_hook(HOOK_KEY)
            except Exception as e:
                self.faults.add("removing the hooks", e)
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


def _as_parts(recorder: Recorder) -> RecorderParts:
    """(For mypy: the Recorder is what its mixed-in parts take it for, member by member.)"""
    return recorder
