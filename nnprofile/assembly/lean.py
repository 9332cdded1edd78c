"""The step and its passes as the program runs them without nnprofile's function hooks: from the block of steps run
without the hooks after the kept ones (``nnprofile.recording.recorder.CALIBRATION``).

NNabla's hooks cost some microseconds a function whatever they do, and no estimate taken off afterwards gets a step of
many small functions right (issue 59: the tutorial read 2.3 times its own step). The steps without the hooks are the
program as it runs alone. Their passes are unseen (a static pass is seen only through the hooks), but the program's own
calls (its reads, its solvers' calls, its monitors) cut them into the same gaps as a kept step of the same shape
(``gaps``). A kept step's gap holds its passes (less the hooks' cost as estimated) and the rest: the program's own
Python, and NNabla's work around a pass, both slowed by nnprofile's work beside them (its own time is left out, not
what it leaves in the caches: the tutorial's Python before its forward pass reads 600 us in kept steps, where that
Python and the pass together take 570 us without the hooks). Each gap is scaled to what it takes in the plain steps,
its passes and the rest alike (``Lean.scales``): each graph's passes are scaled so (its layers keep their shares of the
pass, as the hooked steps split it), and a kept step of that shape is its gaps so scaled and its own calls as they ran.
Over those steps, the step comes to the plain steps' own.

Where too few plain steps ran (the program ended first), nothing is scaled: the figures are the hooked steps' less the
hooks' cost as estimated, and ``Lean`` is None (the notes say which)."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from ..base.choices import GRAPH
from ..base.stats import median
from ..result import Entry, Section
from ..result.notes import Note
from . import others, sited
from .calls import Calls
from .events import Call, CommCall, Event, InputCall, MonitorCall, SolverCall, StepMark, depth_of, end_of, start_of
from .hookfit import MARKERS, shape
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
    # The program's own calls (``own_key``: an iterator's read, a solver's method, a monitor, a communication): the
    # factor that takes a kept step's figure of each (less its inner calls' hooks, as estimated) to the plain steps'.
    own: Dict[Hashable, float] = field(default_factory=dict)
    timed: List[str] = field(default_factory=list)  # the phases whose passes the program's calls timed somewhere
    rest: float = 1.0  # the typical steps' rest (beyond their passes and own calls), hooked to plain, over all gaps
    rests: Dict[int, float] = field(default_factory=dict)  # each kept step's of another shape, hooked (by index)


Gaps = Dict[int, List[List[Pass]]]  # a step's (by index) passes in each of its gaps


def in_gaps(cut: Sequence[List[Tuple[int, int]]], steps: Sequence[int], passes: Sequence[Pass]) -> Gaps:
    """Each of ``steps``' gaps' passes (those whose middle falls in it), found once."""
    ordered = sorted(passes, key=lambda p: (p.start_ns + p.end_ns) // 2)
    mids = [(p.start_ns + p.end_ns) // 2 for p in ordered]
    return {i: [ordered[bisect_left(mids, a) : bisect_left(mids, b)] for a, b in cut[i]] for i in steps}


def estimated(calls: Calls, p: Pass) -> float:
    """A hooked pass's time less the hooks' cost as estimated (what its section shows without the plain steps)."""
    return calls.figures(p)[0]


def net(calls: Calls, p: Pass) -> float:
    """A hooked pass as its section's figures take it: as ``estimated``, less what other work took of it (inside its
    functions and between them, where the marks tell: ``Calls.taken``, ``Calls.gap_taken``). A factor that takes
    its passes to the plain steps' is over these, so that the scaled pass, other work's time taken off, is theirs."""
    return calls.figures(p)[1]


def rescaled(
    lean: Lean, calls: Calls, passes: Sequence[Pass], graph_of: Callable[[Pass], Optional[str]], rest: float = 0.0
) -> float:
    """What a kept step of another shape gains where its passes are taken as their sections show them (their graph's
    factor times their figure), and its ``rest`` (beyond them and its own calls) as the typical steps' was scaled."""
    out = (lean.rest - 1.0) * rest  # (``Lean.rests``)
    for p in passes:
        f = lean.by_graph.get((graph_of(p) or "", p.phase))
        if f is not None:
            out += f * net(calls, p) - estimated(calls, p)
    return out


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

    def length(a: int, b: int) -> float:  # (never below nothing: a span's waits can overlap what is left out of it)
        return max(0.0, calls.lasted(a, b))

    cut = gaps(per_step)

    def tiled(j: int) -> float:  # a step from its program's call before it to its last: its gaps and own calls
        return sum(length(a, b) for a, b in cut[j]) + sum(length(start_of(e), end_of(e)) for e in _own(per_step[j]))

    found = _steps(per_step, step_passes, cut, kept, plain, tiled)
    if found is None:
        return None
    typical, lean, whole = found
    plain_k = _mean_rows([[length(a, b) for a, b in cut[j]] for j in lean])
    passes = sorted((p for i in kept for p in step_passes[i]), key=lambda p: p.start_ns)
    gap_passes, other = in_gaps(cut, typical, passes), [i for i in kept if i not in typical]
    rows = _rows(calls, per_step, cut, gap_passes, kept, length)
    direct = _direct(calls, cut, gap_passes, typical, lean, length)
    by_site = _by_site(calls, step_passes, bounds, (kept, typical, lean), passes, graph_of, length)
    timed = _with_sites(calls, direct, gap_passes, by_site, graph_of)
    pass_k, rest_k = _gap_scales(plain_k, [rows[i] for i in typical], timed)
    own_k = _own_factors(calls, per_step, typical, lean, length)
    ran = {i: sum(length(start_of(e), end_of(e)) for e in _own(per_step[i])) for i in typical}
    hooked = sum(own + sum(est.values()) for i in typical for own, est in rows[i]) / len(typical)
    by_graph = _by_graph(calls, gap_passes, lambda k, ph: pass_k[k].get(ph, rest_k[k]), graph_of)
    by_graph.update(by_site)

    def step(i: int) -> float:  # (each pass of a graph as its section shows it: its factor times its figure)
        out = sum(k * length(start_of(e), end_of(e)) for k, e in zip(own_k[0], _own(per_step[i])))
        for k, (own, _) in enumerate(rows[i]):
            out += rest_k[k] * own
            for p in gap_passes[i][k]:
                f = by_graph.get((graph_of(p) or "", p.phase))
                out += f * net(calls, p) if f is not None else pass_k[k].get(p.phase, rest_k[k]) * estimated(calls, p)
        return out

    return Lean(
        lean,
        typical,
        sum(whole[j] for j in lean) / len(lean),
        hooked + sum(ran.values()) / len(typical),
        by_graph,
        rest_k,
        {i: step(i) for i in typical},
        own_k[1],
        sorted({ph for d in direct for ph in d} | {ph for _, ph in by_site}),
        *others.rests(
            rest_k, [rows[i] for i in typical], _rows(calls, per_step, cut, in_gaps(cut, other, passes), kept, length)
        ),
    )


def _with_sites(
    calls: Calls,
    direct: Sequence[Dict[str, Tuple[float, float]]],
    gap_passes: Gaps,
    by_site: Dict[Tuple[str, str], float],
    graph_of: Callable[[Pass], Optional[str]],
) -> List[Dict[str, Tuple[float, float]]]:
    """Each gap's timed passes of a phase (``_direct``'s), those whose graphs' factors their sites set taken as they
    set them (the typical steps' mean of each such pass's factor times its figure, and its estimate): the gap's rest
    is then what the plain gap leaves them, and the step comes to the plain steps' with its passes as shown."""
    steps = list(gap_passes.values())
    width = len(steps[0]) if steps else 0
    out: List[Dict[str, Tuple[float, float]]] = [dict(direct[k]) if k < len(direct) else {} for k in range(width)]
    for k in range(len(out)):
        for ph in {p.phase for gaps in steps for p in gaps[k]}:
            mine = [p for gaps in steps for p in gaps[k] if p.phase == ph]
            keys = [(graph_of(p) or "", ph) for p in mine]
            if mine and all(key in by_site for key in keys):
                took = sum(by_site[key] * net(calls, p) for key, p in zip(keys, mine))
                out[k][ph] = (took / len(steps), sum(estimated(calls, p) for p in mine) / len(steps))
    return out


def _by_site(
    calls: Calls,
    step_passes: Sequence[List[Pass]],
    bounds: Sequence[Tuple[int, int]],
    steps: Tuple[Sequence[int], Sequence[int], Sequence[int]],
    passes: Sequence[Pass],
    graph_of: Callable[[Pass], Optional[str]],
    length: Callable[[int, int], float],
) -> Dict[Tuple[str, str], float]:
    """The graphs' factors from their passes' sites (``sited.factors``), over the steps after the kept ones
    (``steps``: the kept ones, those of their usual shape, the plain ones of it; ``length``, a span's own time)."""
    kept, typical, lean = steps
    plain = sited.Plain(
        (bounds[max(kept)][1], bounds[-1][1]),
        [(p.start_ns, p.end_ns) for j in range(max(kept) + 1, len(bounds)) for p in step_passes[j]],
        [bounds[j] for j in lean],
        {id(p) for i in typical for p in step_passes[i]},
    )
    return sited.factors(
        sited.outermost(calls.capture.pass_calls),
        passes,
        plain,
        graph_of,
        lambda p: net(calls, p),
        length,
    )


def _rows(
    calls: Calls,
    per_step: Sequence[List[Event]],
    cut: Sequence[List[Tuple[int, int]]],
    gap_passes: Gaps,
    kept: Sequence[int],
    length: Callable[[int, int], float],
) -> Dict[int, List[Tuple[float, Dict[str, float]]]]:
    """Each typical kept step's gaps: the rest (the gap less its passes and the hooks' cost in it, as estimated), and
    its passes as estimated, by phase."""
    top = sorted((e for i in kept for e in per_step[i] if isinstance(e, Call)), key=start_of)
    starts = [e.start_ns for e in top]
    rows: Dict[int, List[Tuple[float, Dict[str, float]]]] = {}
    for i, inside_gaps in gap_passes.items():
        rows[i] = []
        for (a, b), inside in zip(cut[i], inside_gaps):
            raw = sum(calls.pass_time(p) for p in inside)
            hooks = outside_passes(calls, top[bisect_left(starts, a) : bisect_left(starts, b)], inside)
            hooks += calls.costs.per_pass() * sum(1 for p in inside if not p.dynamic)
            est: Dict[str, float] = {}
            for p in inside:
                est[p.phase] = est.get(p.phase, 0.0) + estimated(calls, p)
            rows[i].append((max(0.0, length(a, b) - raw - hooks), est))
    return rows


def _direct(
    calls: Calls,
    cut: Sequence[List[Tuple[int, int]]],
    gap_passes: Gaps,
    typical: Sequence[int],
    lean: Sequence[int],
    length: Callable[[int, int], float],
) -> List[Dict[str, Tuple[float, float]]]:
    """Each gap's passes of a phase whose calls the program's own code timed (``Capture.pass_calls``): where every
    typical kept step runs as many passes of that phase there as the hooks saw and its code called, and every plain
    step made as many such calls there, (the plain steps' mean time of those calls, the kept steps' mean estimate
    of the passes)."""
    notes = sited.outermost(calls.capture.pass_calls)
    if not notes or not typical:
        return []
    mids = [(n[0] + n[1]) // 2 for n in notes]

    def noted(a: int, b: int) -> List[sited.PassNote]:
        return notes[bisect_left(mids, a) : bisect_left(mids, b)]

    out: List[Dict[str, Tuple[float, float]]] = []
    for k in range(len(cut[typical[0]])):
        counts: Dict[str, set] = {}
        est: Dict[str, float] = {}
        took: Dict[str, float] = {}
        for i in typical:
            a, b = cut[i][k]
            inside = gap_passes[i][k]
            seen, calls_made = Counter(p.phase for p in inside), Counter(n[2] for n in noted(a, b))
            for ph in set(seen) | set(calls_made):
                counts.setdefault(ph, set()).update({seen[ph], calls_made[ph]})
            for p in inside:
                est[p.phase] = est.get(p.phase, 0.0) + estimated(calls, p)
        for j in lean:
            a, b = cut[j][k]
            mine = noted(a, b)
            made = Counter(n[2] for n in mine)
            for ph in set(counts) | set(made):
                counts.setdefault(ph, set()).add(made[ph])
            for n in mine:
                took[n[2]] = took.get(n[2], 0.0) + length(n[0], n[1])
        out.append(
            {
                ph: (took.get(ph, 0.0) / len(lean), est[ph] / len(typical))
                for ph, c in counts.items()
                if len(c) == 1 and min(c) > 0 and est.get(ph, 0.0) > 0
            }
        )
    return out


def _gap_scales(
    plain_k: Sequence[float],
    rows: Sequence[List[Tuple[float, Dict[str, float]]]],
    direct: Sequence[Dict[str, Tuple[float, float]]],
) -> Tuple[List[Dict[str, float]], List[float]]:
    """Each gap's scales: of its passes of a phase timed directly (the plain steps' calls against the estimate), and
    of the rest (the gap as the plain steps take it, less those calls, against the rest as the kept steps ran it)."""
    pass_k: List[Dict[str, float]] = []
    rest_k: List[float] = []
    for k, plain in enumerate(plain_k):
        timed = direct[k] if k < len(direct) else {}
        mine = {ph: p / e for ph, (p, e) in timed.items()}
        rest = sum(r[k][0] + sum(t for ph, t in r[k][1].items() if ph not in timed) for r in rows) / len(rows)
        left = plain - sum(p for p, _ in timed.values())
        pass_k.append(mine)
        # (with its passes timed, the rest is what the gap leaves them: however small it read with the hooks)
        top = float("inf") if timed else MAX_FACTOR
        rest_k.append(min(top, max(0.0, left / rest)) if rest > 0 else 1.0)
    return pass_k, rest_k


def _steps(
    per_step: Sequence[List[Event]],
    step_passes: Sequence[List[Pass]],
    cut: Sequence[List[Tuple[int, int]]],
    kept: Sequence[int],
    plain: Sequence[int],
    length: Callable[[int], float],
) -> Optional[Tuple[List[int], List[int], Dict[int, float]]]:
    """The kept steps of the most common shape, the plain steps of that shape but the first after the kept ones where
    there are enough (it carries what the hooks left in the caches) and no slower than their median by ``DRIFT``,
    and those steps' lengths (``length``); None where fewer than ``MIN_STEPS`` of either are left."""
    if len(kept) < MIN_STEPS:
        return None
    typical_shape = Counter(shape(per_step[i]) for i in kept).most_common(1)[0][0]
    width = Counter(len(cut[i]) for i in kept if shape(per_step[i]) == typical_shape).most_common(1)[0][0]
    typical = [i for i in kept if shape(per_step[i]) == typical_shape and len(cut[i]) == width > 0]
    hooked = set(kept)
    lean = [j for j in plain if shape(per_step[j]) == typical_shape and len(cut[j]) == width and not step_passes[j]]
    # (the first after the kept ones: not one after a validation, whose cold caches are the program's own; a short
    # program's first one stays: it is needed)
    if len([j for j in lean if j - 1 not in hooked]) >= MIN_STEPS:
        lean = [j for j in lean if j - 1 not in hooked]
    if len(lean) < MIN_STEPS or len(typical) < MIN_STEPS:
        return None
    whole = {j: length(j) for j in lean}  # (as its gaps tile it: a slow spell falls in the step whose gap holds it)
    usual = median(list(whole.values()))
    lean = [j for j in lean if whole[j] <= (1 + DRIFT) * usual]
    return (typical, lean, whole) if len(lean) >= MIN_STEPS else None


def _by_graph(
    calls: Calls,
    gap_passes: Gaps,
    scale_of: Callable[[int, str], float],
    graph_of: Callable[[Pass], Optional[str]],
) -> Dict[Tuple[str, str], float]:
    """Each graph's factor per phase: the scales of its passes in the gaps they ran in (``gap_passes``: the typical
    steps'; ``scale_of``: a gap's scale of a phase): their scaled estimates against their figures (``net``)."""
    weights: Dict[Tuple[str, str], List[float]] = {}
    for gaps_of_step in gap_passes.values():
        for k, inside in enumerate(gaps_of_step):
            for p in inside:
                name = graph_of(p)
                if name is not None:
                    w = weights.setdefault((name, p.phase), [0.0, 0.0])
                    w[0], w[1] = w[0] + estimated(calls, p) * scale_of(k, p.phase), w[1] + net(calls, p)
    return {key: (s / e if e > 0 else 1.0) for key, (s, e) in weights.items()}


def _own(events: Sequence[Event]) -> List[Event]:
    """A step's own calls that cut it into gaps (its reads, solver calls, monitors, communication), in order."""
    return [e for e in events if isinstance(e, MARKERS) and not isinstance(e, StepMark) and not depth_of(e)]


def own_key(e: Event) -> Hashable:
    """What a program's own call is a figure of (the program section's tables' keys)."""
    if isinstance(e, InputCall):
        return ("input", e.iterator)
    if isinstance(e, SolverCall):
        return ("solver", e.solver, e.method)
    if isinstance(e, MonitorCall):
        return ("monitor", e.monitor)
    if isinstance(e, CommCall):
        return ("comm", e.method)
    return None


def _own_factors(
    calls: Calls,
    per_step: Sequence[List[Event]],
    typical: Sequence[int],
    lean: Sequence[int],
    length: Callable[[int, int], float],
) -> Tuple[List[float], Dict[Hashable, float]]:
    """The own calls' factors: each place's in the step (the plain steps' mean time of the call at that place
    against the kept steps', as they ran: a solver of the program's own runs functions, and their wrappers and
    hooks, there), and each call's figure's (``own_key``: the plain steps' time of all its calls against the kept
    steps' figure of them, their inner calls' hooks as estimated taken off). None where the places differ."""

    def rows(steps: Sequence[int], took: Callable[[Event], float]) -> List[List[float]]:
        return [[took(e) for e in _own(per_step[i])] for i in steps]

    def ran(e: Event) -> float:
        return length(start_of(e), end_of(e))

    hooked, plain = rows(typical, ran), rows(lean, ran)
    if len({len(r) for r in hooked + plain}) != 1:
        return [1.0] * (len(hooked[0]) if hooked else 0), {}
    figured = _mean_rows(rows(typical, lambda e: max(0.0, ran(e) - calls.inner(e)[1])))
    plain_k, hooked_k = _mean_rows(plain), _mean_rows(hooked)
    at = [min(MAX_FACTOR, max(0.0, p) / h) if h > 0 else 1.0 for p, h in zip(plain_k, hooked_k)]
    sums: Dict[Hashable, List[float]] = {}
    for e, p, f in zip(_own(per_step[typical[0]]), plain_k, figured):
        w = sums.setdefault(own_key(e), [0.0, 0.0])
        w[0], w[1] = w[0] + p, w[1] + f
    return at, {key: min(MAX_FACTOR, max(0.0, p) / f) for key, (p, f) in sums.items() if f > 0}


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
            r = lean.by_graph.get((s.name or "", phase), 1.0) if phase else 1.0  # (1: estimated)
            if r != 1.0:
                scale_entry(e, r)


def scale_entry(e: Entry, r: float) -> None:
    """An entry's samples, and what its timing and other work took of them, times ``r``."""
    r = max(0.0, r)
    e.samples_ns = [x * r for x in e.samples_ns]
    e.overhead_ns *= r
    e.kept_cost_ns *= r
    # (what other work took of a sample is taken off it in every figure: scaled with it, so that the sample less
    # it is the scaled undisturbed time)
    e.taken_ns = [None if t is None else t * r for t in e.taken_ns]


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
                "timed": list(lean.timed),
                "rest": round(lean.rest, 4),
            },
        )
    return Note("hooks_estimated", {"plain_steps": len(plain), "needed": MIN_STEPS, "off_ms": estimated_off})
