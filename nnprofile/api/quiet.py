"""NNabla's INFO log kept quiet while nnprofile does its own NNabla work, as the command line keeps it.

NNabla logs INFO lines as it starts and as it loads a project or makes a data source ("Initializing CPU
extension...", "DataSource with shuffle(False)"): the command line hides them, and ``nnprofile.profile()``
and a recording's own calibration do likewise, putting the logger's level back after. A program's own
NNabla work, recorded, logs as it always does: that is the program's.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator


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
