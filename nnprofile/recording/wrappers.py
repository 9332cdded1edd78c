"""The recorder's side of the program's calls: solvers, communicators, iterators, monitors, functions run now.

Every wrapper here is a guest in the program's call: the program's own call runs exactly once, through
the original, and its result or its exception is the program's. What nnprofile does around it (timing,
naming, counting steps) is guarded: a failure of nnprofile's own is noted (``fault``, said in the
profile's notes; ``--debug`` prints its traceback) and the call goes on unrecorded.

Each timed call is a node of the call tree: it opens on ``open_calls`` while it runs, so that what runs
inside it (a custom solver's NdArray arithmetic, a loader's functions) is its child (``depth``).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .host import RecorderParts
from ..base.places import place
from ..assembly.events import DYNAMIC, EAGER, Call, CommCall, SolverCall
from .callsite import first_outside, line_at, receiver_of_caller
from .proxies import SOLVER_CALLS, array_bytes
from .building import PROGRAM_GAP_NS
from .raw import OPENED, Detached
from .raw import EagerInfo, RawSolver
from ..base.interference import CPU
from .solver_classes import all_subclasses, count_direct, solver_parameters

_getframe = sys._getframe
_ident = threading.get_ident
PLAIN, MADE, EAGER_CALL, DYNAMIC_CALL = 0, 1, 2, 3  # how a function proxy's call is recorded


def _arrays(values: Any) -> List[Tuple[Tuple[int, ...], Optional[str]]]:
    out = []
    for v in values if isinstance(values, (list, tuple)) else [values]:
        try:
            dtype: Optional[str] = str(v.dtype.__name__) if isinstance(v.dtype, type) else str(v.dtype)
        except Exception:
            dtype = None
        try:
            out.append((tuple(int(d) for d in v.shape), _dtype_name(dtype)))
        except Exception:  # a scalar argument, not an array
            continue
    return out


def _dtype_name(dtype: Optional[str]) -> Optional[str]:
    if dtype is None:
        return None
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"):
        if name in dtype:
            return name
    return dtype


class Wrappers:
    """The wrappers' part of ``Recorder`` (a mix-in: the state is the recorder's)."""

    comm_rank: Optional[Tuple[int, int]]

    # -- functions run now (eager, auto_forward), through the function proxies -------------------------

    def function_mode(self: RecorderParts, inputs: Sequence[Any], kwargs: Dict[str, Any]) -> int:
        if not self.recording or not self.hooks_on or _ident() != self.program_thread:
            return PLAIN
        if inputs and type(inputs[0]) is self.ndarray_type:
            return EAGER_CALL
        if not kwargs.get("auto_forward"):
            return MADE
        return DYNAMIC_CALL

    def run_function(
        self: RecorderParts,
        call: Callable[[], Any],
        function: Any,
        made_ns: Optional[int],
        mode: int,
        inputs: Sequence[Any],
    ) -> Any:
        """Run the program's function call once (``call``), and record it as ``mode`` says."""
        if mode == MADE:  # a static graph's function: made now, run in its passes
            outputs = call()
            try:
                if self.note_sites:
                    self.note_creation(outputs, depth=3)
            except Exception as e:
                self.faults.add("noting where a function was made", e)
            return outputs
        opened = self.open_calls
        depth = len(opened)
        start = made_ns if made_ns is not None else self.clock()
        m0 = self._mark()
        opened.append(OPENED)
        try:
            outputs = call()
        finally:
            del opened[depth:]
        try:
            end = self.clock()
            switches = (m0, self._mark())
            if mode == EAGER_CALL:
                self.eager_call(function, inputs, outputs, start, end, depth, switches)
            else:
                self.dynamic_call(outputs, start, end, depth, switches, function)
        except Exception as e:
            self.faults.add("timing a function run now", e)
        return outputs

    def dynamic_call(
        self: RecorderParts,
        outputs: Any,
        start: int,
        end: int,
        depth: int = 0,
        switches: Tuple[int, int] = (0, 0),
        function: Any = None,
    ) -> None:
        """A function run under auto_forward (its graph's forward, as it is made); inside another call
        (a backward that builds functions: double backward) a child of that call. Its outputs' parent is the
        function; under ``nn.no_grad()`` they have none, and the function object itself is described."""
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = getattr(first, "parent", None)
        if parent is None:
            if function is None:
                return
            parent = Detached(function)
        if depth:
            self.events.append(Call(parent, start, end, None, DYNAMIC, depth, None, *switches))
            return
        t0 = self.clock()
        builds = self.builds
        entered, entered_mark = builds.entered(start, switches[0])
        stack = None
        frame = _getframe(3)
        place = self._loop_place(frame)
        own = builds.program_time((entered, entered_mark), self.cpu.kind == CPU, self.excluded)
        if not self._dynamic_pass or place != self._dynamic_place or own > PROGRAM_GAP_NS:
            # a run of them begins, another line of the loop builds, or the program's own code ran long between
            self._close_pass()
            self._dynamic_pass, self._dynamic_place = True, place
            self._check_subclasses()
            self.loop.pass_started("forward", None, "auto_forward", entered)
            stack = self.steps.take(frame)
            self.steps.moved(stack, "other", t0, frame, begun=(start, switches[0], switches[1]))
            if not self.solvers and not self.loop.marks:
                self.steps.count_passes()
        frames = builds.frames(frame, self.stacks, stack)
        self.events.append(Call(parent, start, end, None, DYNAMIC, 0, stack, *switches, entered, frames))
        self._recent_dynamic.add(parent)
        if self.note_sites and self.steps.done < self.SITE_STEPS:
            self.note_creation(outputs, depth=4, function=parent)
        builds.ran(end, switches[1], len(self.excluded))  # (its own work below is after this end: left out too)
        self.excluded.append((t0, self.clock()))  # nnprofile's own work: no part of the pass or the program's time

    def _loop_place(self: RecorderParts, frame: Any) -> Any:
        """Where in the step loop's body the program is at a call: (its frame, its line), found by walking out to
        the frame running the loop (known once the loop was chosen); None before that or outside it. A graph made
        under auto_forward is built where the program builds it: each line of the loop that calls into the code
        making functions begins a pass of its own."""
        loop = self.steps.counter.loop
        if loop is None:
            return None
        code = self.stacks.objects[loop[0]] if loop[0] < len(self.stacks.objects) else None
        depth = 0
        while frame is not None and depth < 64:
            if frame.f_code is code:
                return (id(frame), line_at(code, frame.f_lasti))
            frame, depth = frame.f_back, depth + 1
        return None

    def eager_call(
        self: RecorderParts,
        function: Any,
        inputs: Sequence[Any],
        outputs: Any,
        start: int,
        end: int,
        depth: int = 0,
        switches: Tuple[int, int] = (0, 0),
    ) -> None:
        """A function run on NdArrays: eager work, timed, with the program's line that called it (described
        in full the first time a line calls it on arrays of these shapes); inside another call, its child."""
        where = first_outside(_getframe(2), self._skip)
        key = (function.name, where, tuple([getattr(v, "shape", None) for v in inputs]))
        if key not in self.eager:
            self.eager[key] = EagerInfo(
                str(function.name),
                dict(getattr(function, "args", {}) or {}),
                _arrays(inputs),
                _arrays(outputs),
                place(*where) if where is not None else None,
            )
        if not depth:
            self._break_pass()
        self.events.append(Call(key, start, end, None, EAGER, depth, None, *switches))

    def note_creation(self: RecorderParts, outputs: Any, depth: int = 2, function: Any = None) -> None:
        """Where the program created the function behind ``outputs`` (``function``, where known): its first frame
        outside NNabla."""
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = function if function is not None else getattr(first, "parent", None)
        if parent is None or parent in self.created:
            return
        where = first_outside(_getframe(depth), self._skip)
        if where is not None:
            self.created[parent] = place(*where)

    # -- solvers -------------------------------------------------------------------------------------

    def timed_solver_call(self: RecorderParts, index: int, method: str) -> Callable:
        """A solver proxy's method: the real solver's, timed."""
        recorder, solver = self, self.solvers[index].solver
        if method == "update":
            steps = self.steps  # (the recorder's count of steps, for its life: one lookup fewer between windows)

            def call(*args: Any, **kwargs: Any) -> Any:
                if steps.by_frame_only and _ident() == recorder.program_thread:  # between windows, counted by the loop
                    try:
                        steps.lean_update(_getframe(1))
                    except Exception as e:
                        recorder.faults.add("counting steps at solver update", e)
                    return solver.update(*args, **kwargs)
                return recorder.solver_call(index, method, solver.update, args, kwargs)
        else:

            def call(*args: Any, **kwargs: Any) -> Any:
                if not recorder.capturing:  # between windows only the updates count the steps
                    return getattr(solver, method)(*args, **kwargs)
                return recorder.solver_call(index, method, getattr(solver, method), args, kwargs)

        return call

    def solver_call(self: RecorderParts, index: int, method: str, bound: Callable, args: Any, kwargs: Any) -> Any:
        """The program's call of a solver's method: run once; timed while a window is open, counted as a
        step's update between windows."""
        try:
            plan = self._solver_plan(index, method)
        except Exception as e:
            self.faults.add("solver %s" % method, e)
            plan = None
        if plan is None:
            return bound(*args, **kwargs)
        if plan == "light":
            result = bound(*args, **kwargs)
            try:
                self.steps.light_step("updates", index)
            except Exception as e:
                self.faults.add("counting steps at solver %s" % method, e)
            return result
        opened = self.open_calls
        depth = len(opened)
        try:
            if self.sync is not None:
                self.sync()
            start = self.clock()
            m0 = self._mark()
        except Exception as e:
            self.faults.add("solver %s" % method, e)
            return bound(*args, **kwargs)
        opened.append(OPENED)
        try:
            result = bound(*args, **kwargs)
        finally:
            del opened[depth:]
        try:
            if self.sync is not None:
                self.sync()
            end = self.clock()
            self.events.append(
                SolverCall(method, index, start, end, depth, plan if depth == 0 else None, m0, self._mark())
            )
            if depth == 0 and method == "update":
                self.loop.update(index, end)
                self._recent_dynamic = set()  # type: set
                self._find_sync()
                self.steps.count_passes()
            self.aside(end)  # nnprofile's own work, no part of the step
        except Exception as e:
            self.faults.add("solver %s" % method, e)
        return result

    def _solver_plan(self: RecorderParts, index: int, method: str) -> Any:
        """None: not recorded; "light": counted only (no window open); else the call's stack (a window is
        open), after nnprofile's own work before it (naming the solver, counting the step it begins)."""
        if _ident() != self.program_thread or not self.recording:
            return None
        depth = len(self.open_calls)
        if not self.capturing and (depth or method != "update"):
            return None  # between windows only the program's own updates count its steps
        frame = _getframe(3)
        stack = None
        t0 = self.clock() if self.capturing else None
        if depth == 0:
            if self.capturing:
                self._break_pass()
            stack = self.steps.take(frame)
            self.steps.moved(stack, "update" if method == "update" else None, t0, frame)
        if not self.capturing:
            return "light"
        info = self.solvers[index]
        if not info.variable:
            info.variable = receiver_of_caller(frame, (method,))
        if not info.parameters:
            info.parameters = solver_parameters(info.solver, info.own)
        self.aside(t0 if t0 is not None else self.clock())
        return stack if depth == 0 else ()

    def _check_subclasses(self: RecorderParts) -> None:
        """The program's own subclasses of NNabla's Solver and PythonFunction, timed from when first seen (a
        class is looked for when the direct subclasses change, or a window opens)."""
        try:
            count = count_direct(self._solver_base) + count_direct(self._python_function)
            if count != self._subclasses_seen:
                self._subclasses_seen = count
                self._patch_subclasses()
        except Exception as e:  # the program's own classes then run untimed
            self.faults.add("looking for the program's own solver and function classes", e)

    def _patch_subclasses(self: RecorderParts) -> None:
        try:
            self._patch_new_subclasses()
        except Exception as e:
            self.faults.add("looking for the program's own solver and function classes", e)

    def _patch_new_subclasses(self: RecorderParts) -> None:
        for cls in all_subclasses(self._solver_base):
            if cls in self._patched_classes or (cls.__module__ or "").startswith(("nnabla.", "nnprofile.")):
                continue
            self._patched_classes.add(cls)
            for method in SOLVER_CALLS:
                original = vars(cls).get(method)
                if callable(original):
                    self._patches.attribute(cls, method, self._subclass_method(cls, method, original))
        for cls in all_subclasses(self._python_function):
            if cls in self._patched_classes:
                continue
            self._patched_classes.add(cls)
            self._patches.attribute(cls, "__call__", self._python_function_call(cls.__call__))

    def _subclass_method(self: RecorderParts, cls: type, method: str, original: Callable) -> Callable:
        """A method of the program's own Solver subclass, timed as a solver's call (its instances made known
        as solvers when first called)."""
        recorder = self

        def call(solver: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                index = recorder._solver_index(solver, cls)
            except Exception as e:
                recorder.faults.add("solver %s" % method, e)
                return original(solver, *args, **kwargs)
            if index is None:
                return original(solver, *args, **kwargs)
            return recorder.solver_call(index, method, lambda *a, **k: original(solver, *a, **k), args, kwargs)

        call.__name__, call.__doc__ = getattr(original, "__name__", method), getattr(original, "__doc__", None)
        return call

    def _solver_index(self: RecorderParts, solver: Any, cls: type) -> Optional[int]:
        if not self.recording or _ident() != self.program_thread:
            return None
        index = self._own_solvers.get(id(solver))
        if index is None or self.solvers[index].solver is not solver:
            where = first_outside(_getframe(3), self._skip)
            self.steps.counter.expects_updates = True  # its loop is the one that updates (``Counter``)
            self.solvers.append(
                RawSolver(
                    solver,
                    cls.__name__,
                    created=None if where is None else place(*where),
                    own=True,
                    made_ns=self.clock(),
                )
            )
            index = self._own_solvers[id(solver)] = len(self.solvers) - 1
        return index

    def _python_function_call(self: RecorderParts, original: Callable) -> Callable:
        """A custom PythonFunction's call: under auto_forward or on NdArrays it runs now, and is timed so."""
        recorder = self

        def call(function: Any, *inputs: Any, **kwargs: Any) -> Any:
            try:
                mode = recorder.function_mode(inputs, kwargs)
            except Exception as e:
                recorder.faults.add("custom function", e)
                mode = PLAIN
            if mode == PLAIN:
                return original(function, *inputs, **kwargs)
            return recorder.run_function(lambda: original(function, *inputs, **kwargs), function, None, mode, inputs)

        return call

    # -- communicators -------------------------------------------------------------------------------

    def timed_comm_call(self: RecorderParts, proxy: Any, method: str, bound: Callable) -> Callable:
        """A collective, timed from the program's call to its return: the bookkeeping is in it, so that the
        entry is what the program itself would measure around the call (the first Python after a
        collective runs on cold caches: tens of microseconds where it costs one when warm)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                timed = self.capturing and _ident() == self.program_thread
                if timed:
                    if self.sync is not None:
                        self.sync()
                    start = self.clock()
                    data = args[0] if args else kwargs.get("data", kwargs.get("ndarray_list", kwargs.get("ndarray")))
                    moved = (
                        proxy._parameter_bytes
                        if method == "allreduce"
                        else array_bytes(data)
                        if data is not None
                        else 0
                    )
                    depth = len(self.open_calls)
                    # its marks: the time the thread waited for a CPU inside it (see assembly.sections.waited)
                    event = CommCall(method, start, start, moved, depth, m0=self.cpu.waited_ns())
            except Exception as e:
                self.faults.add("communicator %s" % method, e)
                timed = False
            if not timed:
                return bound(*args, **kwargs)
            self.open_calls.append(OPENED)
            try:
                result = bound(*args, **kwargs)
            finally:
                del self.open_calls[depth:]
            try:
                if self.sync is not None:
                    self.sync()
                if not depth:
                    self._break_pass()
                self.events.append(event)
                if method == "init":
                    self.comm_rank = (int(getattr(proxy._comm, "rank", 0)), int(getattr(proxy._comm, "size", 1)))
                elif method == "all_reduce_callback":
                    self.callback_used = True
                event.m1 = max(event.m0, self.cpu.waited_ns())
                event.end_ns = self.clock()
            except Exception as e:
                self.faults.add("communicator %s" % method, e)
            return result

        return call
