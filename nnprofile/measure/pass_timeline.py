"""Graph mode's timeline: the hooked passes of a section's first rounds, each function inside its pass, as
``nnprofile.measure.items.PassProbe`` times them."""

from __future__ import annotations

from typing import List, Optional, Sequence

from ..result.timeline import TimelineEvent


class Timeline:
    """Graph mode's timeline: the hooked passes of the first rounds, each function inside its pass."""

    def __init__(self, max_rounds: int = 20):
        self.max_rounds = max_rounds
        self.events: List[TimelineEvent] = []
        self.origin: Optional[int] = None
        self.section = ""  # the title of the section being measured

    def add_pass(
        self,
        round_number: int,
        phase: str,
        start: int,
        end: int,
        starts: List[int],
        ends: List[int],
        names: Sequence[Optional[str]],
        details: Sequence[Optional[dict]],
    ) -> None:
        if round_number > self.max_rounds:
            return
        if self.origin is None:
            self.origin = start
        o = self.origin
        self.events.append(
            TimelineEvent(
                "%s pass, round %d" % (phase, round_number),
                phase,
                start - o,
                end - o,
                {"round": round_number, "section": self.section},
            )
        )
        for name, detail, t0, t1 in zip(names, details, starts, ends):
            if name is not None:
                self.events.append(TimelineEvent(name, phase, t0 - o, t1 - o, detail or {"phase": phase}))
