"""NNabla's INFO log kept quiet while nnprofile does its own NNabla work, as the command line keeps it.

NNabla logs INFO lines as it starts and as it loads a project or makes a data source ("Initializing CPU
extension...", "DataSource with shuffle(False)"): the command line hides them, and ``nnprofile.profile()``
and a recording's own calibration do likewise, putting the logger's level back after. A program's own
NNabla work, recorded, logs as it always does: that is the program's. Likewise the module search path
(``own_imports``): nnprofile's own work uses the one it started with.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Iterator, List, Optional


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


@contextlib.contextmanager
def own_imports(saved: Optional[List[str]]) -> Iterator[None]:
    """While nnprofile makes and writes its files, the module search path it started with (``saved``): a program
    that rewrites ``sys.path`` (``sys.path[:] = [...]``) takes nothing away that nnprofile imports then. The
    program's own path is put back after."""
    if saved is None or sys.path == saved:
        yield
        return
    current = list(sys.path)
    sys.path[:] = saved
    try:
        yield
    finally:
        sys.path[:] = current
