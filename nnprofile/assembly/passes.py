"""A recorded program's function calls, grouped into passes.

A pass is what one call of ``forward``/``backward`` ran: consecutive function calls from one call
site in which no function runs twice (a loop calling ``vpred.forward()`` ten times gives ten
passes), ended early by any other call of the program's (a solver, an iterator, a monitor, an
eager call). Under ``auto_forward``, consecutive function calls (each runs as it is made) form a
forward pass of their own, which the recorder also ends where another line of the loop builds, or
where the program's own code ran long between two functions (``nnprofile.recording.building``).
Each pass knows its phase and the name the program gave what it ran
the pass on (``loss`` in ``loss.backward()``), as its call site says
(``nnprofile.assembly.events.SiteInfo``). Eager calls are no pass: they belong to no graph. Only the
program's own calls make passes: a call inside another (a custom layer's functions on NdArrays, the
functions a double backward builds and runs) is its parent's child (``nnprofile.assembly.tree``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .events import Call, DYNAMIC, Event, STATIC, SiteInfo, depth_of


@dataclass
class Pass:
    phase: str  # "forward" or "backward"
    calls: List[Call] = field(default_factory=list)
    site: Optional[int] = None  # the call site's id; None for auto_forward calls
    name: str = ""  # what the program ran it on, where the bytecode says

    @property
    def dynamic(self) -> bool:
        return self.site is None

    @property
    def start_ns(self) -> int:
        return self.calls[0].start_ns

    @property
    def end_ns(self) -> int:
        return self.calls[-1].end_ns

    def spans(self) -> List[Tuple[int, int, Call]]:
        """(start, end, call) of each stretch of the pass: the time it ran. An auto_forward graph's pass is each of
        its functions from where NNabla began making it (``Call.entered_ns``): what lies between them is the
        program's own code, or another graph's functions."""
        if self.dynamic:
            return [(c.entered_ns, c.end_ns, c) for c in self.calls]
        return [(self.start_ns, self.end_ns, self.calls[-1])]

    def runs(self) -> List[List[Call]]:
        """The pass's functions that ran one after the other with only the graph engine's work between them: a
        static pass's, all of them; an auto_forward pass's, each one (the program's code runs between them)."""
        return [[c] for c in self.calls] if self.dynamic else [self.calls]

    @property
    def root(self) -> int:
        """The function that computes what the pass was run on: the last of a forward pass, the first
        of a backward pass."""
        return self.calls[-1].function if self.phase == "forward" else self.calls[0].function


def group_passes(events: Sequence[Event], sites: Dict[int, SiteInfo]) -> List[Pass]:
    """The passes of a sequence of events (one step's, or a whole recording's), in order."""
    out: List[Pass] = []
    current: Optional[Pass] = None
    seen: set = set()
    for event in events:
        if depth_of(event):
            continue  # a call inside another call (its child): no pass of its own, no end of one
        if not isinstance(event, Call) or event.kind not in (STATIC, DYNAMIC):
            current = None  # the program did something else: a pass has ended
            continue
        if event.kind == DYNAMIC:  # a run of them; a call with a stack begins another (another line builds it)
            if current is None or not current.dynamic or event.stack:
                current = Pass("forward")
                seen = set()
                out.append(current)
            current.calls.append(event)
            continue
        if current is None or current.dynamic or current.site != event.site or event.function in seen:
            info = sites.get(event.site) if event.site is not None else None
            phase, name = (info.phase, info.receiver) if info is not None else ("", "")
            if not phase:  # a call site the bytecode does not tell: a function's second run is its backward
                phase = (
                    "backward"
                    if any(event.function in {c.function for c in p.calls} for p in out[-2:] if p.phase == "forward")
                    else "forward"
                )
            current = Pass(phase, site=event.site, name=name)
            seen = set()
            out.append(current)
        current.calls.append(event)
        seen.add(event.function)
    return out
