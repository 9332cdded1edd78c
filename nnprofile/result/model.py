"""What a profile is: sections of timed entries, as plain data.

This is the hand-over between measuring and rendering. Every renderer reads a
``Profile`` (and the analysis computed once from it) and nothing else, so the
log, the CSV files and the workbook cannot disagree about which entries exist,
in which order, or what they measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .details import Child, Sampling, SectionInfo
from .ranks import RanksView
from ..base.buffers import StepMemory
from ..base.series import corrected
from ..base.stats import NS_PER_MS, Stats, summarize_undisturbed
from ..base.choices import LAYER_PHASES, OUTSIDE, PHASES  # noqa: F401  (PHASES: part of this module's vocabulary)
from .header import Header, ProjectHeader, header_from_dict
from .notes import Note
from .timeline import TimelineEvent
from .windows import WindowSummary

if TYPE_CHECKING:  # pandas is imported only when a DataFrame is asked for
    import pandas


@dataclass
class Entry:
    """One line of the NNC log: a label and the per-call times behind it."""

    label: str
    phase: str
    samples_ns: List[float]
    layer: Optional[str] = None
    # The layer's identity within its section: the position of its function in
    # forward execution order. Forward and backward entries of one function
    # share it; two layers that happen to share a name never do.
    layer_id: Optional[int] = None
    layer_type: Optional[str] = None
    impl_class: Optional[str] = None
    in_place: bool = False
    calls_per_sample: int = 1
    overhead_ns: float = 0.0  # per call: the timing's own cost, subtracted in the statistics
    # Per call: the timing's own cost estimated inside a call too short to take it off (it would leave almost
    # nothing), so left in its figures, which are then at most what the call took; parts add up without it.
    kept_cost_ns: float = 0.0
    # What the layer computes (forward and backward entries): None where not known.
    output_shape: Optional[str] = None
    params: Optional[int] = None
    flops: Optional[int] = None
    bytes_read: Optional[int] = None
    bytes_written: Optional[int] = None
    dtype: Optional[str] = None  # of the layer's output: float16 when it ran in half precision
    # What the layer holds, in the dtype that ran: its outputs, parameters, their gradients,
    # and the gradients it writes for its other inputs (None where not a layer).
    output_bytes: Optional[int] = None
    parameter_bytes: Optional[int] = None
    gradient_bytes: Optional[int] = None
    input_gradient_bytes: Optional[int] = None
    # How many of the samples each round took, in order (empty: one round, as in version 1),
    # and the rounds left out of the mean because the machine ran slow in them.
    round_sizes: List[int] = field(default_factory=list)
    dropped_rounds: List[int] = field(default_factory=list)
    # False when measuring stopped (a failure, Ctrl-C) before the entry reached its sampling rule.
    complete: bool = True
    # With --repeat: the mean of each fresh process's run, for the run-to-run spread.
    run_means: List[float] = field(default_factory=list)
    # A recorded program's layer: where the program created it ("train.py:42"), None where not known.
    source: Optional[str] = None
    # A merged view of several ranks: the entry's mean (ms) on each rank, in the order of
    # ``Profile.ranks.ranks``; None for a rank without the entry.
    rank_means: List[Optional[float]] = field(default_factory=list)
    # A recorded program's call that ran others inside it (a custom layer's functions on NdArrays, a
    # double backward's functions, a solver's own arithmetic): each kind of call inside it.
    children: List[Child] = field(default_factory=list)
    # Other work on the machine (``nnprofile.base.interference``): the samples it interrupted (their indexes) and,
    # for each, the time it took of that sample (``taken_ns``: the sample's wall time less the thread's CPU time),
    # taken off it in every figure; a sample whose time taken is not known (None: a wait) is left out, and the
    # others weighted by the rate other work interrupted the section's timed work at (per ns). A step's samples
    # have the time its thread waited for a CPU taken off already (``waited_ns``, per sample).
    disturbed: List[int] = field(default_factory=list)
    taken_ns: List[Optional[float]] = field(default_factory=list)
    switch_rate: float = 0.0
    waited_ns: List[float] = field(default_factory=list)

    @property
    def stats(self) -> Stats:
        """Statistics of the per-call times, the measured timing overhead taken off.

        When the samples were taken in rounds, the mean is that of the round
        means, slow rounds left out (see ``nnprofile.base.stats.summarize_rounds``).

        Renderers ask for them many times; they are computed once for the
        samples and overhead at hand.
        """
        key = self._key()
        cached = self.__dict__.get("_stats")
        if cached is not None and cached[0] == key:
            return cached[1]
        stats = summarize_undisturbed(
            self.values(), self.round_sizes, self.dropped_rounds, self.disturbed, self.switch_rate, self.taken_ns
        )
        self.__dict__["_stats"] = (key, stats)
        return stats

    def _key(self) -> tuple:
        """What the statistics and the time per round are of: the lists by identity and length, cheap to check
        (nothing allocated), and any change of samples, rounds or dropped rounds (always by a new list or by growing
        one) shows."""
        return (
            id(self.samples_ns),
            len(self.samples_ns),
            id(self.round_sizes),
            len(self.round_sizes),
            id(self.dropped_rounds),
            len(self.dropped_rounds),
            self.overhead_ns,
            id(self.disturbed),
            len(self.disturbed),
            id(self.taken_ns),
            len(self.taken_ns),
            self.switch_rate,
        )

    def values(self) -> List[float]:
        """The per-call times the statistics are of: the timing's own cost taken off each."""
        if self.overhead_ns:
            return [max(0.0, s - self.overhead_ns) for s in self.samples_ns]
        return self.samples_ns

    def round_totals(self) -> List[float]:
        """The entry's time in each round (a recorded program's step), in ns: its calls summed, the timing's
        own cost taken off each, a call other work interrupted less the time it took (at the entry's mean where that
        is not known); a round without a call counts as none."""
        totals: List[float] = []
        start = 0
        fixed: List[Optional[float]] = corrected(self.values(), self.disturbed, self.taken_ns)
        stand_in = self.stats.mean if self.disturbed else 0.0
        for n in self.round_sizes or [len(fixed)]:
            totals.append(sum(stand_in if v is None else v for v in fixed[start : start + n]))
            start += n
        return totals

    def calls_per_round(self) -> float:
        """Its calls per round over the rounds kept (those ``per_round_ns`` counts)."""
        dropped = set(self.dropped_rounds)
        sizes = self.round_sizes or [len(self.samples_ns)]
        kept = [n for r, n in enumerate(sizes) if r not in dropped] or sizes
        return sum(kept) / len(kept) if kept else 0.0

    def calls_per_pass(self, passes: float) -> float:
        """How often it ran in a pass of its graph (``passes``: the graph's passes per round; 0: once a pass)."""
        return self.calls_per_round() / passes if passes > 0 else 1.0

    def per_round_ns(self) -> float:
        """Its time per round over the rounds kept (the slow ones left out): a recorded program's time per
        step. Every entry of a program counts the same rounds, so that parts add up to the step."""
        key = self._key()
        cached = self.__dict__.get("_per_round")
        if cached is not None and cached[0] == key:  # (asked by every renderer: found once, as ``stats`` is)
            return cached[1]
        dropped = set(self.dropped_rounds)
        totals = self.round_totals()
        kept = [t for r, t in enumerate(totals) if r not in dropped] or totals
        found = sum(kept) / len(kept) if kept else 0.0
        self.__dict__["_per_round"] = (key, found)
        return found

    @property
    def run_cv(self) -> Optional[float]:
        """Coefficient of variation of the per-process means (--repeat), None with fewer than two."""
        n = len(self.run_means)
        if n < 2:
            return None
        mean = sum(self.run_means) / n
        if mean <= 0:
            return None
        return (sum((m - mean) ** 2 for m in self.run_means) / (n - 1)) ** 0.5 / mean

    @property
    def rank_cv(self) -> Optional[float]:
        """Coefficient of variation of the entry's means across ranks (a merged view), None with fewer
        than two ranks holding it."""
        means = [m for m in self.rank_means if m is not None]
        n = len(means)
        if n < 2:
            return None
        mean = sum(means) / n
        if mean <= 0:
            return None
        return (sum((m - mean) ** 2 for m in means) / (n - 1)) ** 0.5 / mean

    @property
    def is_layer_work(self) -> bool:
        return self.phase in LAYER_PHASES

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
class Interference:
    """Other work on the machine while a section was measured, as the kernel accounted for it
    (``nnprofile.base.interference``): over ``timed_ns`` of the section's measured time (its rounds, a program's
    kept steps), the time the profiled thread waited, runnable, for a CPU (``waited_ns``; None where the kernel
    does not say), the involuntary context switches in its timed calls, and the samples they interrupted (left out
    of every figure) of all its samples. ``measured``: False where the kernel said nothing (not measured)."""

    measured: bool = False
    timed_ns: float = 0.0
    waited_ns: Optional[float] = None
    switches: int = 0
    disturbed: int = 0
    samples: int = 0

    @property
    def share(self) -> Optional[float]:
        """What of the measured time other work took (None where not known)."""
        if not self.measured or self.waited_ns is None or self.timed_ns <= 0:
            return None
        return min(1.0, max(0.0, self.waited_ns / self.timed_ns))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "measured": self.measured,
            "timed_ns": round(self.timed_ns, 1),
            "waited_ns": None if self.waited_ns is None else round(self.waited_ns, 1),
            "switches": self.switches,
            "disturbed": self.disturbed,
            "samples": self.samples,
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Interference":
        waited = d.get("waited_ns")
        return cls(
            bool(d.get("measured")),
            float(d.get("timed_ns") or 0.0),
            None if waited is None else float(waited),
            int(d.get("switches") or 0),
            int(d.get("disturbed") or 0),
            int(d.get("samples") or 0),
        )


def combined(parts: "List[Interference]") -> Optional[Interference]:
    """Several sections' interference as one (a run's): their times, switches and samples summed."""
    known = [p for p in parts if p.measured]
    if not known:
        return None
    waited = [p.waited_ns for p in known]
    return Interference(
        True,
        sum(p.timed_ns for p in known),
        None if any(w is None for w in waited) else sum(w for w in waited if w is not None),
        sum(p.switches for p in known),
        sum(p.disturbed for p in known),
        sum(p.samples for p in known),
    )


@dataclass
class Section:
    """The profile of one optimizer (training) or one executor (inference) of a project, or of one
    graph of a recorded program, or of that program's step."""

    kind: str  # "optimizer", "executor", "graph" or "script"
    name: str
    network: str
    entries: List[Entry] = field(default_factory=list)
    complete: bool = False
    # The machine's speed in each round of measuring, relative to its usual speed
    # (1.2: that round ran 20% slower); see ``nnprofile.base.stats.Drift``.
    speed_levels: List[float] = field(default_factory=list)
    # The step's memory (see ``nnprofile.base.buffers``): parameters, gradients, solver_state,
    # activations_at_peak, peak_estimated, peak_layer, peak_phase, alive_at_peak, peak_measured,
    # measured (how), batch_size, curve; empty when not measured.
    memory: StepMemory = field(default_factory=StepMemory)
    # A fixed workload's time in each round (``nnprofile.measure.machine_watch.Reference``): the
    # machine's speed, comparable between runs.
    reference_ns: List[float] = field(default_factory=list)
    # What the time budget allowed (``nnprofile.measure.rounds``): rounds, seconds, budget_seconds, how entries
    # were sampled (lean, layer_every, shared_from, partial rounds), stopped (why sampling ended); empty if unknown.
    sampling: Sampling = field(default_factory=Sampling)
    # What the section says besides its entries (a recorded program's graph: its name, what trains it, its passes
    # per step, what it is for; its step: the program's own lines): ``nnprofile.result.details``.
    info: SectionInfo = field(default_factory=SectionInfo)
    # Other work on the machine while it was measured (None: not measured: an older result, a hand-made one).
    interference: Optional[Interference] = None

    def __post_init__(self) -> None:
        if isinstance(self.info, dict):  # a section made by hand with the dicts of earlier versions
            self.info = SectionInfo.from_json(self.info)
        if isinstance(self.memory, dict):
            self.memory = StepMemory.from_json(self.memory)
        if isinstance(self.sampling, dict):
            self.sampling = Sampling.from_json(self.sampling)

    @property
    def title(self) -> str:
        if self.kind == OUTSIDE:  # a recorded program's calls outside its kept steps
            return "calls outside the kept steps of '%s'" % self.name
        if not self.network:  # a recorded program has no network of its own
            return "%s '%s'" % (self.kind, self.name)
        return "%s '%s' with network '%s'" % (self.kind, self.name, self.network)

    def entries_of(self, phase: str) -> List[Entry]:
        return [e for e in self.entries if e.phase == phase]

    @property
    def outside_steps(self) -> bool:
        """What a recorded program ran only outside its kept steps (its calls there, a graph run only there): no
        part of any step."""
        return self.kind == OUTSIDE or bool(self.info.outside)


@dataclass(repr=False)
class Profile:
    """A whole run: what was profiled and how (header), and its sections."""

    # What was profiled and how (``nnprofile.result.header``); a dict is read as one (its "kind").
    header: Header = field(default_factory=ProjectHeader)
    # What is said beside the figures: each a kind and its figures (``nnprofile.result.notes``), said in words by
    # the renderers (``str(note)``).
    notes: List[Note] = field(default_factory=list)
    sections: List[Section] = field(default_factory=list)
    complete: bool = False
    failure: Optional[str] = None
    # A recorded program's timeline (its kept steps) or graph mode's (its first hooked passes).
    timeline: List[TimelineEvent] = field(default_factory=list)
    # A merged view of the ranks of a distributed run (see ``nnprofile.merging.ranks``): the
    # world, each rank's step parts per step, how the clocks were aligned; empty otherwise.
    ranks: RanksView = field(default_factory=RanksView)
    # A long training recorded in windows (``nnprofile.result.windows``): each window in a few figures,
    # the view over the run; its sections are then the last window's. Empty for one window.
    windows: List[WindowSummary] = field(default_factory=list)
    # The files the run wrote into its folder, relative to it (result.json lists them: a later run into the
    # folder removes those of them it does not write again, and nothing else).
    files: List[str] = field(default_factory=list)
    # The folder its files were written to or loaded from (not saved: it is where the file is).
    location: Optional[str] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Made by hand (a test, a notebook): a dict header and dict events are read as typed ones.
        if isinstance(self.header, dict):
            self.header = header_from_dict(self.header)
        self.notes = [Note.from_json(n) for n in self.notes]
        self.timeline = [TimelineEvent.from_dict(e) if isinstance(e, dict) else e for e in self.timeline]
        self.windows = [WindowSummary.from_dict(w) if isinstance(w, dict) else w for w in self.windows]
        if isinstance(self.ranks, dict):
            self.ranks = RanksView.from_json(self.ranks)

    def __repr__(self) -> str:
        """One line: what was profiled, its sections, how it ended (the figures are in to_dataframe())."""
        entries = sum(len(s.entries) for s in self.sections)
        return "<nnprofile Profile of %s: %d section%s (%s), %d entries, %s%s>" % (
            self.header.project or "?",
            len(self.sections),
            "" if len(self.sections) == 1 else "s",
            ", ".join(s.title for s in self.sections),
            entries,
            "complete" if self.complete else "incomplete: %s" % (self.failure or "stopped"),
            ", in %s" % self.location if self.location else "",
        )

    def _repr_html_(self) -> Optional[str]:
        """In Jupyter: the header, each step's breakdown, the top layers, the advice, a link to the report
        (made by ``nnprofile.render.inline``; None, the plain repr, where the renderers are not loaded)."""
        from .views import find

        maker = find("profile_html")
        return maker(self) if maker is not None else None

    def to_dataframe(self) -> "pandas.DataFrame":
        """One row per entry, in log order, every figure as a number (see ``nnprofile.result.frames``)."""
        from .views import make

        return make("profile_frame", self)

    def layers(self, group_by: str = "layer", sort: Optional[str] = None) -> "pandas.DataFrame":
        """One row per layer of every section (forward and backward paired, no pass totals): what a profile is
        read for first (``profile.layers().nlargest(3, "total_ms")``); ``group_by="type"``: one row per layer type
        of each section, its layers summed ("all BatchNormalization: 33 % of the step"); ``sort``: as the log's
        ``--sort`` orders its table (``"time"``: total_ms, ``"forward"``, ``"backward"``: the largest first;
        ``"name"``), by a column the frame holds; see ``nnprofile.result.frames``."""
        from .views import make

        if group_by not in ("layer", "type"):
            raise ValueError("group_by is 'layer' or 'type', not %r" % (group_by,))
        frame = make("layer_type_frame" if group_by == "type" else "layer_frame", self)
        if sort is None:
            return frame
        columns = {"time": "total_ms", "forward": "forward_ms", "backward": "backward_ms", "name": "layer"}
        if group_by == "type":
            columns = {"time": "ms_per_step", "name": "layer_type"}
        if sort not in columns:
            raise ValueError("a frame by %s sorts by %s, not %r" % (group_by, ", ".join(columns), sort))
        return frame.sort_values(columns[sort], ascending=sort == "name", kind="stable", na_position="last")

    def ranks_dataframe(self) -> "pandas.DataFrame":
        """A merged view's ranks: one row per rank, its step and parts (ms per step); empty otherwise."""
        from .views import make

        return make("ranks_frame", self)

    def labels(self) -> List[str]:
        """Every entry's label, section after section, in log order."""
        return [e.label for s in self.sections for e in s.entries]

    def interference(self) -> Optional[Interference]:
        """What other work on the machine took of the run (its sections' together; ``Interference.share``): None where
        it was not measured (an older result), one marked not measured where the kernel's accounting was not read.
        A program's sections share their kept steps: their time is counted once, their samples together."""
        parts = [s.interference for s in self.sections if s.interference is not None]
        if not parts:
            return None
        if getattr(self.header, "kind", "") in ("program", "merged"):  # one stretch of time: the samples summed
            first = parts[0]
            return Interference(
                first.measured,
                first.timed_ns,
                first.waited_ns,
                first.switches,
                sum(p.disturbed for p in parts),
                sum(p.samples for p in parts),
            )
        return combined(parts) or parts[0]
