"""The step and its passes as the program runs them without nnprofile's function hooks: from the block of steps run
without the hooks after the kept ones (``nnprofile.recording.recorder.CALIBRATION``).

NNabla's hooks cost some microseconds a function whatever they do, and no estimate taken off afterwards gets a step of
many small functions right (issue 59: the tutorial read 2.3 times its own step). The steps without the hooks are the
program as it runs alone. Their passes are unseen (a static pass is seen only through the hooks), but the program's
own calls (its reads, its solvers' calls, its monitors) cut them into the same gaps as a kept step of the same shape
(``gaps``). A kept step's gap holds its passes (less the hooks' cost as estimated) and the rest: the program's own
Python, and NNabla's work around a pass, both slowed by nnprofile's work beside them (its own time is left out, not
what it leaves in the caches: the tutorial's Python before its forward pass reads 600 us in kept steps, where that
Python and the pass together take 570 us without the hooks). Each gap is scaled to what it takes in the plain steps,
its passes and the rest alike (``Lean.scales``): each graph's passes are scaled so (its layers keep their shares of
the pass, as the hooked steps split it), and a kept step of that shape is its gaps so scaled and its own calls as
they ran. Over those steps, the step comes to the plain steps' own.

Where too few plain steps ran (the program ended first), nothing is scaled: the figures are the hooked steps' less
the hooks' cost as estimated, and ``Lean`` is None (the notes say which).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base.choices import GRAPH
from ..base.stats import median
from ..result import Section
from ..result.notes import Note
from .calls import Calls
from .events import Call, Event, StepMark, depth_of, start_of
from .hookfit import MARKERS, shape
from .intervals import overlap
from .passes import Pass

MIN_STEPS = 3  # plain steps, and kept steps of their shape, the figures need
DRIFT = 0.25  # a plain step slower than their median by more than this is left out (a slow spell, hidden work)
MAX_FACTOR = 1.5  # a pass reads no more than this times its estimate (the hooked pass is larger still)


@dataclass
class Lean:
    """What the plain steps set: each gap's scale, each graph's passes' factor per phase (``by_graph``: (graph name,
    phase); its passes' gaps' scales, weighted by its passes there), each kept step's figure where it has their shape
    (``steps``: ns, by index), and the figures the notes say."""

    plain: List[int]  # the plain steps used (indexes among the steps)
    typical: List[int]  # the kept steps of their shape
    step_ns: float  # the plain steps' mean
    estimated_ns: float  # the typical kept steps' mean, the hooks' cost as estimated taken off
    by_graph: Dict[Tuple[str, str], float] = field(default_factory=dict)
    scales: List[float] = field(default_factory=list)
    steps: Dict[int, float] = field(default_factory=dict)

    def factor(self, graph: Optional[str], phase: str) -> float:
        """The factor of a graph's passes of a phase (1 for a graph the plain steps' shape never ran: estimated)."""
        return self.by_graph.get((graph or "", phase), 1.0)


def _in(p: Pass, a: int, b: int) -> bool:
    return a <= (p.start_ns + p.end_ns) // 2 < b


def estimated(calls: Calls, p: Pass) -> float:
    """A hooked pass's time less the hooks' cost as estimated (what its section shows without the plain steps)."""
    inner = sum(calls.inner(c)[1] for c in p.calls)
    return max(0.0, calls.pass_time(p) - calls.pass_hooks(p) - inner)


def outside_passes(calls: Calls, events: Sequence[Event], passes: Sequence[Pass]) -> float:
    """What the hooks cost a step's functions outside its passes (eager calls), as estimated."""
    in_pass = {id(c) for p in passes for c in p.calls}
    return sum(
        calls.costs.total(e.kind, calls.signature(e)) + calls.own_cost(e)
        for e in events
        if isinstance(e, Call) and id(e) not in in_pass and not depth_of(e)
    )


def gaps(per_step: Sequence[List[Event]]) -> List[List[Tuple[int, int]]]:
    """Each step's gaps: before each of its own calls (``hookfit.MARKERS`` but ``nnprofile.step()``'s marks), the
    time since the program's call before it, wherever that fell (in the step before: a step's bounds are cut at its
    first pass where passes are seen, at its first call where they are not, so that only the program's own calls cut
    a step with the hooks and one without at the same places). A step's first call without one before it: none."""
    out: List[List[Tuple[int, int]]] = []
    last: Optional[int] = None
    for events in per_step:
        mine = []
        for e in events:
            if isinstance(e, MARKERS) and not isinstance(e, StepMark) and not depth_of(e):
                if last is not None:
                    mine.append((last, e.start_ns))
                last = e.end_ns
        out.append(mine)
    return out


def measure(
    calls: Calls,
    per_step: Sequence[List[Event]],
    step_passes: Sequence[List[Pass]],
    bounds: Sequence[Tuple[int, int]],
    kept: Sequence[int],
    plain: Sequence[int],
    graph_of: Callable[[Pass], Optional[str]],
) -> Optional[Lean]:
    """The plain steps' figures for the kept ones, or None where fewer than ``MIN_STEPS`` of either share a shape."""
    excluded = calls.excluded

    def length(a: int, b: int) -> float:
        return float(b - a - overlap(a, b, excluded)) - calls.waited(a, b)

    cut = gaps(per_step)
    found = _steps(per_step, step_passes, cut, kept, plain, lambda j: length(*bounds[j]))
    if found is None:
        return None
    typical, lean, whole = found
    plain_k = _mean_rows([[length(a, b) for a, b in cut[j]] for j in lean])
    passes = sorted((p for i in kept for p in step_passes[i]), key=lambda p: p.start_ns)
    top = sorted((e for i in kept for e in per_step[i] if isinstance(e, Call)), key=start_of)
    rows: Dict[int, List[Tuple[float, float]]] = {}  # a typical step's gaps: (the rest, its passes as estimated)
    for i in typical:
        rows[i] = []
        for a, b in cut[i]:
            inside = [p for p in passes if _in(p, a, b)]
            raw = sum(calls.pass_time(p) for p in inside)
            hooks = outside_passes(calls, [e for e in top if a <= e.start_ns < b], inside)
            hooks += calls.costs.per_pass() * sum(1 for p in inside if not p.dynamic)
            rows[i].append((max(0.0, length(a, b) - raw - hooks), sum(estimated(calls, p) for p in inside)))
    hooked_k = _mean_rows([[own + est for own, est in rows[i]] for i in typical])
    scales = [min(MAX_FACTOR, pl / h) if h > 0 else 1.0 for pl, h in zip(plain_k, hooked_k)]
    own_calls = {i: _own_calls(per_step[i], length) for i in typical}
    return Lean(
        lean,
        typical,
        sum(whole[j] for j in lean) / len(lean),
        sum(hooked_k) + sum(own_calls.values()) / len(typical),
        _by_graph(calls, [cut[i] for i in typical], passes, scales, graph_of),
        scales,
        {i: own_calls[i] + sum(k * (own + est) for k, (own, est) in zip(scales, rows[i])) for i in typical},
    )


def _steps(
    per_step: Sequence[List[Event]],
    step_passes: Sequence[List[Pass]],
    cut: Sequence[List[Tuple[int, int]]],
    kept: Sequence[int],
    plain: Sequence[int],
    length: Callable[[int], float],
) -> Optional[Tuple[List[int], List[int], Dict[int, float]]]:
    """The kept steps of the most common shape, the plain steps of that shape after a plain one (the first carries
    what the hooks left in the caches) and no slower than their median by ``DRIFT``, and those steps' lengths
    (``length``); None where fewer than ``MIN_STEPS`` of either are left."""
    if len(kept) < MIN_STEPS:
        return None
    typical_shape = Counter(shape(per_step[i]) for i in kept).most_common(1)[0][0]
    width = Counter(len(cut[i]) for i in kept if shape(per_step[i]) == typical_shape).most_common(1)[0][0]
    typical = [i for i in kept if shape(per_step[i]) == typical_shape and len(cut[i]) == width > 0]
    after = set(plain)
    lean = [
        j
        for j in plain
        if j - 1 in after and shape(per_step[j]) == typical_shape and len(cut[j]) == width and not step_passes[j]
    ]
    if len(lean) < MIN_STEPS or len(typical) < MIN_STEPS:
        return None
    whole = {j: length(j) for j in lean}  # (the program's own calls in it too, as a kept step holds them)
    usual = median(list(whole.values()))
    lean = [j for j in lean if whole[j] <= (1 + DRIFT) * usual]
    return (typical, lean, whole) if len(lean) >= MIN_STEPS else None


def _by_graph(
    calls: Calls,
    cuts: Sequence[List[Tuple[int, int]]],
    passes: Sequence[Pass],
    scales: Sequence[float],
    graph_of: Callable[[Pass], Optional[str]],
) -> Dict[Tuple[str, str], float]:
    """Each graph's factor per phase: the scales of the gaps its passes ran in (``cuts``: the typical steps'),
    weighted by the passes' estimated time."""
    weights: Dict[Tuple[str, str], List[float]] = {}
    for cut in cuts:
        for k, (a, b) in enumerate(cut):
            for p in passes:
                name = graph_of(p) if _in(p, a, b) else None
                if name is not None:
                    w = weights.setdefault((name, p.phase), [0.0, 0.0])
                    e = estimated(calls, p)
                    w[0], w[1] = w[0] + e * scales[k], w[1] + e
    return {key: (s / e if e > 0 else 1.0) for key, (s, e) in weights.items()}


def _own_calls(events: Sequence[Event], length: Callable[[int, int], float]) -> float:
    """The time of a step's own calls that cut it into gaps (its reads, solver calls, monitors), as they ran."""
    return sum(
        length(e.start_ns, e.end_ns)
        for e in events
        if isinstance(e, MARKERS) and not isinstance(e, StepMark) and not depth_of(e)
    )


def _mean_rows(rows: Sequence[Sequence[float]]) -> List[float]:
    """Column means of rows of equal length (the stretches of steps of one shape)."""
    return [sum(col) / len(col) for col in zip(*rows)] if rows else []


_PHASE_OF = {
    "forward_function": "forward",
    "backward_function": "backward",
    "forward_all": "forward",
    "backward_all": "backward",
}


def scale(sections: Sequence[Section], lean: Lean) -> None:
    """Each graph section's passes, layers and engine rows scaled by its factor per phase (their shares of the pass
    as the hooked steps split it)."""
    for s in sections:
        if s.kind != GRAPH:
            continue
        for e in s.entries:
            phase = _PHASE_OF.get(e.phase)
            if e.phase == "engine":
                phase = e.label[len("engine (") :].split(":", 1)[0]
            r = lean.factor(s.name, phase) if phase else 1.0
            if r != 1.0:
                e.samples_ns = [x * r for x in e.samples_ns]
                e.overhead_ns *= r
                e.kept_cost_ns *= r


def note(
    lean: Optional[Lean], estimated_off: Optional[float], kept: int, plain: Sequence[int], graphs: Sequence[str] = ()
) -> Note:
    """What the step's figures stand on: the plain steps (which, their step against the estimate, and the ``graphs``
    that ran only in kept steps of another shape, whose figures stay estimated), or the hooks' cost as estimated
    (``estimated_off``: what it took off a step, ms), with how many plain steps ran."""
    if lean is not None:
        scaled = {g for g, _ in lean.by_graph}
        return Note(
            "lean_step",
            {
                "plain_steps": [j + 1 for j in lean.plain],
                "typical": len(lean.typical),
                "kept": kept,
                "step_ms": round(lean.step_ns / 1e6, 6),
                "estimated_ms": round(lean.estimated_ns / 1e6, 6),
                "factors": {"%s %s" % k: round(v, 4) for k, v in sorted(lean.by_graph.items())},
                "estimated": [g for g in graphs if g not in scaled],
            },
        )
    return Note("hooks_estimated", {"plain_steps": len(plain), "needed": MIN_STEPS + 1, "off_ms": estimated_off})
