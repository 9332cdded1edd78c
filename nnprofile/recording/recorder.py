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
- Parameter names are read while the program runs (at step ends, and before ``clear_parameters``): a program
  that clears or replaces its parameters keeps the names its layers had.

Recording follows torch.profiler's schedule: ``skip_first`` steps recorded and set aside, ``active`` kept, a few
more without the function hooks (what they cost in the program), then everything is unhooked and the program runs on
at full speed. The loop's structure is followed as it comes (``counting``: the iterations of its loop, read off its
code), only to know when to stop; the steps themselves are found afterwards, by the same rule, from the events
(``nnprofile.assembly``), once ``capturing`` has turned them into data.

Calls nest (a custom layer's ``forward_impl`` runs NNabla functions, a backward builds and runs functions, a solver
of the program's own computes on NdArrays): every timed call is open on ``open_calls`` while it runs, and a call
that runs while another is open is recorded as its child (its ``depth``). Only the thread that started the recording
is recorded (a loader's thread runs untouched). Every hook and wrapper is a guest: a failure of nnprofile's own is
noted, never raised into the program (``faults``).

The Recorder owns its parts, each with state of its own and talking back through a small protocol of ``parts``:
the function hooks (``hooks.FunctionHooks``), the pass under way (``passes.PassTracker``), the functions run now
(``wrappers.FunctionCalls``), the iterators and monitors (``inputs.Inputs``), the solvers and communicators
(``solvers.Solvers``), the count of steps (``counting.StepCount``), the keeper of the windows
(``windowing.WindowKeeper``), the readings of other work (``waits.CpuWaits``), the wrappers off between windows
(``toggles.Toggles``), the faults (``faults.Faults``) and the sampler of the program's own lines
(``sampler.Sampler``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..assembly.events import StepMark
from ..base.interference import NoProbe, Probe
from ..assembly.steps import Loop
from . import importlock
from .counting import StepCount
from .linecount import LineCount
from .faults import Faults
from .waits import CpuWaits
from .toggles import Toggles
from .patching import Patches
from .sampler import Sampler
from .schedule import Schedule, Windows
from .stack import Stacks
from .raw import EagerInfo, RawSolver, device_sync  # noqa: F401 (the recorder's vocabulary)
from .wrappers import FunctionCalls
from .hooks import HOOK_KEY, FunctionHooks
from .inputs import Inputs
from .solvers import Solvers
from .passes import PassTracker
from .passtimes import PassTimes
from .windowing import MAX_CREATED, SITE_STEPS, WindowKeeper  # noqa: F401 (the recorder's vocabulary)
from .window import Window
from .bindings import all_parameters, communicator_factories
from .building import Builds, makers

_getframe = sys._getframe
_ident = threading.get_ident
# After the kept steps, steps without the function hooks (False): the program as it runs unrecorded, whose step and
# passes the kept steps' figures are scaled to (``nnprofile.assembly.lean``; the first, left out, carries what the
# hooks left in the caches). Only for steps that calls other than passes show (updates, reads, marks).
CALIBRATION = (False,) * 20
_nn: Any = None  # nnabla, once recording started (no import in a hook)


class Recorder:
    """Hooks into NNabla while started; keeps the raw events of a program's run.

    ``namespaces``: further namespaces (a notebook's) in which NNabla's factories are replaced,
    and in which solvers made before recording started are replaced by timed ones.
    """

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
        self.capturing = False  # a window is open: its events are kept
        self.hooks_on = False
        self.past = False  # the hooks on again past the loop in the steps without them (``past_the_loop``)
        self.shared = False  # another thread of the program ran NNabla functions: the hooks are off for good
        self.ended_ns = 0  # when the recording ended (the program's end)
        self._init_clock(clock, probe)
        self.namespaces = namespaces
        self._init_program()
        self._init_passes()
        # where the schedule has got: the window open (or the last), what is due next
        self.windowing = WindowKeeper(self, Windows(self.schedule, CALIBRATION if calibrate else ()), on_window)

    def _init_clock(self, clock: Optional[Callable[[], int]], probe: Any) -> None:
        self.clock: Callable[[], int] = clock or time.perf_counter_ns
        self.real_clock = clock is None
        # The kernel's accounting of other work (``nnprofile.base.interference``): read around every timed call (its
        # involuntary context switches) and as steps end (the time waited for a CPU). A scripted clock has none.
        chosen = probe if probe is not None else (Probe() if clock is None else NoProbe())
        self.cpu = CpuWaits(chosen, self.clock, self.faults)
        self._mark = self.cpu.mark  # (the hooks' own copy of a call's mark: one lookup fewer in the hot path)

    def _init_program(self) -> None:
        """What the recorder learns of the program: its solvers, iterators, loop, wrappers, faults."""
        self.recording = False
        self.finished = False  # the schedule is done: hooks removed
        self.window = Window()  # the window open, or the last closed (the recording's start before the first)
        self.loop = Loop()
        self.stacks = Stacks()
        self.steps = StepCount(self)  # the live count of the program's steps
        self.lines = LineCount(self.steps.traced)  # between windows, a loop seen only in its passes: its lines
        self._auto_forward: Callable[[], bool] = lambda: False  # nnabla's, once started
        self.builds = Builds(self.clock, self._mark_now, self._building_here, ("nnabla", "nnabla_ext", "nnprofile"))
        self.open_calls: List[Any] = []  # the calls open now: (function, start) for a hooked one, else a marker
        self.elsewhere = 0  # functions run by other threads than the recorded one (not recorded)
        self.program_thread = _ident()  # the thread recorded (the program's own)

    def _init_passes(self) -> None:
        """The pass under way, the sites seen, the names and sources kept, nnprofile's own stretches."""
        self.passes = PassTracker(self)  # the pass under way, the call sites of passes seen
        self.pass_times = PassTimes(self)  # the program's own pass calls, where it was compiled so
        self.hooks = FunctionHooks(self)  # NNabla's function hooks
        # Parameter variable -> its full name, as seen while the program ran; function -> source.
        self.parameter_names: Dict[Any, str] = {}
        self.note_sites = True
        # The program's own lines between NNabla's calls, sampled in windows (only on the real clock: a test's
        # scripted clock must not be read from another thread).
        self.sampler: Optional[Sampler] = (
            Sampler(self) if self.real_clock and os.environ.get("NNPROFILE_SAMPLER", "1") != "0" else None
        )  # NNPROFILE_SAMPLER=0: none (make bench weighs its cost)
        self._patches = Patches()
        self.toggles = Toggles(self._patches)  # the monitors' and iterators' wrappers, off between windows
        self._import_locks: Any = None  # importlib's own _blocking_on, while the reentrant one stands in
        # modules whose frames are not the program's
        self._skip: Tuple[str, ...] = ("nnabla", "nnabla_ext", "nnprofile")
        self.functions = FunctionCalls(self, self._skip)  # its functions run now, and where its functions are made
        self.inputs = Inputs(self, self._skip)  # the program's iterators and monitors
        self.solver_calls = Solvers(self, self._skip)  # its solvers and communicators
        self.solvers = self.solver_calls.solvers  # (the list the count of steps and the windows read)
        # Waits for the device before each reading on an asynchronous backend (CUDA). The
        # program sets its context once running: it is looked up at each step's end.
        self.sync: Optional[Callable[[], None]] = None
        self._sync_known = False

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

        _nn = nn
        self.program_thread = _ident()
        self.stacks.around(_getframe(1))
        self.solver_calls.base = solver_module.Solver
        from nnabla.auto_forward import get_auto_forward

        self._auto_forward = get_auto_forward
        self.solver_calls.python_function = getattr(function_module, "PythonFunction", None)
        self.functions.ndarray_type = nn.NdArray
        self.window = Window(self.clock())
        self.snapshot_parameters()
        replacements: Dict[int, Tuple[Any, Any]] = {}
        for name in dir(solver_module):
            factory = getattr(solver_module, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                replacements[id(factory)] = (
                    factory,
                    self.solver_calls.tracking_factory(factory, self.solver_calls.track_solver, "solver"),
                )
        for name in ("clear_parameters", "load_parameters", "save_parameters"):
            original = getattr(parameter_module, name, None)
            if original is not None:
                replacements[id(original)] = (original, self._snapshot_first(original))
        try:
            for made in makers():
                replacements[id(made)] = (made, self.builds.wrap(made))
        except Exception as e:  # a dynamic graph's making then reads as the program's own time
            self.faults.add("timing the parametric functions", e)
        for factory in communicator_factories():
            replacements[id(factory)] = (
                factory,
                self.solver_calls.tracking_factory(factory, self.solver_calls.track_communicator, "communicator"),
            )
        self._patches.everywhere(replacements, self.namespaces)
        self._import_locks = importlock.install()  # (see importlock: NNabla imports on its hot paths)
        self._patch_functions(self._patches)
        self.inputs.install(self._patches, self.toggles)
        self.solver_calls.wrap_existing(self.namespaces)
        try:
            self.solver_calls.check_subclasses()
        except Exception as e:  # the program's own classes then run untimed; the rest is recorded
            self.faults.add("looking for the program's own solver and function classes", e)
        self.recording = True
        if self.real_clock:  # (a test's scripted clock is read only where the test says)
            gc.callbacks.append(self.hooks.collected)
        self.windowing.begin()
        return self

    def _patch_functions(self, patches: Patches) -> None:
        import nnabla.function as function_module

        for name in dir(function_module):
            factory = getattr(function_module, name)
            if name[:1].isupper() and callable(factory) and not isinstance(factory, type):
                patches.attribute(function_module, name, self.functions.function_factory(factory))

    def _snapshot_first(self, original: Callable) -> Callable:
        """``original`` (NNabla's clear_parameters, load_parameters, save_parameters), the parameters' names noted
        before it runs; called past the program's loop in the steps without the hooks, the hooks back on
        (``past_the_loop``: what it does after its last step, an evaluation after saving, is recorded)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.recording:
                try:
                    self.snapshot_parameters()
                    self.past_the_loop(_getframe(1))
                except Exception as e:  # called from C with no caller (NNabla's own atexit finalize): nothing to do
                    self.faults.add("a call that may save parameters", e)
            return original(*args, **kwargs)

        call.__name__, call.__doc__ = getattr(original, "__name__", "call"), getattr(original, "__doc__", None)
        return call

    def _mark_now(self) -> int:
        return self._mark()

    def _building_here(self) -> bool:
        """Whether a dynamic graph's making is timed now: a window is open, in the program's thread, under
        auto_forward."""
        return self.capturing and self._auto_forward() and _ident() == self.program_thread

    def snapshot_parameters(self) -> None:
        """Note every parameter's full name as it is now (names outlive clear_parameters)."""
        t0 = self.clock()
        try:
            for name, variable in all_parameters().items():
                self.parameter_names.setdefault(variable, name)
        except Exception as e:
            self.faults.add("reading the parameters' names", e)
        self.aside(t0)

    # -- a window's capture, begun and ended by the windows' part -------------------------------------------

    def begin_capture(self) -> None:
        """A window begins: its events from here, a loop of its own (the steps counted go on)."""
        self.lines.remove()
        self.steps.window_opened()
        self.solver_calls.patch_subclasses()
        self.window = window = Window(self.clock())
        self.cpu.readings = window.readings  # (the readings of other work are the window's)
        if len(self.functions.created) > MAX_CREATED:  # bounded over any number of windows (sources noted anew)
            self.functions.created = {}
        self.loop = Loop()
        self.cpu.note(window.started_ns)
        self.capturing = True
        self.note_sites = True
        if self.sampler is not None:
            self.sampler.start()

    def end_capture(self) -> None:
        """A window's steps are done: the hooks off, the sampler stopped, the names read, the count frozen."""
        self.passes.close()
        self.capturing = False
        if self.sampler is not None:
            self.sampler.stop()
        self._switch_hooks(False)
        self.window.stopped_ns = self.clock()
        self.cpu.note(self.window.stopped_ns)
        self.snapshot_parameters()
        self.steps.freeze()
        self.builds.forget()
        fast = self.steps.frame_loop
        if not self.steps.countable and fast and self.steps.by_iterations() and _ident() == self.program_thread:
            self.lines.install(fast.code)

    def updated(self, index: int, end: int) -> None:
        """A solver's update has ended (at ``end``), outside any other call: the loop's structure notes it,
        auto_forward's graphs begin anew, the device's wait is looked up (once), and a program whose passes counted
        its steps counts them no more."""
        self.loop.update(index, end)
        self.passes.updated()
        self._find_sync()
        self.steps.count_passes()

    def _switch_hooks(self, on: bool) -> None:
        """The function hooks on or off (``hooks.FunctionHooks.switch``), and in a window the sampler with them: the
        steps without the hooks are the program as it runs alone (a sampled NdArray function of 35 us took 85 us)."""
        self.past = False
        self.hooks.switch(on)
        if self.capturing and self.sampler is not None:
            try:
                if on:
                    self.sampler.start()
                else:
                    self.sampler.stop(pause=True)
            except Exception as e:
                self.faults.add("sampling the program's own lines", e)

    def _find_sync(self) -> None:
        """At the first update or step mark (the program has set its context by then): the device's wait, on an
        asynchronous device (CUDA), read before each reading of the clock; a call's marks are then its context
        switches (its waits for the device are no CPU time)."""
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
            if self.sync is not None:
                self.cpu.on_async_device()
                self._mark = self.cpu.mark

    def break_pass(self) -> None:
        """The pass under way has ended (a call of the program's own between passes)."""
        self.passes.close()

    def between_calls(self) -> None:
        """A call of the program's own begins between NNabla's: the pass before it ends, and the classes the
        program made since are looked at (its own solvers and functions)."""
        self.passes.close()
        self.solver_calls.check_subclasses()

    def step_ended(self, late: bool = False) -> None:
        """A step has ended (``steps.done`` counts it): the windows follow (``windowing.WindowKeeper``); where
        another thread ran NNabla functions meanwhile, the hooks come off now (``hooks.FunctionHooks.switch``)."""
        if self.shared and self.hooks_on:
            self._switch_hooks(False)
        self.windowing.step_ended(late)

    def stop(self) -> None:
        """Unhook and put everything back (the program's end); a window still open keeps its events. Again after a
        stop that a second Ctrl-C cut short, the sampler at least is off."""
        if not self.recording:
            if self.sampler is not None:
                self.sampler.stop()
            return
        try:
            self.passes.close()
            w = self.windowing
            if self.steps.last_iteration() and self.capturing and w.windows.window_done(self.steps.done):
                w.close()
        except Exception as e:  # what was recorded stays; everything is put back below, whatever happened
            self.faults.add("ending the recording", e)
        self.recording = self.steps.by_frame_only = False
        if self.sampler is not None:
            self.sampler.stop()
        self.ended_ns = self.clock()
        if not self.capturing:
            self.steps.last_reads()
        if self.capturing:
            self.window.stopped_ns = self.ended_ns
            self.cpu.note(self.ended_ns)
        self._put_back(lambda e: self.faults.add("removing the hooks", e))
        importlock.uninstall(self._import_locks)
        self._import_locks = None
        if self.capturing:
            self.snapshot_parameters()
        self.stacks.release()
        self.finished = True

    def detach(self) -> None:
        """A child the program forked: its hooks, patches and sampler off, nothing closed, written or kept (the
        recording and its folder are the parent's; the child runs as it would alone)."""
        self.recording = self.capturing = False
        with contextlib.suppress(Exception):  # (the child's own run matters, not nnprofile's)
            if self.sampler is not None:
                self.sampler.stop()
        self._put_back(lambda e: None)
        self.finished = True

    def forget(self) -> None:
        """Written: the events (they hold the program's graphs) and the windows' callback let go (the proxies stay)."""
        self.window, self.windowing.on_window, self.pass_times.window = Window(), None, None
        self.passes, self.loop, self.open_calls, self.parameter_names = PassTracker(self), Loop(), [], {}
        self.functions.created = {}
        self.builds.forget()

    def _put_back(self, fault: Callable[[Exception], None]) -> None:
        """The function hooks off, NNabla's and the program's names as they were, the collection callback and the
        loop's line trace gone; a failure to take the hooks off given to ``fault``, the rest put back whatever
        happens."""
        if self.hooks_on:
            try:
                _nn.unset_function_pre_hook(HOOK_KEY)
                _nn.unset_function_post_hook(HOOK_KEY)
            except Exception as e:
                fault(e)
            self.hooks_on = False
        try:
            self._patches.undo()
            if self.hooks.collected in gc.callbacks:
                gc.callbacks.remove(self.hooks.collected)
        except Exception as e:
            fault(e)
        self.lines.remove()

    # -- the program's own marks, nnprofile's own work, the program past its loop --------------------------

    def step(self, end_ns: Optional[int] = None) -> None:
        """``nnprofile.step()``: the program marks the end of a step."""
        try:
            if _ident() != self.program_thread or not self.recording:
                return
            self.steps.marked = True
            if not self.capturing:
                self.steps.light_step("marks", 0)
                return
            at = self.clock() if end_ns is None else end_ns
            self.passes.close()
            self.window.events.append(StepMark(at, self.stacks.take(_getframe(1))))
            self.loop.mark(at)
            self._find_sync()
            self.steps.count_passes()
            self.window.excluded.append((at, self.clock()))
        except Exception as e:
            self.faults.add("nnprofile.step()", e)

    def aside(self, t0: int) -> None:
        """nnprofile's own work since ``t0`` set aside (no part of any call, pass or step), the wait for a CPU read as
        it ends: what held that work up is no part of any step either (``assembly.intervals.waited_aside``)."""
        if self.sampler is not None:
            self.sampler.resume()  # (its own cost is nnprofile's too)
        if self.capturing:
            t1 = self.cpu.note(None)  # (read before the clock: the reading's own cost is nnprofile's too)
        else:
            t1 = self.clock()
        self.window.excluded.append((t0, t1))

    def past_the_loop(self, frame: Any) -> None:
        """A call of the program's outside its step loop while the steps after the kept ones run without the hooks:
        the loop has ended (the program loads its best parameters, evaluates, saves): the hooks go back on, so that
        what it does after its last step is recorded (it is in no step). Back in its loop (that was work between
        epochs), they are off again (``past``): the step after a validation, often its slowest, runs without them."""
        try:
            if not (
                self.capturing and self.calibrate and self.steps.counter.loop is not None and self.steps.by_iterations()
            ):
                return
            if not self.hooks_on and self._outside_loop(frame):
                self._switch_hooks(True)
                self.past = True
            elif self.past and self.hooks_on and not self._outside_loop(frame):
                self._switch_hooks(False)
        except Exception as e:
            self.faults.add("following the program past its loop", e)

    def _outside_loop(self, frame: Any) -> bool:
        loop = self.steps.counter.loop
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
