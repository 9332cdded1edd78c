"""Analysis of a profile, computed once and read by every renderer: coverage, precision, the step breakdown
and advice (``advice``), memory as said (``memory``), the ranks of a distributed run (``ranks``).

``analyze(profile)`` turns the measured entries into what the outputs report
besides the entries themselves: how much of the whole passes the layers cover,
which entries missed the sampling target, which layer types have no FLOP
formula, each layer's forward and backward paired by identity, the drift of
the machine's speed, and for training sections the step breakdown and advice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..base.choices import BACKWARD, FORWARD, GRAPH, SCRIPT
from ..result import Entry, Profile, Section, views
from ..result.header import Header, ProjectHeader
from ..base.stats import Drift, median
from . import memory
from .advice import implausible, advise
from .facts import ChartShown
from .breakdown import (
    Advice,
    LayerTime,
    Summary,
    base_layers,
    layer_times,
    program_layers,
    summarize_program,
    summarize_section,
)
from .sampling import Precision, precision
from .ranks import RanksAnalysis, analyze_ranks, ranks_frame
from .windows import WindowsAnalysis, analyze_windows

__all__ = [
    "Analysis",
    "charted_layers",
    "Coverage",
    "SectionAnalysis",
    "analyze",
    "Advice",
    "LayerTime",
    "Precision",
    "RanksAnalysis",
    "Summary",
]


@dataclass(frozen=True)
class Coverage:
    """How much of a whole pass (forward_all, backward_all) its per-layer entries add up to."""

    layer_phase: str
    whole_phase: str
    layers_ms: float
    whole_ms: float
    engine_ms: float = 0.0  # a recorded program's: the graph engine's time between the functions
    per_pass: bool = False  # layers that ran in only some passes count as often as they ran one
    # Of layers_ms: the timing's own cost left in calls too short to take it off (``Entry.kept_cost_ns``), and
    # how many layers hold it.
    kept_cost_ms: float = 0.0
    kept_in: int = 0

    @property
    def share(self) -> Optional[float]:
        """The layers' share of the pass, the timing's cost left in the shortest calls not counted."""
        return (self.layers_ms - self.kept_cost_ms) / self.whole_ms if self.whole_ms > 0 else None

    @property
    def named_share(self) -> Optional[float]:
        """The functions and the engine between them together."""
        return (self.layers_ms - self.kept_cost_ms + self.engine_ms) / self.whole_ms if self.whole_ms > 0 else None


@dataclass
class SectionAnalysis:
    section: Section
    coverage: List[Coverage]
    missed_target: List[Entry]  # entries whose relative standard error is above the target
    unknown_flops: List[str]  # layer types without a FLOP formula
    incomplete: List[Entry]  # entries cut short by a failure or Ctrl-C
    layers: List[LayerTime]  # forward order, forward and backward paired by identity
    drift: Drift
    step: Optional[Summary] = None  # complete training sections: breakdown and advice
    run_spread: Optional["RunSpread"] = None  # with --repeat: how entry means moved between processes
    # A memory limit given (bytes), and the largest batch whose estimated peak fits in it (None: none fits, or no
    # limit or estimate).
    memory_limit: Optional[int] = None
    largest_batch: Optional[int] = None
    base_layers: List[LayerTime] = field(default_factory=list)  # unrolled copies summed into their base layer
    precision: Optional[Precision] = None  # what the time budget allowed, the errors reached
    # A recorded program's graph: the program's step (ms), which its layers' shares are of.
    program_step_ms: Optional[float] = None

    @property
    def coverage_by_whole_phase(self) -> Dict[str, float]:
        return {c.whole_phase: c.share for c in self.coverage if c.share is not None}


# Entries shorter than this are left out of the run-to-run spread: their relative figures are noise.
SPREAD_FLOOR_MS = 0.05


@dataclass(frozen=True)
class RunSpread:
    runs: int
    median_cv: float
    worst_cv: float
    worst: str


def run_spread(section: Section) -> Optional[RunSpread]:
    cvs = sorted((e.run_cv, e.label) for e in section.entries if e.run_cv is not None and e.mean_ms > SPREAD_FLOOR_MS)
    if not cvs:
        return None
    runs = max(len(e.run_means) for e in section.entries)
    return RunSpread(runs, median([cv for cv, _ in cvs]), cvs[-1][0], cvs[-1][1])


@dataclass
class Analysis:
    profile: Profile
    sections: List[SectionAnalysis] = field(default_factory=list)
    ranks: Optional[RanksAnalysis] = None  # a merged view of several ranks
    windows: Optional[WindowsAnalysis] = None  # a long training recorded in windows

    def of(self, section: Section) -> SectionAnalysis:
        for a in self.sections:
            if a.section is section:
                return a
        raise KeyError(section.title)

    @property
    def steps(self) -> List[Summary]:
        return [a.step for a in self.sections if a.step is not None]


# A chart of more layers than this shows base layers (unrolled copies summed), then the slowest.
CHART_LAYERS = 60


def charted_layers(a: SectionAnalysis, limit: int = CHART_LAYERS) -> Tuple[List[LayerTime], Optional[ChartShown]]:
    """The layers a bar chart shows, in forward order, and a note when they are not every layer:
    every layer up to ``limit``; else their unrolled copies summed into base layers (``Affine_2``
    for ``Affine_2_RecurrentInput[3]``), and of those the slowest ``limit``."""
    if len(a.layers) <= limit:
        return list(a.layers), None
    bases = list(a.base_layers)
    shown = ChartShown(len(bases) < len(a.layers), 0, len(bases))
    if len(bases) > limit:
        order = {id(l): i for i, l in enumerate(bases)}
        slowest = sorted(bases, key=lambda l: -l.total_ms)[:limit]
        shown = ChartShown(shown.summed, limit, len(bases))
        bases = sorted(slowest, key=lambda l: order[id(l)])
    return bases, shown if shown.summed or shown.slowest else None


def coverage(section: Section) -> List[Coverage]:
    """Each pass's layers against the pass. A recorded program's graph can run some of its functions in only some of
    its passes (a graph per index built at one place, a metric that shares the loss's trunk): there each layer counts
    as often as it ran a pass (its calls per step over the passes per step), so that the sum is a pass's."""
    out = []
    for layer_phase, whole_phase in ((FORWARD, "forward_all"), (BACKWARD, "backward_all")):
        layers = section.entries_of(layer_phase)
        whole = section.entries_of(whole_phase)
        if layers and whole:
            direction = whole_phase.split("_")[0]
            engine = [e for e in section.entries_of("engine") if e.label.startswith("engine (%s:" % direction)]
            passes = whole[0].calls_per_round() if section.kind == GRAPH else 0.0
            kept = [e for e in layers if e.kept_cost_ns]
            out.append(
                Coverage(
                    layer_phase,
                    whole_phase,
                    round(sum(e.mean_ms * e.calls_per_pass(passes) for e in layers), 6),
                    whole[0].mean_ms,
                    round(sum(e.mean_ms for e in engine), 6),
                    per_pass=passes > 0 and any(e.calls_per_round() != passes for e in layers),
                    kept_cost_ms=round(sum(e.calls_per_pass(passes) * e.kept_cost_ns / 1e6 for e in kept), 6),
                    kept_in=len(kept),
                )
            )
    return out


def analyze_section(section: Section, header: Header, graphs: Sequence[Section] = ()) -> SectionAnalysis:
    """One section's analysis; ``graphs``: a recorded program's graph sections, which its step
    section (kind script) breaks its step down over."""
    target = header.target_rse
    limit = header.memory_limit if isinstance(header, ProjectHeader) else None
    threshold = header.drift_threshold
    covered = coverage(section)
    forward_share = [c.share for c in covered if c.whole_phase == "forward_all"]
    layers = layer_times(section)
    context = header.context or "cpu:float"
    if section.kind == SCRIPT and graphs:
        named = {g.name: program_layers(g, len(graphs) > 1) for g in graphs}
        trained = [g for g in graphs if g.info.get("trained_by")] or list(graphs)
        main = [c.share for c in coverage(trained[0]) if c.whole_phase == "forward_all"]
        step = summarize_program(section, graphs, context, named, main[0] if main else None)
    else:
        step = summarize_section(section, context, layers, forward_share[0] if forward_share else None)
    if step is not None:
        step.machine_rates = dict(header.machine_rates or {})
        step.notes += implausible(step)
        step.advice = advise(step)
    bases = step.base_layers if step is not None else base_layers(layers)
    return SectionAnalysis(
        section=section,
        coverage=covered,
        missed_target=[e for e in section.entries if target and e.stats.rse > target],
        unknown_flops=sorted(
            {e.layer_type for e in section.entries if e.is_layer_work and e.flops is None and e.layer_type}
        ),
        incomplete=[e for e in section.entries if not e.complete],
        layers=layers,
        drift=Drift(tuple(section.speed_levels), threshold or 0.10, tuple(section.info.drift_exempt or ())),
        step=step,
        run_spread=run_spread(section),
        memory_limit=limit,
        largest_batch=memory.fits(section, limit),
        base_layers=bases,
        precision=precision(section, layers, step.step_ms if step is not None else None, bases)
        if section.entries
        else None,
    )


def analyze(profile: Profile) -> Analysis:
    """Everything the outputs derive from a profile, computed once."""
    # The graphs of the step (a graph that ran only outside the kept steps has a section, and no part of the step).
    graphs = [s for s in profile.sections if s.kind == GRAPH and not s.outside_steps]
    analyses = [analyze_section(s, profile.header, graphs if s.kind == SCRIPT else ()) for s in profile.sections]
    program = next((a.step for a in analyses if a.section.kind == SCRIPT and a.step is not None), None)
    if program is not None and graphs:
        for a in analyses:
            if a.section.kind == GRAPH and not a.section.outside_steps:
                a.program_step_ms = program.step_ms
    return Analysis(profile, analyses, analyze_ranks(profile), analyze_windows(profile.windows))


views.register("ranks_frame", lambda profile: ranks_frame(analyze_ranks(profile)))
