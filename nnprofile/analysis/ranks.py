"""The ranks of a distributed run, side by side: who is slow, why, and who waits for it.

Pure functions over a merged profile's ``ranks`` data (see
``nnprofile.merging.ranks``): each rank's step parts, per step. In
data-parallel training every rank leaves each collective together, so their
steps last alike; what differs is where the time goes. A rank that arrives
late at a collective makes the others wait inside it. So:

- a rank's *wait* in a step is its time in collectives beyond the least any
  rank spent in them that step (that least is the transfer itself);
- its *busy* time is its step without that wait: the work it does itself;
- the *straggler* is the rank whose busy time is the most above the other
  ranks' median; it is named when that is more than 10 % with 95 %
  confidence over the steps (Student's t on the per-step ratios), with the
  part of its step that is slower as evidence, and, where the clocks are
  aligned, how often it entered the step's longest collective last (as
  Holistic Trace Analysis finds stragglers).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from ..base.choices import LAYER_PHASES
from ..result.notes import Note
from ..result import Profile
from ..result.ranks import RanksView
from ..base.stats import median
from ..base.student import mean_ci
from .advice import INPUT_BOUND_SHARE
from . import facts
from .breakdown import Advice

if TYPE_CHECKING:
    import pandas

# The parts of a rank's step, as stored per step; "other" is what they leave of the step.
STORED_PARTS = ("input", "forward", "backward", "update", "monitor", "communication")
PARTS = STORED_PARTS + ("other",)
STRAGGLER_FACTOR = 0.10  # a rank busy more than 10 % above the others' median is a straggler
COMMUNICATION_SHARE = 0.20  # communication over this share of the step is said
LAYER_SPREAD_FLOOR_MS = 0.05  # layers shorter than this are left out of the spread across ranks
LISTED_RANKS = 16  # the log lists every rank up to this many, else the slowest


@dataclass(frozen=True)
class RankTime:
    """One rank's step, per step on average over the steps every rank recorded (ms)."""

    rank: int
    host: str
    steps: int
    parts: Dict[str, float]  # PARTS -> ms per step
    wait_ms: float  # of communication: waiting inside collectives for slower ranks
    complete: bool = True
    failure: Optional[str] = None

    @property
    def step_ms(self) -> float:
        return sum(self.parts.values())

    @property
    def busy_ms(self) -> float:
        return self.step_ms - self.wait_ms

    @property
    def compute_ms(self) -> float:
        return self.parts["forward"] + self.parts["backward"] + self.parts["update"]


@dataclass(frozen=True)
class StepSpread:
    """One step across the ranks."""

    step: int
    slowest: int  # the rank with the most busy time
    busy_spread_ms: float  # the most busy time minus the least
    last_in: Optional[int]  # the rank that entered the step's longest collective last (clocks aligned)
    busy_ms: Tuple[float, ...] = ()  # per rank, in the order of RanksAnalysis.ranks
    wait_ms: Tuple[float, ...] = ()


@dataclass(frozen=True)
class Straggler:
    rank: int
    ratio: float  # its busy time over the other ranks' median, mean over steps
    low: Optional[float]  # 95 % interval of that mean (None with one step)
    high: Optional[float]
    steps: int
    named: bool  # the interval lies above 1 + STRAGGLER_FACTOR
    part: Optional[str]  # the part of its step most above the others' (evidence)
    part_ms: float = 0.0
    others_part_ms: float = 0.0
    last_in: int = 0  # steps in which it entered the longest collective last
    last_in_steps: int = 0  # steps where that could be told


@dataclass(frozen=True)
class LayerSpread:
    """How far the layers' means differ across ranks (coefficient of variation)."""

    layers: int
    median_cv: float
    worst_cv: float
    worst: str
    worst_section: str


@dataclass
class RanksAnalysis:
    size: int
    ranks: List[RankTime]
    missing: List[int]
    stale: List[int]
    launcher: str
    clock: Note  # how the timelines were aligned
    steps: List[StepSpread]
    straggler: Optional[Straggler]
    layer_spread: Optional[LayerSpread]
    advice: List[Advice] = field(default_factory=list)

    @property
    def wait_ms(self) -> float:
        """All ranks' waiting together, per step."""
        return sum(r.wait_ms for r in self.ranks)

    def rank(self, k: int) -> RankTime:
        return next(r for r in self.ranks if r.rank == k)

    def busy_ratio(self, r: RankTime) -> Optional[float]:
        """A rank's busy time over the other ranks' median (None with one rank)."""
        return _ratio_to_others(r.busy_ms, sorted(x.busy_ms for x in self.ranks))

    def to_dataframe(self) -> "pandas.DataFrame":
        return ranks_frame(self)


def _ratio_to_others(value: float, ordered: List[float]) -> Optional[float]:
    """``value`` over the median of ``ordered`` (sorted, holding ``value`` once) without it."""
    if len(ordered) < 2:
        return None
    i = bisect.bisect_left(ordered, value)
    others = ordered[:i] + ordered[i + 1 :]
    middle = median(others)
    return value / middle if middle > 0 else None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def analyze_ranks(profile: Profile) -> Optional[RanksAnalysis]:
    """The ranks of a merged view; None for a profile of one process."""
    data = profile.ranks
    if not data.ranks:
        return None
    rows = data.ranks
    steps: List[int] = list(data.steps)
    n_steps = len(steps)
    # Per step and rank: the parts, the step (the parts and what they leave), communication.
    parts_at = [
        [{p: float((r.parts_ns.get(p) or [0.0] * n_steps)[i]) for p in STORED_PARTS} for r in rows]
        for i in range(n_steps)
    ]
    step_at = [
        [max(float(r.step_ns[i]), sum(parts_at[i][k].values())) for k, r in enumerate(rows)] for i in range(n_steps)
    ]
    wait_at = []
    for i in range(n_steps):
        comm = [p["communication"] for p in parts_at[i]]
        least = min(comm) if comm else 0.0
        wait_at.append([c - least for c in comm])
    busy_at = [[step_at[i][k] - wait_at[i][k] for k in range(len(rows))] for i in range(n_steps)]

    ranks = []
    for k, r in enumerate(rows):
        parts = {p: _mean([parts_at[i][k][p] for i in range(n_steps)]) / 1e6 for p in STORED_PARTS}
        parts["other"] = _mean([step_at[i][k] - sum(parts_at[i][k].values()) for i in range(n_steps)]) / 1e6
        ranks.append(
            RankTime(
                r.rank,
                r.host,
                n_steps,
                parts,
                _mean([wait_at[i][k] for i in range(n_steps)]) / 1e6,
                r.complete,
                r.failure,
            )
        )

    spreads = _step_spreads(data, busy_at, wait_at)
    analysis = RanksAnalysis(
        size=data.size or len(rows),
        ranks=ranks,
        missing=list(data.missing),
        stale=list(data.stale),
        launcher=data.launcher or "",
        clock=data.clock_method,
        steps=spreads,
        straggler=_straggler(ranks, busy_at, parts_at, spreads),
        layer_spread=_layer_spread(profile),
    )
    analysis.advice = [a for rule in RULES for a in rule(analysis)]
    return analysis


def _step_spreads(data: RanksView, busy_at: List[List[float]], wait_at: List[List[float]]) -> List[StepSpread]:
    """Each common step: its slowest rank, the spread of the ranks' busy time, the last rank into its collective
    (where the clocks were aligned), each rank's busy and waiting time."""
    rows, steps = data.ranks, list(data.steps)
    n_steps = len(steps)
    aligned = data.clock_aligned
    enter = [(r.collective.enter_ns if r.collective is not None else None) or [None] * n_steps for r in rows]
    spreads = []
    for i, step in enumerate(steps):
        busy = busy_at[i]
        slowest = max(range(len(rows)), key=lambda k: busy[k])
        times = [(enter[k][i], k) for k in range(len(rows)) if i < len(enter[k]) and enter[k][i] is not None]
        last_in = rows[max(times)[1]].rank if aligned and len(times) == len(rows) and len(rows) > 1 else None
        spreads.append(
            StepSpread(
                step,
                rows[slowest].rank,
                (max(busy) - min(busy)) / 1e6,
                last_in,
                tuple(b / 1e6 for b in busy),
                tuple(w / 1e6 for w in wait_at[i]),
            )
        )
    return spreads


def _straggler(
    ranks: List[RankTime], busy_at: List[List[float]], parts_at: List[List[Dict[str, float]]], spreads: List[StepSpread]
) -> Optional[Straggler]:
    """The rank most busy above the others, with the interval of that over the steps."""
    if len(ranks) < 2 or not busy_at:
        return None
    k = max(range(len(ranks)), key=lambda j: ranks[j].busy_ms)
    ratios = []
    for busy in busy_at:
        others = sorted(b for j, b in enumerate(busy) if j != k)
        middle = median(others)
        if middle > 0:
            ratios.append(busy[k] / middle)
    if not ratios:
        return None
    ratio, low, high = mean_ci(ratios)
    # The evidence: the part of its step (communication aside) most above the others' median.
    excess = []
    for p in PARTS:
        if p == "communication":
            continue
        mine = ranks[k].parts[p]
        others = sorted(r.parts[p] for j, r in enumerate(ranks) if j != k)
        excess.append((mine - median(others), p, mine, median(others)))
    gap, part, mine, theirs = max(excess)
    rank = ranks[k].rank
    told = [s for s in spreads if s.last_in is not None]
    return Straggler(
        rank,
        ratio,
        low,
        high,
        len(ratios),
        low is not None and low > 1 + STRAGGLER_FACTOR,
        part if gap > 0 else None,
        mine,
        theirs,
        sum(1 for s in told if s.last_in == rank),
        len(told),
    )


def _layer_spread(profile: Profile) -> Optional[LayerSpread]:
    cvs = []
    for s in profile.sections:
        for e in s.entries:
            if e.phase in LAYER_PHASES and e.mean_ms > LAYER_SPREAD_FLOOR_MS:
                cv = e.rank_cv
                if cv is not None:
                    cvs.append((cv, e.label, s.title))
    if not cvs:
        return None
    cvs.sort()
    return LayerSpread(len(cvs), median([c for c, _, _ in cvs]), cvs[-1][0], cvs[-1][1], cvs[-1][2])


# -- advice: each rule takes the analysis and returns what it triggers -------------------


def straggler_rule(a: RanksAnalysis) -> List[Advice]:
    s = a.straggler
    if s is None or not s.named:
        return []
    found = facts.Straggler(
        s.rank,
        s.part,
        s.ratio,
        (s.low, s.high, s.steps),
        1 + STRAGGLER_FACTOR,
        s.part_ms,
        s.others_part_ms,
        (s.last_in, s.last_in_steps),
        a.wait_ms - a.rank(s.rank).wait_ms,
    )
    return [Advice("straggler", found)]


def input_bound_rank(a: RanksAnalysis) -> List[Advice]:
    return [
        Advice("input_bound_rank", facts.RankInput(r.rank, r.parts["input"], r.busy_ms, INPUT_BOUND_SHARE))
        for r in a.ranks
        if r.busy_ms > 0 and r.parts["input"] / r.busy_ms > INPUT_BOUND_SHARE
    ]


def communication_rule(a: RanksAnalysis) -> List[Advice]:
    step = _mean([r.step_ms for r in a.ranks])
    comm = _mean([r.parts["communication"] for r in a.ranks])
    wait = _mean([r.wait_ms for r in a.ranks])
    if step <= 0 or comm / step <= COMMUNICATION_SHARE:
        return []
    return [Advice("communication", facts.Communication(comm, step, wait, len(a.ranks), COMMUNICATION_SHARE))]


RULES = [straggler_rule, input_bound_rank, communication_rule]


# -- for the renderers --------------------------------------------------------------------

RANK_COLUMNS = [
    "rank",
    "host",
    "steps",
    "step_ms",
    "input_ms",
    "forward_ms",
    "backward_ms",
    "update_ms",
    "monitor_ms",
    "communication_ms",
    "wait_ms",
    "other_ms",
    "compute_ms",
    "busy_ms",
    "busy_ratio",
    "straggler",
    "complete",
]
STEP_COLUMNS = ["step", "slowest_rank", "busy_spread_ms", "last_into_collective"]


def rank_rows(a: RanksAnalysis) -> List[List[Any]]:
    """One row per rank, in RANK_COLUMNS order (None where a figure is unknown)."""
    named = a.straggler.rank if a.straggler is not None and a.straggler.named else None
    rows = []
    for r in a.ranks:
        rows.append(
            [r.rank, r.host, r.steps, round(r.step_ms, 6)]
            + [round(r.parts[p], 6) for p in STORED_PARTS]
            + [round(r.wait_ms, 6), round(r.parts["other"], 6), round(r.compute_ms, 6), round(r.busy_ms, 6)]
            + [_round(a.busy_ratio(r), 4), r.rank == named, r.complete]
        )
    return rows


def step_rows(a: RanksAnalysis) -> List[List[Any]]:
    return [[s.step, s.slowest, round(s.busy_spread_ms, 6), s.last_in] for s in a.steps]


def _round(x: Optional[float], digits: int) -> Optional[float]:
    return None if x is None else round(x, digits)


def ranks_frame(a: Optional[RanksAnalysis]) -> "pandas.DataFrame":
    import pandas as pd

    frame = pd.DataFrame.from_records(rank_rows(a) if a is not None else [], columns=RANK_COLUMNS)
    for column in ("rank", "steps"):
        frame[column] = frame[column].astype("Int64")
    for column in RANK_COLUMNS[3:15]:
        frame[column] = frame[column].astype("float64")
    return frame
