"""One recording window: what the recording keeps from a window's opening to its close.

A ``Window`` is made whole as a window opens (``Recorder.begin_capture``), written to by the hooks, the wrappers,
the sampler and the readings of other work while it is open, and handed whole to the capture as it closes
(``capturing.capture_of``); the next window is a new object, never this one emptied field by field (pyinstrument's
``ActiveProfilerSession`` has this shape). Before the first window, the recording's start stands in one.
"""

from __future__ import annotations

from typing import List, Tuple

from ..assembly.events import Event


class Window:
    """The events, nnprofile's own stretches, the readings of other work and the samples of one window."""

    __slots__ = (
        "started_ns",
        "stopped_ns",
        "events",
        "excluded",
        "readings",
        "samples",
        "handled",
        "taken",
        "blocked",
        "passes",
    )

    def __init__(self, started_ns: int = 0) -> None:
        self.started_ns = started_ns  # when it opened
        self.stopped_ns = 0  # when its steps were done (0 while open)
        self.events: List[Event] = []  # the program's calls, in order
        # nnprofile's own work between the program's calls, and the collections it set off: no part of any figure
        self.excluded: List[Tuple[int, int]] = []
        self.readings: List[Tuple[int, int, int]] = []  # (ns, waited for a CPU so far, switches so far)
        self.samples: List[Tuple[int, int]] = []  # the sampler's: (ns, index into its lines)
        self.handled: List[Tuple[int, int]] = []  # when the sampler's timer handler ran (ns)
        self.taken = 0  # samples tried (their cost's count)
        self.blocked: List[
            Tuple[int, int, int]
        ] = []  # the program's waits found (ns, index into its lines, ns blocked)
        self.passes: List[Tuple[int, int, str, str]] = []  # the program's pass calls as it made them (``passtimes``)

    def copy(self) -> "Window":
        """A copy whose lists no longer grow (what a SIGTERM writes while the program runs on)."""
        w = Window(self.started_ns)
        w.stopped_ns, w.taken = self.stopped_ns, self.taken
        w.events, w.excluded, w.readings = list(self.events), list(self.excluded), list(self.readings)
        w.samples, w.handled, w.blocked = list(self.samples), list(self.handled), list(self.blocked)
        w.passes = list(self.passes)
        return w
