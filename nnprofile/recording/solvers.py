"""The program's solvers and communicators as the recording times them: each solver's calls (``update``,
``zero_grad``, ``weight_decay`` and the rest) through its proxy or its own class's methods, each collective through
its communicator's proxy, and the program's own Solver and PythonFunction subclasses found and timed from when
first seen. A guest in the program's call as every wrapper is (``nnprofile.recording.wrappers``)."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..assembly.events import CommCall, SolverCall
from ..base.places import place
from .bindings import is_communicator, one_level_down
from .callsite import first_outside, receiver_of_caller
from .parts import SolversHost
from .proxies import SOLVER_CALLS, TimedCommunicator, TimedSolver, array_bytes
from .raw import OPENED, PLAIN, RawSolver
from .solver_classes import all_subclasses, count_direct, solver_parameters

_getframe = sys._getframe
_ident = threading.get_ident


class Solvers:
    """The program's solvers (``solvers``, in the order made), its communicators and its rank; their calls timed.
    It reaches the recording through ``host`` (``parts.SolversHost``); ``skip``: the modules whose frames are not
    the program's."""

    def __init__(self, host: SolversHost, skip: Tuple[str, ...]) -> None:
        self.host, self.skip = host, skip
        self.solvers: List[RawSolver] = []
        self.communicators: List[str] = []  # the type of each communicator made
        self.comm_rank: Optional[Tuple[int, int]] = None  # (rank, size) once a communicator is initialised
        self.callback_used = False  # all_reduce_callback: its communication runs inside backward
        self._own: Dict[int, int] = {}  # id(a solver of the program's own class) -> its index
        self._patched: Set[Any] = set()
        self._seen = -1  # the direct subclasses of Solver and PythonFunction seen
        self.base: Any = None  # NNabla's Solver, once recording started
        self.python_function: Any = None  # and its PythonFunction

    @property
    def faults(self) -> Any:
        """The recording's faults (a proxy notes its own there)."""
        return self.host.faults

    def tracking_factory(self, factory: Callable, track: Callable[[Any], Any], kind: str) -> Callable:
        """``factory`` whose products, made while recording, are timed (``track``: a solver's or a
        communicator's proxy)."""
        host = self.host

        def make(*args: Any, **kwargs: Any) -> Any:
            made = factory(*args, **kwargs)
            if not host.recording:
                return made
            try:
                return track(made)
            except Exception as e:
                host.faults.add("a new %s" % kind, e)
                return made

        make.__name__ = getattr(factory, "__name__", kind)
        make.__doc__ = getattr(factory, "__doc__", None)
        return make

    def wrap_existing(self, namespaces: Tuple[Any, ...]) -> None:
        """Solvers and communicators the program made before recording started (a notebook's earlier
        cell), where a namespace given holds them: replaced by timed ones for the recording."""
        import nnabla.solver as solver_module

        made: Dict[int, Tuple[Any, Any]] = {}
        places = one_level_down(namespaces)
        for namespace in places:
            for value in list(namespace.values()):
                if (
                    type(value) is not TimedSolver
                    and isinstance(value, solver_module.Solver)
                    and (type(value).__module__ or "").startswith("nnabla")
                ):  # the program's own: patched
                    made.setdefault(id(value), (value, self.track_solver(value)))
                elif is_communicator(value) and id(value) not in made:
                    made[id(value)] = (value, self.track_communicator(value))
                    try:  # initialised already: it knows its rank
                        self.comm_rank = (int(value.rank), int(value.size))
                    except Exception:
                        pass
        if made:
            self.host._patches.everywhere(made, places)

    # -- solvers, and the program's own solver and function classes ---------------------------------------

    def timed_solver_call(self, index: int, method: str) -> Callable:
        """A solver proxy's method: the real solver's, timed."""
        part, recorder, solver = self, self.host, self.solvers[index].solver
        if method == "update":
            steps = self.host.steps  # (the recorder's count of steps, for its life: one lookup fewer between windows)

            def call(*args: Any, **kwargs: Any) -> Any:
                if steps.by_frame_only and _ident() == recorder.program_thread:  # between windows, counted by the loop
                    try:
                        steps.lean_update(_getframe(1))
                    except Exception as e:
                        recorder.faults.add("counting steps at solver update", e)
                    return solver.update(*args, **kwargs)
                return part.solver_call(index, method, solver.update, args, kwargs)
        else:

            def call(*args: Any, **kwargs: Any) -> Any:
                if not recorder.capturing:  # between windows only the updates count the steps
                    return getattr(solver, method)(*args, **kwargs)
                return part.solver_call(index, method, getattr(solver, method), args, kwargs)

        return call

    def solver_call(self, index: int, method: str, bound: Callable, args: Any, kwargs: Any) -> Any:
        """The program's call of a solver's method: run once; timed while a window is open, counted as a
        step's update between windows."""
        try:
            plan = self._solver_plan(index, method)
        except Exception as e:
            self.host.faults.add("solver %s" % method, e)
            plan = None
        if plan is None:
            return bound(*args, **kwargs)
        if plan == "light":
            result = bound(*args, **kwargs)
            try:
                self.host.steps.light_step("updates", index)
            except Exception as e:
                self.host.faults.add("counting steps at solver %s" % method, e)
            return result
        opened = self.host.open_calls
        depth = len(opened)
        try:
            if self.host.sync is not None:
                self.host.sync()
            start = self.host.clock()
            m0 = self.host._mark()
        except Exception as e:
            self.host.faults.add("solver %s" % method, e)
            return bound(*args, **kwargs)
        opened.append(OPENED)
        try:
            result = bound(*args, **kwargs)
        finally:
            del opened[depth:]
        try:
            if self.host.sync is not None:
                self.host.sync()
            end = self.host.clock()
            self.host.window.events.append(
                SolverCall(method, index, start, end, depth, plan if depth == 0 else None, m0, self.host._mark())
            )
            if depth == 0 and method == "update":
                self.host.updated(index, end)
            self.host.aside(end)  # nnprofile's own work, no part of the step
        except Exception as e:
            self.host.faults.add("solver %s" % method, e)
        return result

    def _solver_plan(self, index: int, method: str) -> Any:
        """None: not recorded; "light": counted only (no window open); else the call's stack (a window is
        open), after nnprofile's own work before it (naming the solver, counting the step it begins)."""
        if _ident() != self.host.program_thread or not self.host.recording:
            return None
        depth = len(self.host.open_calls)
        if not self.host.capturing and (depth or method != "update"):
            return None  # between windows only the program's own updates count its steps
        frame = _getframe(3)
        stack = None
        t0 = self.host.clock() if self.host.capturing else None
        if depth == 0:
            if self.host.capturing:
                self.host.break_pass()
            stack = self.host.steps.take(frame)
            self.host.steps.moved(stack, "update" if method == "update" else None, t0, frame)
        if not self.host.capturing:
            return "light"
        info = self.solvers[index]
        if not info.variable:
            info.variable = receiver_of_caller(frame, (method,))
        if not info.parameters:
            info.parameters = solver_parameters(info.solver, info.own)
        self.host.aside(t0 if t0 is not None else self.host.clock())
        return stack if depth == 0 else ()

    def check_subclasses(self) -> None:
        """The program's own subclasses of NNabla's Solver and PythonFunction, timed from when first seen (a
        class is looked for when the direct subclasses change, or a window opens)."""
        try:
            count = count_direct(self.base) + count_direct(self.python_function)
            if count != self._seen:
                self._seen = count
                self.patch_subclasses()
        except Exception as e:  # the program's own classes then run untimed
            self.host.faults.add("looking for the program's own solver and function classes", e)

    def patch_subclasses(self) -> None:
        try:
            self._patch_new_subclasses()
        except Exception as e:
            self.host.faults.add("looking for the program's own solver and function classes", e)

    def _patch_new_subclasses(self) -> None:
        for cls in all_subclasses(self.base):
            if cls in self._patched or (cls.__module__ or "").startswith(("nnabla.", "nnprofile.")):
                continue
            self._patched.add(cls)
            for method in SOLVER_CALLS:
                original = vars(cls).get(method)
                if callable(original):
                    self.host._patches.attribute(cls, method, self._subclass_method(cls, method, original))
        for cls in all_subclasses(self.python_function):
            if cls in self._patched:
                continue
            self._patched.add(cls)
            self.host._patches.attribute(cls, "__call__", self._python_function_call(cls.__call__))

    def _subclass_method(self, cls: type, method: str, original: Callable) -> Callable:
        """A method of the program's own Solver subclass, timed as a solver's call (its instances made known
        as solvers when first called)."""
        part = self

        def call(solver: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                index = part._solver_index(solver, cls)
            except Exception as e:
                part.host.faults.add("solver %s" % method, e)
                return original(solver, *args, **kwargs)
            if index is None:
                return original(solver, *args, **kwargs)
            return part.solver_call(index, method, lambda *a, **k: original(solver, *a, **k), args, kwargs)

        call.__name__, call.__doc__ = getattr(original, "__name__", method), getattr(original, "__doc__", None)
        return call

    def _solver_index(self, solver: Any, cls: type) -> Optional[int]:
        if not self.host.recording or _ident() != self.host.program_thread:
            return None
        index = self._own.get(id(solver))
        if index is None or self.solvers[index].solver is not solver:
            where = first_outside(_getframe(3), self.skip)
            self.host.steps.counter.expects_updates = True  # its loop is the one that updates (``Counter``)
            self.solvers.append(
                RawSolver(
                    solver,
                    cls.__name__,
                    created=None if where is None else place(*where),
                    own=True,
                    made_ns=self.host.clock(),
                )
            )
            index = self._own[id(solver)] = len(self.solvers) - 1
        return index

    def _python_function_call(self, original: Callable) -> Callable:
        """A custom PythonFunction's call: under auto_forward or on NdArrays it runs now, and is timed so."""
        recorder = self.host.functions

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

    def timed_comm_call(self, proxy: Any, method: str, bound: Callable) -> Callable:
        """A collective, timed from the program's call to its return: the bookkeeping is in it, so that the
        entry is what the program itself would measure around the call (the first Python after a
        collective runs on cold caches: tens of microseconds where it costs one when warm)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                timed = self.host.capturing and _ident() == self.host.program_thread
                if timed:
                    if self.host.sync is not None:
                        self.host.sync()
                    start = self.host.clock()
                    data = args[0] if args else kwargs.get("data", kwargs.get("ndarray_list", kwargs.get("ndarray")))
                    moved = (
                        proxy._parameter_bytes
                        if method == "allreduce"
                        else array_bytes(data)
                        if data is not None
                        else 0
                    )
                    depth = len(self.host.open_calls)
                    # its marks: the time the thread waited for a CPU inside it (see assembly.sections.waited)
                    event = CommCall(method, start, start, moved, depth, m0=self.host.cpu.waited_ns())
            except Exception as e:
                self.host.faults.add("communicator %s" % method, e)
                timed = False
            if not timed:
                return bound(*args, **kwargs)
            self.host.open_calls.append(OPENED)
            try:
                result = bound(*args, **kwargs)
            finally:
                del self.host.open_calls[depth:]
            try:
                if self.host.sync is not None:
                    self.host.sync()
                if not depth:
                    self.host.break_pass()
                self.host.window.events.append(event)
                if method == "init":
                    self.comm_rank = (int(getattr(proxy._comm, "rank", 0)), int(getattr(proxy._comm, "size", 1)))
                elif method == "all_reduce_callback":
                    self.callback_used = True
                event.m1 = max(event.m0, self.host.cpu.waited_ns())
                event.end_ns = self.host.clock()
            except Exception as e:
                self.host.faults.add("communicator %s" % method, e)
            return result

        return call

    def track_solver(self, solver: Any) -> TimedSolver:
        where = first_outside(sys._getframe(2), self.skip)
        self.host.steps.counter.expects_updates = True  # its loop is the one that updates (``Counter``)
        self.solvers.append(
            RawSolver(
                solver,
                str(getattr(solver, "name", type(solver).__name__)),
                created=place(*where) if where is not None else None,
                made_ns=self.host.clock() if self.host.capturing else 0,
            )
        )
        return TimedSolver(solver, self, len(self.solvers) - 1)

    def track_communicator(self, comm: Any) -> TimedCommunicator:
        self.communicators.append(type(comm).__name__)
        return TimedCommunicator(comm, self)
