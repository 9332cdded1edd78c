"""What a profile is: sections of timed entries, as plain data.

This is the hand-over between measuring and rendering. Every renderer reads a
``Profile`` and nothing else, so the log, the CSV files and the workbook cannot
disagree about which entries exist, in which order, or what they measured.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .timing import NS_PER_MS, Stats, summarize

# Phases in the order NNC logs them within a section.
PHASES = (
    "load_dataset", "let_data", "generate_data", "setup_function",
    "forward_function", "prepare_backward", "backward_function",
    "forward_all", "backward_all", "backward_all_wo_zero_grad",
    "weight_decay", "update", "monitor_loss",
)


@dataclass
class Entry:
    """One line of the NNC log: a label and the per-call times behind it."""

    label: str
    phase: str
    samples_ns: List[float]
    layer: Optional[str] = None
    layer_type: Optional[str] = None
    impl_class: Optional[str] = None
    in_place: bool = False
    calls_per_sample: int = 1

    @property
    def stats(self) -> Stats:
        return summarize(self.samples_ns)

    @property
    def runs(self) -> int:
        return len(self.samples_ns)

    @property
    def mean_ms(self) -> float:
        """The figure every renderer shows, rounded as the log prints it."""
        return ms(self.stats.mean)


def ms(ns: float) -> float:
    """Nanoseconds to milliseconds, rounded to the log's six decimals."""
    return round(ns / NS_PER_MS, 6)


def format_ms(value_ms: float) -> str:
    return "%f" % value_ms


@dataclass
class Section:
    """The profile of one optimizer (training) or one executor (inference)."""

    kind: str  # "optimizer" or "executor"
    name: str
    network: str
    entries: List[Entry] = field(default_factory=list)
    complete: bool = False

    @property
    def title(self) -> str:
        return "%s '%s' with network '%s'" % (self.kind, self.name, self.network)

    def entries_of(self, phase: str) -> List[Entry]:
        return [e for e in self.entries if e.phase == phase]


@dataclass
class Profile:
    """A whole run: what was profiled and how (header), and its sections."""

    header: Dict[str, object] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    sections: List[Section] = field(default_factory=list)
    complete: bool = False
    failure: Optional[str] = None
