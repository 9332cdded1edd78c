"""A dataset's CSV as data: read before NNabla reads it, so that a shared project cannot hang the run or put the
contents of a file into a message.

NNabla's cache maker takes every cell of a dataset's CSV that is not a number for a file to load (relative to the
CSV's folder), in a pool of processes that waits without a bound: a cell naming a FIFO hangs it forever, and a
file that is no CSV (``../../etc/passwd``) has its lines read as file names, which NNabla's errors then quote.
``check_csv`` reads the CSV first: its header and one data row at least, and each file its cells name a regular
file that can be read. A message names the CSV, the line and the column, never what a cell holds.
"""

from __future__ import annotations

import csv
import os

from ..base.errors import ProfileError
from ..base.readable import require_regular


def check_csv(name: str, path: str) -> None:
    """The CSV of dataset ``name``: a regular file with a header and a data row, every file its cells name (its
    cells that are not numbers, its comment columns ``#...`` aside) a regular file; else one error."""
    where = "dataset '%s': %s" % (name, path)
    require_regular(path, where)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise ProfileError("%s is empty: a dataset's CSV begins with its header" % where)
            columns = [i for i, h in enumerate(header) if not h.strip().startswith("#")]
            rows = 0
            for line, row in enumerate(reader, start=2):
                rows += 1
                for i in columns:
                    if i < len(row):
                        _cell(row[i], folder, "%s, line %d, column %d: the file it names" % (where, line, i + 1))
    except csv.Error as e:
        raise ProfileError("%s is no CSV NNabla reads (%s)" % (where, type(e).__name__))
    except UnicodeError:
        raise ProfileError("%s is no text file" % where)
    if not rows:
        raise ProfileError("%s holds a header and no data row" % where)


def _cell(value: str, folder: str, what: str) -> None:
    try:
        float(value)
        return
    except ValueError:
        pass
    if "://" in value:
        return  # a remote file: NNabla downloads it
    require_regular(value if os.path.isabs(value) else os.path.join(folder, value), what)
