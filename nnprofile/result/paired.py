"""Each layer's forward and backward paired: the one rule every output follows (the log's top layers, the HTML
report's layer table, ``Profile.layers()``, the comparison's per-layer rows).

A layer's entries are paired by its identity (``Entry.layer_id``; in results of version 1, which carry no ids,
its name, then unique in a section), in forward order; a backward whose forward the section does not hold
follows as a layer of its own. Its FLOPs are its forward's and backward's together, unknown where either is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .model import Entry, Section


@dataclass(frozen=True)
class LayerTime:
    """One layer's forward and backward, paired by the layer's identity (not its name)."""

    layer: str
    layer_type: str
    forward_ms: float
    backward_ms: float
    flops: Optional[int]  # forward + backward, None when unknown
    bytes_moved: int = 0  # read and written, forward + backward
    forward: Optional[Entry] = field(default=None, compare=False)  # the entries behind the figures
    backward: Optional[Entry] = field(default=None, compare=False)
    copies: int = 1  # a base layer: how many unrolled (or repeated) copies it sums
    # A recorded program's layer: its time per step (its calls in a step, summed), which differs
    # from a call's where its graph runs more or less than once a step; None: one call a step.
    per_step: Optional[float] = None

    @property
    def total_ms(self) -> float:
        """Forward and backward, per call."""
        return self.forward_ms + self.backward_ms

    @property
    def step_ms(self) -> float:
        """Its time in a step: what its share of the step is made of."""
        return self.total_ms if self.per_step is None else self.per_step

    @property
    def forward_step_ms(self) -> float:
        """Its forward's time in a step (a recorded program's: its calls in a step; else a call's)."""
        return self._in_step(self.forward, self.forward_ms)

    @property
    def backward_step_ms(self) -> float:
        return self._in_step(self.backward, self.backward_ms)

    def _in_step(self, entry: Optional[Entry], ms: float) -> float:
        if self.per_step is None or entry is None:
            return ms
        return entry.per_round_ns() / 1e6

    @property
    def gflops_per_s(self) -> Optional[float]:
        if self.flops is None or self.total_ms <= 0:
            return None
        return self.flops / (self.total_ms * 1e6)

    @property
    def gbytes_per_s(self) -> Optional[float]:
        if not self.bytes_moved or self.total_ms <= 0:
            return None
        return self.bytes_moved / (self.total_ms * 1e6)

    @property
    def first(self) -> Entry:
        """The entry that names the layer: its forward, or its backward where it has none."""
        entry = self.forward if self.forward is not None else self.backward
        assert entry is not None  # ``layer_times`` makes none without an entry
        return entry


def _key(e: Entry) -> object:
    return e.layer_id if e.layer_id is not None else e.layer


def layer_times(section: Section) -> List[LayerTime]:
    """A section's layers, each its forward and backward paired (the module's rule)."""
    backward: Dict[object, Entry] = {_key(e): e for e in section.entries_of("backward_function")}
    forward = section.entries_of("forward_function")
    paired = {_key(f) for f in forward}
    pairs = [(f, backward.get(_key(f))) for f in forward] + [(None, b) for k, b in backward.items() if k not in paired]
    return [_paired(f, b) for f, b in pairs]


def _paired(f: Optional[Entry], b: Optional[Entry]) -> LayerTime:
    both = [e for e in (f, b) if e is not None]
    flops: Optional[int] = None
    if all(e.flops is not None for e in both):
        flops = sum(e.flops or 0 for e in both)
    moved = sum((e.bytes_read or 0) + (e.bytes_written or 0) for e in both)
    first = both[0]
    return LayerTime(
        first.layer or "",
        first.layer_type or "",
        f.mean_ms if f is not None else 0.0,
        b.mean_ms if b is not None else 0.0,
        flops,
        moved,
        f,
        b,
    )
