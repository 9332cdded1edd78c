"""A timeline's event: a step, a pass, a layer's call, a solver, input, monitor or communication call.

Times are whole nanoseconds from the timeline's origin (a program's first kept step, graph
mode's first hooked pass); in a merged view of ranks each event names its ``rank``, on clocks the
merge aligned. result.json saves each event as a small object (``to_dict``); the Perfetto trace
is rendered from them (``nnprofile.render.trace``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from ..base.choices import PART_OF_PHASE

# A step, a window, a part of the step (its calls: forward, update, checkpoint, ...), the eager work, and "inside": a
# call that ran inside another (a custom layer's functions, a solver's own arithmetic), nested in it.
CATEGORIES = ("step", "window", *dict.fromkeys(PART_OF_PHASE.values()), "eager", "inside")


@dataclass(slots=True)
class TimelineEvent:
    name: str
    cat: str  # one of CATEGORIES
    start: int  # ns from the origin
    end: int
    args: Dict[str, Any] = field(default_factory=dict)
    rank: Optional[int] = None

    @property
    def is_call(self) -> bool:
        """A layer's call (its class in args): what a rank's own trace keeps and a merged view leaves out."""
        return "class" in self.args

    def shifted(self, offset: int, rank: Optional[int] = None) -> "TimelineEvent":
        return TimelineEvent(
            self.name, self.cat, self.start + offset, self.end + offset, self.args, self.rank if rank is None else rank
        )

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "name": self.name,
            "cat": self.cat,
            "start": self.start,
            "end": self.end,
            "args": self.args,
        }
        if self.rank is not None:
            out["rank"] = self.rank
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "TimelineEvent":
        return cls(
            str(data["name"]),
            str(data["cat"]),
            int(data["start"]),
            int(data["end"]),
            dict(data.get("args") or {}),
            int(data["rank"]) if data.get("rank") is not None else None,
        )


# A string's JSON, as json.dumps writes it (ASCII)
json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii


class SharedArgs:
    """The JSON of events' arguments (``encode``), each dict encoded once however many events share it: the calls
    of one function share theirs (``nnprofile.assembly.sections``), and result.json and the trace write them all."""

    def __init__(self, encode: Callable[[Any], str]) -> None:
        self._encode = encode
        self._known: Dict[int, Tuple[Dict[str, Any], str]] = {}  # id(args) -> (args, its JSON)

    def __call__(self, args: Dict[str, Any]) -> str:
        known = self._known.get(id(args))
        if known is None or known[0] is not args:
            known = self._known[id(args)] = (args, self._encode(args))
        return known[1]
