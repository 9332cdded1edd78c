"""A line of a program as its reader knows it: ``train.py:57``, and in a notebook the cell (``In [3], line 2``), as
IPython's own tracebacks name it, not the kernel's temporary file (``/tmp/ipykernel_1234/1849004287.py``)."""

from __future__ import annotations

import sys
from typing import Optional

# Where a full garbage collection in the program's own code is sampled (``nnprofile.recording.sampler``): a line of
# its own, with no number.
COLLECTION = "(garbage collection)"


def cell_of(filename: str) -> Optional[int]:
    """The execution count of the IPython cell whose code is in ``filename``; None outside IPython or for a file."""
    module = sys.modules.get("IPython")
    if module is None:
        return None
    try:
        shell = module.get_ipython()
        found = shell.compile._filename_map.get(filename) if shell is not None else None
    except Exception:
        return None
    return found if isinstance(found, int) else None


def place(filename: str, line: int) -> str:
    """``FILE:LINE``, or ``In [N], line L`` for a notebook's cell; a place with no line (0) as it is named."""
    if not line:
        return filename
    cell = cell_of(filename)
    return "In [%d], line %d" % (cell, line) if cell is not None else "%s:%d" % (filename, line)


def short(where: Optional[str]) -> str:
    """A place without its folder (``train.py:120``); a cell's stays as it is."""
    if not where:
        return "an unknown line"
    if where.startswith("In [") or ":" not in where:
        return where
    path, _, line = where.rpartition(":")
    return "%s:%s" % (path.replace("\\", "/").rsplit("/", 1)[-1], line)
