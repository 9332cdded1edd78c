"""Progress bars for a person at a terminal, on long work: each section of a profile, ``--repeat``'s
fresh processes, ``compare``'s runs and trainings.

A bar is drawn with tqdm on stderr, only when stderr is a terminal, not with ``-q``, and under an MPI
launcher only on rank 0; otherwise nothing at all is drawn, and stdout (the log) is the same either
way. Lines printed to stdout while a bar is up clear it first and draw it again after
(``writing``), so that the two never mix on the screen.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, Optional, TextIO


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _first_rank() -> bool:
    from ..recording.launcher import world

    w = world()
    return w is None or w.rank == 0


class Progress:
    """Zero or one bar at a time; every method does nothing when disabled."""

    def __init__(self, enabled: bool, stream: Optional[TextIO] = None):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None

    @classmethod
    def for_terminal(cls, quiet: bool, stream: Optional[TextIO] = None) -> "Progress":
        stream = stream if stream is not None else sys.stderr
        return cls(not quiet and _is_terminal(stream) and _first_rank(), stream)

    def start(self, total: float, description: str, unit: str = "") -> None:
        self.close()
        if not self.enabled:
            return
        from tqdm import tqdm

        width = _width(self.stream)  # a terminal that states no size (0 columns) gets 80, not an empty bar
        self._bar = tqdm(
            total=total,
            desc=description,
            unit=unit,
            file=self.stream,
            leave=False,
            dynamic_ncols=width is not None,
            ncols=None if width is not None else 80,
            mininterval=0.1,
            ascii=os.name == "nt",
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]"
            if unit != "%"
            else "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
        )

    def update_to(self, n: float) -> None:
        if self._bar is not None and n > self._bar.n:
            self._bar.update(n - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # -- the callbacks of the API ---------------------------------------------------------

    def section(self, section: Any) -> None:
        kind, name = getattr(section, "kind", ""), getattr(section, "name", "")
        self.start(100, "measuring %s" % _short("%s '%s'" % (kind, name) if kind and name else section.title), "%")

    def round(self, section: Any, done: float) -> None:
        self.update_to(round(100 * done, 1))

    def section_end(self, section: Any, analysis: Any = None) -> None:
        self.close()

    def run(self, done: int, total: int, what: str = "") -> None:
        """A run of several (fresh processes): the bar over all of them, started at the first."""
        if self._bar is None or done == 0:
            self.start(total, "runs" if not what else what, "run")
        elif what:
            self._bar.set_description(what, refresh=False)
        self.update_to(done)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around a line printed to stdout: the bar cleared before, drawn again after."""
        if self._bar is None:
            yield
            return
        from tqdm import tqdm

        with tqdm.external_write_mode(file=self.stream):
            yield


def _width(stream: Any) -> Optional[int]:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None
    return columns or None


def _short(title: str, limit: int = 60) -> str:
    return title if len(title) <= limit else title[: limit - 1] + "…"
