"""The program's signals stay the program's: every handler nnprofile sets is set here, and a forked child gets the
program's own back.

nnprofile handles a few signals while it records (SIGTERM, to write what was recorded; SIGUSR1, for a window on
demand; the sampler's timer signal). A process the program forks (``multiprocessing``'s fork start method, a plain
``os.fork``) inherits them, and a pool's worker that ``terminate()`` ends would run nnprofile's handler instead of
dying quietly. So each handler nnprofile sets is noted with the handler it replaced (``take``), and a child gives
every one of them back as it starts (``os.register_at_fork``), then runs what the recorder asked for there (its
sampler's clock closed: ``in_child``).
"""

from __future__ import annotations

import os
import signal
from typing import Any, Callable, Dict, List, Tuple

_signal = signal.signal  # bound at import: a program that replaces ``signal.signal`` does not move nnprofile's
_getsignal = signal.getsignal
_held: Dict[int, Tuple[Any, Any]] = {}  # signal number -> (the handler nnprofile's replaced: the program's, its own)
_in_child: List[Callable[[], None]] = []
CTRL_C: List[int] = []  # the Ctrl-Cs that came while nnprofile held SIGINT (a KeyboardInterrupt without one: raised)


def take(number: int, handler: Any) -> Any:
    """``handler`` for ``number`` (from the main thread), the one it replaces noted for a forked child; returns it."""
    previous = _signal(number, handler)
    _held[number] = (_held[number][0] if number in _held else previous, handler)
    return previous


def give_back(number: int, previous: Any) -> None:
    """The program's handler ``previous`` for ``number`` again."""
    _held.pop(number, None)
    _signal(number, previous if previous is not None else signal.SIG_DFL)


def in_child(run: Callable[[], None]) -> None:
    """``run`` in a child the program forks, after its signals are given back (once registered, for the process)."""
    if run not in _in_child:
        _in_child.append(run)


def _after_fork_in_child() -> None:
    for number, (previous, ours) in list(_held.items()):
        try:
            if _getsignal(number) is ours:  # (one the program set since is the program's already)
                _signal(number, previous if previous is not None else signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass
    _held.clear()
    for run in list(_in_child):
        try:
            run()
        except Exception:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
