"""The program's functions run now: under auto_forward (a dynamic graph's, as it is made) and on NdArrays (eager
work), timed through the function proxies; and where each function is made. An owned part of the recorder
(``FunctionCalls``), reaching it through ``parts.FunctionCallHost``.

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
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from .faults import Faults
from .parts import FunctionCallHost
from ..base.places import place
from ..assembly.events import DYNAMIC, EAGER, Call
from .callsite import first_outside, line_at
from .building import PROGRAM_GAP_NS
from .windowing import SITE_STEPS
from .raw import DYNAMIC_CALL, EAGER_CALL, MADE, OPENED, PLAIN, Detached
from .raw import EagerInfo
from .proxies import TimedFunction
from ..base.interference import CPU

_getframe = sys._getframe
_ident = threading.get_ident


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


class FunctionCalls:
    """The program's functions run now (timed through the function proxies), and where its functions are made."""

    def __init__(self, host: FunctionCallHost, skip: Tuple[str, ...]) -> None:
        self.host = host
        self._skip = skip  # modules whose frames are not the program's
        self.eager: Dict[Hashable, EagerInfo] = {}  # an eager call's key -> its function, as first seen
        self.created: Dict[Any, str] = {}  # function -> where the program made it
        self.ndarray_type: Any = None  # nnabla's NdArray, once recording started

    @property
    def faults(self) -> Faults:
        return self.host.faults

    def function_mode(self, inputs: Sequence[Any], kwargs: Dict[str, Any]) -> int:
        host = self.host
        if not host.recording or not host.hooks_on or _ident() != host.program_thread:
            if host.capturing and not host.hooks_on:  # (a function a proxy made before the steps without the hooks)
                self._without_hooks(sys._getframe(1), bool(kwargs.get("auto_forward")))
            return PLAIN
        if inputs and type(inputs[0]) is self.ndarray_type:
            return EAGER_CALL
        if not kwargs.get("auto_forward"):
            return MADE
        return DYNAMIC_CALL

    def _without_hooks(self, frame: Any, dynamic: bool) -> None:
        """A function made or run in the steps without the hooks: where it is past the program's loop (an evaluation
        after the training), the hooks go back on (no check for auto_forward's, which a dynamic loop makes by the
        hundred each step)."""
        if not dynamic:
            self.host.past_the_loop(frame)

    def run_function(
        self,
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
                if self.host.note_sites:
                    self.note_creation(outputs, depth=3)
            except Exception as e:
                self.faults.add("noting where a function was made", e)
            return outputs
        opened = self.host.open_calls
        depth = len(opened)
        start = made_ns if made_ns is not None else self.host.clock()
        m0 = self.host._mark()
        opened.append(OPENED)
        try:
            outputs = call()
        finally:
            del opened[depth:]
        try:
            end = self.host.clock()
            switches = (m0, self.host._mark())
            if mode == EAGER_CALL:
                self.eager_call(function, inputs, outputs, start, end, depth, switches)
            else:
                self.dynamic_call(outputs, start, end, depth, switches, function)
        except Exception as e:
            self.faults.add("timing a function run now", e)
        return outputs

    def dynamic_call(
        self,
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
        host = self.host
        window = host.window
        if depth:
            window.events.append(Call(parent, start, end, None, DYNAMIC, depth, None, *switches))
            return
        t0 = host.clock()
        builds = host.builds
        entered, entered_mark = builds.entered(start, switches[0])
        stack = None
        frame = _getframe(3)
        place = self._loop_place(frame)
        own = builds.program_time((entered, entered_mark), host.cpu.kind == CPU, window.excluded)
        passes = host.passes
        if not passes.dynamic or place != passes.dynamic_place or own > PROGRAM_GAP_NS:
            # a run of them begins, another line of the loop builds, or the program's own code ran long between
            stack = passes.dynamic_begins(place, entered, frame, t0, (start, switches[0], switches[1]))
        frames = builds.frames(frame, host.stacks, stack)
        window.events.append(Call(parent, start, end, None, DYNAMIC, 0, stack, *switches, entered, frames))
        passes.recent_dynamic.add(parent)
        if host.note_sites and host.steps.done < SITE_STEPS:
            self.note_creation(outputs, depth=4, function=parent)
        builds.ran(end, switches[1], len(window.excluded))  # (its own work below is after this end: left out too)
        window.excluded.append((t0, host.clock()))  # nnprofile's own work: no part of the pass or the program's

    def _loop_place(self, frame: Any) -> Any:
        """Where in the step loop's body the program is at a call: (its frame, its line), found by walking out to
        the frame running the loop (known once the loop was chosen); None before that or outside it. A graph made
        under auto_forward is built where the program builds it: each line of the loop that calls into the code
        making functions begins a pass of its own."""
        loop = self.host.steps.counter.loop
        if loop is None:
            return None
        code = self.host.stacks.objects[loop[0]] if loop[0] < len(self.host.stacks.objects) else None
        depth = 0
        while frame is not None and depth < 64:
            if frame.f_code is code:
                return (id(frame), line_at(code, frame.f_lasti))
            frame, depth = frame.f_back, depth + 1
        return None

    def eager_call(
        self,
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
            self.host.passes.close()
        self.host.window.events.append(Call(key, start, end, None, EAGER, depth, None, *switches))

    def note_creation(self, outputs: Any, depth: int = 2, function: Any = None) -> None:
        """Where the program created the function behind ``outputs`` (``function``, where known): its first frame
        outside NNabla."""
        first = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
        parent = function if function is not None else getattr(first, "parent", None)
        if parent is None or parent in self.created:
            return
        where = first_outside(_getframe(depth), self._skip)
        if where is not None:
            self.created[parent] = place(*where)

    def function_factory(self, factory: Callable) -> Callable:
        """NNabla's factory of a function class (what ``F.relu`` calls), its functions made while a window is open
        proxies that time their calls (``proxies.TimedFunction``). In the steps without the hooks, nothing is timed and
        NNabla's own function is made (a proxy's call costs an NdArray function some microseconds): only whether the
        program is past its loop is looked at (``_without_hooks``)."""
        host, clock, calls = self.host, self.host.clock, self
        from nnabla.auto_forward import get_auto_forward

        def make(*args: Any, **kwargs: Any) -> Any:
            if not host.capturing:
                return factory(*args, **kwargs)
            if not host.hooks_on and _ident() == host.program_thread:
                try:
                    calls._without_hooks(_getframe(1), get_auto_forward())
                except Exception as e:
                    host.faults.add("a new function", e)
                if not host.hooks_on:
                    return factory(*args, **kwargs)
            made = clock()
            function = factory(*args, **kwargs)
            try:
                return TimedFunction(function, calls, made)
            except Exception as e:
                host.faults.add("a new function", e)
                return function

        return make
