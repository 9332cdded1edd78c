"""A graph built under auto_forward, as the program builds it: NNabla making each function, or the program's own code.

Under ``auto_forward`` a function runs as it is made, so a dynamic graph's pass is its functions and the time NNabla
takes to make each of them: a parametric function's Python (``nnabla.parametric_functions``: its parameters fetched
or created, its function made). What lies between one function's end and the moment the program's next call entered
NNabla is the program's own code: the lines of its model between two calls, or a library it calls there (matplotlib
saving an image, NumPy, a checkpoint written). That is the program's, never the pass's, and where it ran long
(``PROGRAM_GAP_NS`` of the thread's CPU time) the pass has ended there.

``Builds`` keeps when the outermost parametric function open now was entered (its wrappers: ``wrap``), when the last
function ended, and the program's frames of the last function made (``frames``: every auto_forward call keeps them,
so that the assembly knows which call of the program's built it, ``nnprofile.assembly.graphs``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

from .callsite import outside_frame
from .stack import Stacks

# The program's own code between two functions of a dynamic build (the thread's CPU time, nnprofile's own left out)
# beyond which the pass has ended: a model's lines between two calls take microseconds; a figure saved, an array
# converted in Python or a checkpoint written between them take milliseconds.
PROGRAM_GAP_NS = 1_000_000


class Builds:
    """The program's dynamic builds as they run (one per recorder)."""

    def __init__(
        self, clock: Callable[[], int], mark: Callable[[], int], recording: Callable[[], bool], skip: Tuple[str, ...]
    ) -> None:
        self.clock = clock
        self.mark = mark  # the thread's mark now (its CPU time)
        self.recording = recording  # whether a window is open in the program's thread now, under auto_forward
        self.skip = skip
        self.open_at = 0  # when the outermost parametric function open now was entered (0: none is)
        self.open_mark = 0  # the thread's mark then
        self.last_end = 0  # the last auto_forward function's end (0: none since the pass ended)
        self.last_mark = 0  # the thread's mark then
        self.last_excluded = 0  # how many of nnprofile's own stretches were set aside by then
        self._inner: Any = None  # the program's innermost frame at the last function, and its frames then
        self._frames: Any = None

    def wrap(self, made: Callable) -> Callable:
        """A parametric function of NNabla's whose making is timed: the outermost one open marks where NNabla began
        making the functions it makes."""
        builds = self

        @functools.wraps(made)
        def build(*args: Any, **kwargs: Any) -> Any:
            if builds.open_at or not builds.recording():
                return made(*args, **kwargs)
            builds.open_at, builds.open_mark = builds.clock(), builds.mark()
            try:
                return made(*args, **kwargs)
            finally:
                builds.open_at = 0

        return build

    def entered(self, start: int, mark: int) -> Tuple[int, int]:
        """When NNabla began making a function whose making began at ``start`` (the thread's mark ``mark``), and the
        mark then: where the program's call entered a parametric function, or where the function before it in the
        same one ended."""
        if not self.open_at:
            return start, mark
        if self.open_at > self.last_end:
            return self.open_at, self.open_mark
        return self.last_end, self.last_mark

    def program_time(self, entered: Tuple[int, int], marks: bool, excluded: List[Tuple[int, int]]) -> int:
        """The program's own time since the last function's end until ``entered`` (when and the mark), its CPU time
        where the marks are the thread's CPU time, else the wall clock's, nnprofile's own stretches left out; 0
        where no function ran before in the pass."""
        if not self.last_end:
            return 0
        own = sum(b - a for a, b in excluded[self.last_excluded :])
        at, mark = entered
        took = (mark - self.last_mark) if marks and mark and self.last_mark else (at - self.last_end)
        return max(0, took - own)

    def ran(self, end: int, mark: int, excluded: int) -> None:
        self.last_end, self.last_mark, self.last_excluded = end, mark, excluded

    def ended(self) -> None:
        """The pass has ended (another call of the program's ran): the next function begins a build."""
        self.last_end = 0

    def frames(self, frame: Any, stacks: Stacks, taken: Optional[Any] = None) -> Any:
        """The program's frames a function is made from (``taken``: the stack just taken at it); the last ones again,
        the innermost frame's instruction moved, where the program's innermost frame is the same."""
        inner = outside_frame(frame, self.skip)
        if taken is None and inner is not None and inner is self._inner and self._frames:
            last = self._frames[-1]
            self._frames = self._frames[:-1] + ((last[0], last[1], inner.f_lasti),)
            return self._frames
        self._inner, self._frames = inner, taken if taken is not None else stacks.take(frame)
        return self._frames

    def forget(self) -> None:
        """The frames held let go (a window closed)."""
        self._inner = self._frames = None
        self.last_end = 0


# The modules of NNabla's that make functions for the program: their public functions, where the program's call enters
# NNabla (``F.relu``, ``PF.convolution``), are what ``Builds.wrap`` times the making from.
MAKERS = (
    "nnabla.function_bases",
    "nnabla.functions",
    "nnabla.normalization_functions",
    "nnabla.numpy_compat_functions",
    "nnabla.parametric_functions",
)


def makers() -> List[Any]:
    """Each public function of NNabla's that makes functions for the program (``MAKERS``), once."""
    import importlib
    import types

    out: Dict[int, Any] = {}
    for name in MAKERS:
        module = importlib.import_module(name)
        for attr in dir(module):
            value = getattr(module, attr)
            if attr.startswith("_") or not isinstance(value, types.FunctionType):
                continue
            if getattr(value, "__module__", "") in MAKERS:
                out.setdefault(id(value), value)
    return list(out.values())
