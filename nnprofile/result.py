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
    overhead_ns: float = 0.0  # per call: the timing's own cost, subtracted in the statistics
    # What the layer computes (forward and backward entries): None where not known.
    output_shape: Optional[str] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    bytes_read: Optional[int] = None
    bytes_written: Optional[int] = None
    dtype: Optional[str] = None  # of the layer's output: float16 when it ran in half precision

    @property
    def stats(self) -> Stats:
        """Statistics of the per-call times, the measured timing overhead taken off.

        Renderers ask for them many times; they are computed once for the
        samples and overhead at hand.
        """
        key = (len(self.samples_ns), self.overhead_ns, id(self.samples_ns))
        cached = self.__dict__.get("_stats")
        if cached is None or cached[0] != key:
            if self.overhead_ns:
                values = [max(0.0, s - self.overhead_ns) for s in self.samples_ns]
            else:
                values = self.samples_ns
            cached = (key, summarize(values))
            self.__dict__["_stats"] = cached
        return cached[1]

    @property
    def is_layer_work(self) -> bool:
        return self.phase in ("forward_function", "backward_function")

    @property
    def gflops_per_s(self) -> Optional[float]:
        mean = self.stats.mean
        if self.flops is None or mean <= 0:
            return None
        return self.flops / mean  # FLOP per ns = GFLOP/s

    @property
    def arithmetic_intensity(self) -> Optional[float]:
        """FLOPs per byte moved."""
        if self.flops is None or not (self.bytes_read or self.bytes_written):
            return None
        return self.flops / ((self.bytes_read or 0) + (self.bytes_written or 0))

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

    def coverage(self) -> List["Coverage"]:
        """How much of forward_all (backward_all) the per-layer entries account for."""
        out = []
        for layer_phase, whole_phase in (("forward_function", "forward_all"),
                                         ("backward_function", "backward_all")):
            layers = self.entries_of(layer_phase)
            whole = self.entries_of(whole_phase)
            if layers and whole:
                out.append(Coverage(layer_phase, whole_phase,
                                    round(sum(e.mean_ms for e in layers), 6), whole[0].mean_ms))
        return out


@dataclass(frozen=True)
class Coverage:
    layer_phase: str
    whole_phase: str
    layers_ms: float
    whole_ms: float

    @property
    def share(self) -> Optional[float]:
        return self.layers_ms / self.whole_ms if self.whole_ms > 0 else None


@dataclass
class Profile:
    """A whole run: what was profiled and how (header), and its sections."""

    header: Dict[str, object] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    sections: List[Section] = field(default_factory=list)
    complete: bool = False
    failure: Optional[str] = None
