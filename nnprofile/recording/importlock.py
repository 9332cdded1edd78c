"""Python 3.10's import locks made reentrant while a program is recorded, as Python 3.12 made them.

NNabla imports on its hot paths: each auto_forward call and each arithmetic operator on variables runs an
import that never succeeds (``nnabla.nnabla``, a Cython module's relative try before the absolute one),
through importlib's module locks. ``_ModuleLock.acquire`` notes the lock a thread waits on in the global
``_blocking_on`` and deletes the note when done. A garbage collection that runs inside it (any allocation
may start one) can free NNabla variables whose release runs NNabla again, and so another import on the same
thread, which notes and deletes its own lock under the same key: the outer delete then fails, KeyError,
and NNabla's C++ leaves it pending, so the program's ``backward()`` dies with SystemError (MAML's double
backward, seen after its tenth iteration). A recording allocates, so collections come more often: the
program that runs alone would die under nnprofile.

Python 3.12 keeps a list per thread (gh-106176). Here the dict becomes one that keeps, per thread, the locks
it waits on as a stack: a nested wait notes its lock above the outer one and takes only its own off. The
deadlock check reads the innermost, as before. Installed when recording starts, the original put back at
its end; where the interpreter's importlib differs (its ``_blocking_on`` is no plain dict), nothing is done.
Between windows, where the recording allocates nothing, the dict runs as a plain one (``stacked(False)``):
NNabla's two failing imports a step would otherwise pay four Python calls each step.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional


def _stacked_set(self: "StackedLocks", key: Any, value: Any) -> None:
    self.stacks.setdefault(key, []).append(value)
    dict.__setitem__(self, key, value)


def _stacked_del(self: "StackedLocks", key: Any) -> None:
    stack = self.stacks.get(key)
    if stack:
        stack.pop()
    if stack:
        dict.__setitem__(self, key, stack[-1])
    else:
        self.stacks.pop(key, None)
        dict.pop(self, key, None)


class StackedLocks(dict):
    """``_blocking_on``: thread id -> the lock it waits on (the innermost), nested waits stacked. Between a
    recording's windows (``stacked(False)``) it is a plain dict again, at a plain dict's speed: the program
    then allocates as it does alone (NNabla's failing imports, two a step, would pay a Python call each)."""

    __setitem__ = _stacked_set
    __delitem__ = _stacked_del

    def __init__(self, start: Dict[Any, Any]):
        super().__init__(start)
        self.stacks: Dict[Any, List[Any]] = {k: [v] for k, v in start.items()}


def stacked(on: bool) -> None:
    """The nested waits stacked (a window open) or not (between windows); where installed."""
    bootstrap = sys.modules.get("_frozen_importlib")
    locks = getattr(bootstrap, "_blocking_on", None)
    if not isinstance(locks, StackedLocks) or (StackedLocks.__setitem__ is _stacked_set) == on:
        return
    if on:  # the waits under way (other threads') as the bottom of their stacks; a wait noted meanwhile is kept
        StackedLocks.__setitem__, StackedLocks.__delitem__ = _stacked_set, _stacked_del
        for key, value in list(dict.items(locks)):
            locks.stacks.setdefault(key, [value])
    else:
        StackedLocks.__setitem__, StackedLocks.__delitem__ = dict.__setitem__, dict.__delitem__  # type: ignore
        locks.stacks = {}


def install() -> Optional[Any]:
    """Make the module locks reentrant; returns what ``uninstall`` puts back (None: nothing was changed)."""
    bootstrap = sys.modules.get("_frozen_importlib")
    current = getattr(bootstrap, "_blocking_on", None)
    if bootstrap is None or type(current) is not dict:
        return None
    bootstrap._blocking_on = StackedLocks(current)  # type: ignore[attr-defined]
    stacked(True)
    return current


def uninstall(original: Optional[Any]) -> None:
    bootstrap = sys.modules.get("_frozen_importlib")
    if original is None or bootstrap is None or not isinstance(getattr(bootstrap, "_blocking_on", None), StackedLocks):
        return
    stacked(True)  # the class as it began (the next recording's starts stacked)
    locks = bootstrap._blocking_on
    original.clear()
    original.update(dict(locks))  # waits under way when recording ends go on with the original
    bootstrap._blocking_on = original  # type: ignore[attr-defined]
