"""NNabla's INFO log kept quiet while nnprofile does its own NNabla work, as the command line keeps it.

NNabla logs INFO lines as it starts and as it loads a project or makes a data source ("Initializing CPU
extension...", "DataSource with shuffle(False)"): the command line hides them, and ``nnprofile.profile()``
and a recording's own calibration do likewise, putting the logger's level back after. A program's own
NNabla work, recorded, logs as it always does: that is the program's. Likewise the process's parts a program may
change (``own_process``: the module search path, the modules loaded, ``open``, the recursion limit): nnprofile's own
work uses them as they were when it started.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, Iterator, Optional


@contextlib.contextmanager
def quiet_nnabla(level: int = logging.WARNING) -> Iterator[None]:
    logger = logging.getLogger("nnabla")
    previous = logger.level
    if previous < level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


# Recursion nnprofile's own work may need beyond the frames already on the stack (a JSON encoder, a workbook writer).
OWN_DEPTH = 3000


class Saved:
    """What of the process nnprofile relies on, as it was when a recording began: the module search path, the
    modules loaded, ``open`` (the builtin and ``io``'s), the recursion limit. A program may change any of them."""

    def __init__(self) -> None:
        import builtins
        import io

        self.path = list(sys.path)
        self.modules = dict(sys.modules)
        self.open = (builtins.open, io.open)
        self.limit = sys.getrecursionlimit()


@contextlib.contextmanager
def own_process(saved: Optional[Saved]) -> Iterator[None]:
    """While nnprofile makes and writes its files, the process as it began (``saved``): a program that rewrites
    ``sys.path``, takes modules out of ``sys.modules`` (nnprofile would import a second copy of them, whose classes
    are not its objects'), replaces ``open`` or lowers the recursion limit takes nothing away that nnprofile uses
    then. The program's own are put back after, as they were."""
    if saved is None:
        yield
        return
    import builtins
    import io

    path, opened, limit = list(sys.path), (builtins.open, io.open), sys.getrecursionlimit()
    changed = {k: sys.modules.get(k) for k, v in saved.modules.items() if sys.modules.get(k) is not v}
    if path != saved.path:
        sys.path[:] = saved.path
    sys.modules.update({k: saved.modules[k] for k in changed})
    builtins.open, io.open = saved.open
    sys.setrecursionlimit(max(limit, saved.limit, _depth() + OWN_DEPTH))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)
        builtins.open, io.open = opened
        for k, module in changed.items():
            if module is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = module
        if sys.path != path:
            sys.path[:] = path


def _depth() -> int:
    frame: Optional[Any] = sys._getframe()
    n = 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n
