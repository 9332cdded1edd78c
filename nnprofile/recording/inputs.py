"""The recorder's side of the program's data iterators and monitors: each read timed and named by the program's
own variable (through its own wrapper), each iterator's making noted, each monitor's add timed. A guest in the
program's call as every wrapper is (``nnprofile.recording.wrappers``): the program's own call runs once, through the
original, and a failure of nnprofile's own is noted and leaves it unrecorded."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from .parts import InputsHost
from .raw import OPENED
from ..base.places import place
from ..assembly.events import InputCall, IteratorInfo, MonitorCall
from .callsite import assigned_name, first_outside, outside_frame, parameter_of, receiver_of_caller, receiver_path

_getframe = sys._getframe
_ident = threading.get_ident
MONITOR_CLASSES = ("MonitorSeries", "MonitorTimeElapsed", "MonitorImage", "MonitorImageTile")


class Inputs:
    """The program's iterators (each named as the program names it, the line that made it noted) and the wrappers
    that time their reads and the monitors' adds; it reaches the recording through ``host``
    (``parts.InputsHost``). ``skip``: the modules whose frames are not the program's."""

    def __init__(self, host: InputsHost, skip: Tuple[str, ...]) -> None:
        self.host, self.skip = host, skip
        self.iterators: List[IteratorInfo] = []
        self._index: Dict[int, int] = {}  # id(iterator) -> its index
        self._objects: List[Any] = []
        self._made: Dict[int, str] = {}  # id(iterator) -> the program's line that made it
        self._named: Dict[int, str] = {}  # id(iterator) -> the name the program stored it under
        self._read_stack: Any = None  # the program's stack at the read under way
        self._in_monitor = False  # a monitor's add under way (one calling another is not timed again)

    def install(self, patches: Any, toggles: Any) -> None:
        """The monitors' adds wrapped (``toggles``: off between windows), and the iterators' reads once the program
        imports NNabla's DataIterator (``patches``: what the recording puts back at its end)."""
        from nnabla import monitor

        def iterators(data_iterator: Any) -> None:
            toggles.add("reads", data_iterator.DataIterator, "next", self.timed_next)  # (on: the next step's end
            # sets it as the schedule wants)
            patches.attribute(
                data_iterator.DataIterator, "__init__", self.made_iterator(data_iterator.DataIterator.__init__)
            )

        patches.after_import("nnabla.utils.data_iterator", iterators)
        for name in MONITOR_CLASSES:
            cls = getattr(monitor, name, None)
            if cls is not None and "add" in vars(cls):
                toggles.add("monitors", cls, "add", self.timed_add)

    def timed_next(self, original: Callable) -> Callable:
        inputs, recorder = self, self.host

        def next(iterator: Any) -> Any:  # noqa: A001 (DataIterator's own name)
            try:
                plan = inputs._read_plan(iterator, _getframe(1))
            except Exception as e:
                recorder.faults.add("data iterator", e)
                plan = None
            if plan is None:
                return original(iterator)
            index, depth = plan
            start = recorder.clock()
            m0 = recorder.cpu.process_switches()
            recorder.open_calls.append(OPENED)
            try:
                return original(iterator)
            finally:
                del recorder.open_calls[depth:]
                try:
                    end = recorder.clock()
                    recorder.window.events.append(
                        InputCall(index, start, end, depth, inputs._read_stack, m0, recorder.cpu.process_switches())
                    )
                    if not depth:
                        recorder.loop.input(index)
                    recorder.window.excluded.append((end, recorder.clock()))
                except Exception as e:
                    recorder.faults.add("data iterator", e)

        return next

    def _read_plan(self, iterator: Any, frame: Any) -> Optional[Tuple[int, int]]:
        """None: not timed (counted, between windows); else (iterator, depth). A read may end the pass before
        it, and begin a step: the window that step closes or opens decides whether the read is timed."""
        host = self.host
        if not host.recording or _ident() != host.program_thread:
            return None
        depth = len(host.open_calls)
        if depth:
            return (self._iterator_of(iterator, frame), depth) if host.capturing else None
        t0 = None
        if host.capturing:
            t0 = host.clock()
            host.between_calls()
        self._read_stack = host.steps.take(frame)
        host.steps.moved(self._read_stack, "other", t0, frame)
        if not host.capturing:  # between windows (or the window just closed): counted only
            if host.steps.counts_reads():
                host.steps.light_read(self._iterator_of(iterator, frame))
            return None
        index = self._iterator_of(iterator, frame)
        host.aside(t0 if t0 is not None else host.clock())
        return index, 0

    def _iterator_of(self, iterator: Any, frame: Any) -> int:
        """The iterator's index (named, the first time, as the program names it)."""
        index = self._index.get(id(iterator))
        if index is None or self._objects[index] is not iterator:
            name = self._iterator_name(iterator, frame)
            index = self._index[id(iterator)] = len(self.iterators)
            self._objects.append(iterator)
            self.iterators.append(IteratorInfo(name, bool(getattr(iterator, "_use_thread", False))))
        return index

    def _iterator_name(self, iterator: Any, frame: Any) -> str:
        """What the program calls the iterator: its variable (``di_train``), through the program's own
        wrapper (``train.itr0`` for ``self.itr0.next()`` inside ``train.next()``), else the line that made
        it; distinct iterators get distinct names."""
        if frame.f_code.co_name == "__next__" and frame.f_back is not None:
            frame = frame.f_back  # for batch in data / next(data): the program's frame
        path = receiver_path(frame, ("next",))
        if path.startswith("self.") and frame.f_back is not None:
            outer = receiver_of_caller(frame.f_back, (frame.f_code.co_name,))
            path = "%s.%s" % (outer, path[5:]) if outer else path[5:]
        made = self._made.get(id(iterator))
        stored = self._named.get(id(iterator), "")
        if stored and path and "." not in path and parameter_of(frame, path):
            path = stored  # read through a function's parameter (``iterator``): named where it was made
        name = (
            path
            or stored
            or (
                "line %s" % made.rsplit(":", 1)[1]
                if made
                else type(getattr(iterator, "_data_source", iterator)).__name__
            )
        )
        taken = {i.name for i in self.iterators}
        if name in taken and stored and stored not in taken:
            name = stored
        if name in taken and made and "line" not in name:
            name = "%s (line %s)" % (name, made.rsplit(":", 1)[1])
        base, n = name, 1
        while name in taken:
            n += 1
            name = "%s (%d)" % (base, n)
        return name

    def made_iterator(self, original: Callable) -> Callable:
        inputs, recorder = self, self.host

        def init(iterator: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(iterator, *args, **kwargs)
            try:
                if recorder.recording:
                    where = first_outside(_getframe(1), inputs.skip)
                    if where is not None:
                        inputs._made[id(iterator)] = place(*where)
                    outside = outside_frame(_getframe(1), inputs.skip)
                    if outside is not None:
                        inputs._named[id(iterator)] = assigned_name(outside)
            except Exception as e:
                recorder.faults.add("data iterator", e)
            return result

        return init

    def timed_add(self, original: Callable) -> Callable:
        inputs, recorder = self, self.host

        def add(monitor: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                timed = recorder.capturing and not inputs._in_monitor and _ident() == recorder.program_thread
                if timed:
                    depth = len(recorder.open_calls)
                    stack = None
                    if not depth:
                        recorder.break_pass()
                        stack = recorder.stacks.take(_getframe(1))
                        if not recorder.hooks_on:
                            recorder.past_the_loop(_getframe(1))
                    inputs._in_monitor = True
                    start = recorder.clock()
                    m0 = recorder.cpu.process_switches()
            except Exception as e:
                recorder.faults.add("monitor", e)
                timed = False
            if not timed:  # one monitor's add calling another's, or no window open
                return original(monitor, *args, **kwargs)
            recorder.open_calls.append(OPENED)
            try:
                return original(monitor, *args, **kwargs)
            finally:
                del recorder.open_calls[depth:]
                inputs._in_monitor = False
                try:
                    end = recorder.clock()
                    recorder.window.events.append(
                        MonitorCall(
                            str(getattr(monitor, "name", type(monitor).__name__)),
                            start,
                            end,
                            depth,
                            stack,
                            m0,
                            recorder.cpu.process_switches(),
                        )
                    )
                except Exception as e:
                    recorder.faults.add("monitor", e)

        return add
