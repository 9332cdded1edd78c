"""A merged view of the ranks of a distributed run (result.json's ``ranks``; ``nnprofile.merging.ranks`` makes it,
``nnprofile.analysis.ranks`` reads it), typed: the world, how the ranks' clocks were aligned, the steps every rank
kept, and each rank's step parts per step. A profile of one process has an empty view (``{}`` in the file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..base.records import Record
from .notes import TEXT, Note


@dataclass
class Collective:
    """A rank's longest collective in each common step: its name, when the rank entered and left it (ns, on the
    aligned clock; None in a step without one)."""

    name: Optional[str] = None
    enter_ns: List[Optional[int]] = field(default_factory=list)
    exit_ns: List[Optional[int]] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        return {"name": self.name, "enter_ns": self.enter_ns, "exit_ns": self.exit_ns}

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Collective":
        name = d.get("name")
        return cls(None if name is None else str(name), list(d.get("enter_ns") or []), list(d.get("exit_ns") or []))


@dataclass
class RankRow(Record):
    """One rank: its host, how it ended, its step and each stored part of it per common step (ns)."""

    SPARSE = False
    rank: int = 0
    host: str = ""
    complete: bool = True
    failure: Optional[str] = None
    step_ns: List[float] = field(default_factory=list)
    parts_ns: Dict[str, List[float]] = field(default_factory=dict)
    collective: Optional[Collective] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def encode(self, name: str, value: Any) -> Any:
        return value.to_json() if name == "collective" else value

    @classmethod
    def decode(cls, name: str, value: Any) -> Any:
        return Collective.from_json(value) if name == "collective" else value


RankRow.KINDS = {
    "rank": int,
    "host": str,
    "complete": bool,
    "failure": str,
    "step_ns": list,
    "parts_ns": dict,
    "collective": dict,
}


@dataclass
class RanksView(Record):
    """The world (size, launcher, launch id), the ranks missing or left from an earlier launch, how the clocks were
    aligned (``clock``: method, offsets_ns), the steps every rank kept, and the ranks."""

    SPARSE = False
    size: Optional[int] = None
    launcher: Optional[str] = None
    launch: Optional[str] = None
    missing: List[int] = field(default_factory=list)
    stale: List[int] = field(default_factory=list)
    clock: Dict[str, Any] = field(default_factory=dict)
    steps: List[int] = field(default_factory=list)
    ranks: List[RankRow] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def clock_method(self) -> Note:
        """How the ranks' clocks were aligned (``nnprofile.render.notes`` says it; an earlier file's: its words)."""
        return Note.from_json(self.clock.get("method", ""))

    @property
    def clock_aligned(self) -> bool:
        """Whether the ranks' timelines are on one clock."""
        method = self.clock_method
        if method.kind == TEXT:
            return not str(method.figures.get("text", "")).startswith("not aligned")
        return method.kind != "clock_not_aligned"

    def encode(self, name: str, value: Any) -> Any:
        return [r.to_json() for r in value] if name == "ranks" else value

    @classmethod
    def decode(cls, name: str, value: Any) -> Any:
        if name == "clock" and "method" in value:
            Note.from_json(value["method"])  # a method that is no note: ValueError, naming it
        if name == "ranks":
            if not all(isinstance(r, dict) for r in value):
                raise ValueError("ranks holds what is no rank")
            return [RankRow.from_json(r) for r in value]
        return value


RanksView.KINDS = {
    "size": int,
    "launcher": str,
    "launch": str,
    "missing": list,
    "stale": list,
    "clock": dict,
    "steps": list,
    "ranks": list,
}
