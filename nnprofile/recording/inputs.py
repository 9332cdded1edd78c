"""The recorder's side of the program's data iterators and monitors: each read timed and named by the program's
own variable (through its own wrapper), each iterator's making noted, each monitor's add timed. A guest in the
program's call as every wrapper is (``nnprofile.recording.wrappers``): the program's own call runs once, through the
original, and a failure of nnprofile's own is noted and leaves it unrecorded."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Optional, Tuple

from .host import RecorderParts
from .raw import OPENED
from ..base.places import place
from ..assembly.events import InputCall, IteratorInfo, MonitorCall
from .callsite import assigned_name, first_outside, outside_frame, parameter_of, receiver_of_caller, receiver_path

_getframe = sys._getframe
_ident = threading.get_ident


class InputWrappers:
    """The Recorder's iterator and monitor wrappers (a part of it, mixed in through ``wrappers.Wrappers``)."""

    def _timed_next(self: RecorderParts, original: Callable) -> Callable:
        recorder = self

        def next(iterator: Any) -> Any:  # noqa: A001 (DataIterator's own name)
            try:
                plan = recorder._read_plan(iterator, _getframe(1))
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
                    recorder.events.append(
                        InputCall(index, start, end, depth, recorder._read_stack, m0, recorder.cpu.process_switches())
                    )
                    if not depth:
                        recorder.loop.input(index)
                    recorder.excluded.append((end, recorder.clock()))
                except Exception as e:
                    recorder.faults.add("data iterator", e)

        return next

    def _read_plan(self: RecorderParts, iterator: Any, frame: Any) -> Optional[Tuple[int, int]]:
        """None: not timed (counted, between windows); else (iterator, depth). A read may end the pass before
        it, and begin a step: the window that step closes or opens decides whether the read is timed."""
        if not self.recording or _ident() != self.program_thread:
            return None
        depth = len(self.open_calls)
        if depth:
            return (self._iterator_of(iterator, frame), depth) if self.capturing else None
        t0 = None
        if self.capturing:
            t0 = self.clock()
            self._break_pass()
            self._check_subclasses()
        self._read_stack = self.steps.take(frame)
        self.steps.moved(self._read_stack, "other", t0, frame)
        if not self.capturing:  # between windows (or the window just closed): counted only
            if self.steps.counts_reads():
                self.steps.light_read(self._iterator_of(iterator, frame))
            return None
        index = self._iterator_of(iterator, frame)
        self.aside(t0 if t0 is not None else self.clock())
        return index, 0

    def _iterator_of(self: RecorderParts, iterator: Any, frame: Any) -> int:
        """The iterator's index (named, the first time, as the program names it)."""
        index = self._iterator_index.get(id(iterator))
        if index is None or self._iterator_objects[index] is not iterator:
            name = self._iterator_name(iterator, frame)
            index = self._iterator_index[id(iterator)] = len(self.iterators)
            self._iterator_objects.append(iterator)
            self.iterators.append(IteratorInfo(name, bool(getattr(iterator, "_use_thread", False))))
        return index

    def _iterator_name(self: RecorderParts, iterator: Any, frame: Any) -> str:
        """What the program calls the iterator: its variable (``di_train``), through the program's own
        wrapper (``train.itr0`` for ``self.itr0.next()`` inside ``train.next()``), else the line that made
        it; distinct iterators get distinct names."""
        if frame.f_code.co_name == "__next__" and frame.f_back is not None:
            frame = frame.f_back  # for batch in data / next(data): the program's frame
        path = receiver_path(frame, ("next",))
        if path.startswith("self.") and frame.f_back is not None:
            outer = receiver_of_caller(frame.f_back, (frame.f_code.co_name,))
            path = "%s.%s" % (outer, path[5:]) if outer else path[5:]
        made = self._iterators_made.get(id(iterator))
        stored = self._iterators_named.get(id(iterator), "")
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

    def _made_iterator(self: RecorderParts, original: Callable) -> Callable:
        recorder = self

        def init(iterator: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(iterator, *args, **kwargs)
            try:
                if recorder.recording:
                    where = first_outside(_getframe(1), recorder._skip)
                    if where is not None:
                        recorder._iterators_made[id(iterator)] = place(*where)
                    outside = outside_frame(_getframe(1), recorder._skip)
                    if outside is not None:
                        recorder._iterators_named[id(iterator)] = assigned_name(outside)
            except Exception as e:
                recorder.faults.add("data iterator", e)
            return result

        return init

    def _timed_add(self: RecorderParts, original: Callable) -> Callable:
        recorder = self

        def add(monitor: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                timed = recorder.capturing and not recorder._in_monitor and _ident() == recorder.program_thread
                if timed:
                    depth = len(recorder.open_calls)
                    stack = None
                    if not depth:
                        recorder._break_pass()
                        stack = recorder.stacks.take(_getframe(1))
                        if not recorder.hooks_on:
                            recorder.past_the_loop(_getframe(1))
                    recorder._in_monitor = True
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
                recorder._in_monitor = False
                try:
                    end = recorder.clock()
                    recorder.events.append(
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
