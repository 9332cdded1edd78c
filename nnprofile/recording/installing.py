"""What the recorder puts in NNabla's place while it records (a mixin of ``Recorder``): the solver and
communicator factories' products made timed proxies, the function classes' products timed functions, the
iterators' and monitors' methods wrapped (an iterator's once the program imports it), and the solvers a
notebook made before recording started found and replaced."""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Optional, Tuple

from .host import RecorderParts
from ..base.places import place
from .bindings import is_communicator, one_level_down
from .callsite import first_outside
from .proxies import TimedCommunicator, TimedFunction, TimedSolver
from .raw import RawSolver

MONITOR_CLASSES = ("MonitorSeries", "MonitorTimeElapsed", "MonitorImage", "MonitorImageTile")
_getframe = sys._getframe


class Installing:
    """The Recorder's part that replaces NNabla's factories and wraps its classes' methods."""

    comm_rank: Optional[Tuple[int, int]]  # (the Recorder's, set in its __init__)

    def _patch_classes(self: RecorderParts) -> None:
        from nnabla import monitor

        self._patches.after_import("nnabla.utils.data_iterator", self._patch_iterators)
        for name in MONITOR_CLASSES:
            cls = getattr(monitor, name, None)
            if cls is not None and "add" in vars(cls):
                self.toggles.add("monitors", cls, "add", self.inputs.timed_add)

    def _patch_iterators(self: RecorderParts, data_iterator: Any) -> None:
        """NNabla's DataIterator timed: as recording starts, or when the program first imports it."""
        self.toggles.add("reads", data_iterator.DataIterator, "next", self.inputs.timed_next)  # (on: the next
        # step's end sets it as the schedule wants)
        self._patches.attribute(
            data_iterator.DataIterator, "__init__", self.inputs.made_iterator(data_iterator.DataIterator.__init__)
        )

    def _wrap_existing_solvers(self: RecorderParts) -> None:
        """Solvers and communicators the program made before recording started (a notebook's earlier
        cell), where a namespace given holds them: replaced by timed ones for the recording."""
        import nnabla.solver as solver_module

        made: Dict[int, Tuple[Any, Any]] = {}
        places = one_level_down(self.namespaces)
        for namespace in places:
            for value in list(namespace.values()):
                if (
                    type(value) is not TimedSolver
                    and isinstance(value, solver_module.Solver)
                    and (type(value).__module__ or "").startswith("nnabla")
                ):  # the program's own: patched
                    made.setdefault(id(value), (value, self._track_solver(value)))
                elif is_communicator(value) and id(value) not in made:
                    made[id(value)] = (value, self._track_communicator(value))
                    try:  # initialised already: it knows its rank
                        self.comm_rank = (int(value.rank), int(value.size))
                    except Exception:
                        pass
        if made:
            self._patches.everywhere(made, places)

    def _track_solver(self: RecorderParts, solver: Any) -> TimedSolver:
        where = first_outside(sys._getframe(2), self._skip)
        self.steps.counter.expects_updates = True  # its loop is the one that updates (``Counter``)
        self.solvers.append(
            RawSolver(
                solver,
                str(getattr(solver, "name", type(solver).__name__)),
                created=place(*where) if where is not None else None,
                made_ns=self.clock() if self.capturing else 0,
            )
        )
        return TimedSolver(solver, self, len(self.solvers) - 1)

    def _tracking_factory(self: RecorderParts, factory: Callable, track: Callable[[Any], Any], kind: str) -> Callable:
        """``factory`` whose products, made while recording, are timed (``track``: a solver's or a
        communicator's proxy)."""

        def make(*args: Any, **kwargs: Any) -> Any:
            made = factory(*args, **kwargs)
            if not self.recording:
                return made
            try:
                return track(made)
            except Exception as e:
                self.faults.add("a new %s" % kind, e)
                return made

        make.__name__ = getattr(factory, "__name__", kind)
        make.__doc__ = getattr(factory, "__doc__", None)
        return make

    def _track_communicator(self: RecorderParts, comm: Any) -> TimedCommunicator:
        self.communicators.append(type(comm).__name__)
        return TimedCommunicator(comm, self)

    def _function_factory(self: RecorderParts, factory: Callable) -> Callable:
        clock = self.clock

        def make(*args: Any, **kwargs: Any) -> Any:
            if not self.capturing:
                return factory(*args, **kwargs)
            made = clock()
            function = factory(*args, **kwargs)
            try:
                return TimedFunction(function, self, made)
            except Exception as e:
                self.faults.add("a new function", e)
                return function

        return make

    def _snapshot_first(self: RecorderParts, original: Callable) -> Callable:
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
