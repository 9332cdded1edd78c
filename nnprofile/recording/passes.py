"""A recorded program's function calls, grouped into passes.

A pass is what one call of ``forward``/``backward`` ran: consecutive function
calls from one call site in which no function runs twice (a loop calling
``vpred.forward()`` ten times gives ten passes), ended early by any other
call of the program's (a solver, an iterator, a monitor). Under
``auto_forward``, consecutive function calls (each runs as it is made) form
a forward pass of their own. Each pass knows its phase and the name the
program gave what it ran the pass on (``loss`` in ``loss.backward()``), read
from the call site (``nnprofile.measure.callsite``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at
from .recorder import FunctionCall


@dataclass
class Pass:
    phase: str                      # "forward" or "backward"
    calls: List[FunctionCall] = field(default_factory=list)
    site: Any = None                # (code, instruction) of the call; None for auto_forward calls
    name: str = ""                  # what the program ran it on, where the bytecode says

    @property
    def dynamic(self) -> bool:
        return self.site is None

    @property
    def start_ns(self) -> int:
        return self.calls[0].start_ns

    @property
    def end_ns(self) -> int:
        return self.calls[-1].end_ns

    @property
    def root(self) -> Any:
        """The function that computes what the pass was run on: the last of a forward pass, the first
        of a backward pass."""
        return self.calls[-1].function if self.phase == "forward" else self.calls[0].function


class SiteReader:
    """Phase and name of each call site, read once per site."""

    def __init__(self) -> None:
        self._known: Dict[Any, Tuple[str, str]] = {}

    def read(self, site: Any) -> Tuple[str, str]:
        known = self._known.get(site)
        if known is None:
            method, receiver = call_at(site[0], site[1], FORWARD_NAMES + BACKWARD_NAMES)
            phase = "backward" if method in BACKWARD_NAMES else "forward" if method else ""
            if method in ("forward_all", "backward_all"):  # nn.forward_all([...]): called on a module
                receiver = ""
            known = self._known[site] = (phase, receiver)
        return known


def group_passes(events: Sequence[Any], reader: Optional[SiteReader] = None) -> List[Pass]:
    """The passes of a sequence of events (one step's, or a whole recording's), in order."""
    reader = reader or SiteReader()
    out: List[Pass] = []
    current: Optional[Pass] = None
    seen: set = set()
    for event in events:
        if not isinstance(event, FunctionCall):
            current = None  # the program did something else: a pass has ended
            continue
        if event.dynamic:
            if current is None or not current.dynamic:
                current = Pass("forward")
                seen = set()
                out.append(current)
            current.calls.append(event)
            continue
        if current is None or current.dynamic or current.site != event.site or event.function in seen:
            phase, name = reader.read(event.site)
            if not phase:  # a call site we cannot read: a function's second run is its backward
                phase = "backward" if any(event.function in {c.function for c in p.calls}
                                          for p in out[-2:] if p.phase == "forward") else "forward"
            current = Pass(phase, site=event.site, name=name)
            seen = set()
            out.append(current)
        current.calls.append(event)
        seen.add(event.function)
    return out
