"""What the hooks cost in the program itself, and which steps ran with them.

The hooks' cost is measured on a chain of tiny functions (``nnprofile.recording.calibrate``; a recording saved by
an earlier nnprofile holds its measurement on replicas of the program's own functions too). ``fit`` scales it to
the program: the gaps between the functions of its passes show how much longer the hooks' code runs there (the
program's work leaves it cold caches), per phase, and the cost between two functions is never more than the time
there (``overshoot``). Where the block of steps without the hooks after the kept ones ran, the step and its passes
are set to it (``nnprofile.assembly.lean``) and this estimate only splits them; where it did not, it is the figures.

``hook_states`` tells which steps ran with the hooks, ``kept_steps`` picks the kept steps and the plain ones;
``shape`` and ``stretches`` cut a step at the program's own calls, the same in a step with hooks and one without.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..base.hookcost import BACKWARD, MAX_SCALE, MIN_SCALE, HookCosts, scaled
from ..base.stats import median

from . import interference
from .events import Call, Capture, CommCall, Event, Hooks, InputCall, MonitorCall, SolverCall, StepMark
from .intervals import overlap
from .passes import Pass

MARKERS = (SolverCall, InputCall, MonitorCall, CommCall, StepMark)


def shape(events: Sequence[Event]) -> Tuple[Tuple[object, ...], ...]:
    out: List[Tuple[object, ...]] = []
    for e in events:
        if isinstance(e, SolverCall):
            out.append(("s", e.solver, e.method))
        elif isinstance(e, InputCall):
            out.append(("i", e.iterator))
        elif isinstance(e, MonitorCall):
            out.append(("m", e.monitor))
        elif isinstance(e, CommCall):
            out.append(("c", e.method))
        elif isinstance(e, StepMark):
            out.append(("k",))
    return tuple(out)


def stretches(
    events: Sequence[Event], bounds: Tuple[int, int], excluded: Sequence[Tuple[int, int]]
) -> List[Tuple[int, int]]:
    """The stretches of a step between its markers: (start, end), nnprofile's own work left out later."""
    start, end = bounds
    cuts = [start]
    for e in events:
        if isinstance(e, MARKERS) and not isinstance(e, StepMark):
            cuts += [e.start_ns, e.end_ns]
    cuts.append(end)
    return [(cuts[k], cuts[k + 1]) for k in range(0, len(cuts) - 1, 2)]


HOOKED, PLAIN, MIXED, CLOSING = "hooked", "plain", "mixed", "closing"


def hook_states(per_step: List[List[Event]]) -> List[str]:
    """Whether each step ran with the function hooks, without them, or switched within it: on (``MIXED``: a
    validation, work past the loop) or off (``CLOSING``: the recorder switches them at a step's end as it counts
    steps; where its count and the steps found at the end differ, the step after the kept ones holds the switch,
    and the part of it recorded is no work of its own). Neither is kept nor a step without the hooks."""
    out = []
    on = True
    for events in per_step:
        state = None
        began = on  # the hooks as the step's first call ran
        seen = False
        for e in events:
            if isinstance(e, Hooks):
                if not seen:
                    began = e.on
                on = e.on
            elif seen or not isinstance(e, Hooks):
                if seen and on != began:
                    state = CLOSING if began else MIXED
                seen = True
        # A switch after the step's last call (where the next step was seen to begin) is the next step's.
        out.append(state or (HOOKED if began else PLAIN))
    return out


def kept_steps(states: Sequence[str], skip: int, active: int) -> Tuple[List[int], List[int], List[int]]:
    """The kept steps (one run of the loop after those set aside, with the hooks); after the skip, those without
    the hooks (the block after the kept ones, ``nnprofile.recording.recorder.CALIBRATION``); and the steps after the
    kept ones that were recorded, in part or whole (the hooks went back on for a validation: ``passtimes``; not the
    step they went off in)."""
    kept = [i for i in range(skip, min(len(states), skip + active)) if states[i] == HOOKED]
    after = max(kept) + 1 if kept else len(states)
    return (
        kept,
        [i for i in range(skip, len(states)) if states[i] == PLAIN],
        [i for i in range(after, len(states)) if states[i] in (HOOKED, MIXED)],
    )


# A pass whose gaps hold more than this many times the median pass's share held something else (the machine
# took the core away between two functions): it is left out of the ratio.
OUTLIER = 3.0


def gap_ratio(
    passes: Sequence[Pass],
    outside_of: Callable[[Call, Pass], float],
    excluded: Sequence[Tuple[int, int]] = (),
    inside_of: Optional[Callable[[Call], float]] = None,
) -> Optional[float]:
    """How much longer than measured the hooks' cost between a pass's functions is in the program: the
    gaps between the functions of its passes against what the hooks cost there as measured (each
    function's cost outside its own interval, ``outside_of(call, pass)``), over the passes of two
    functions or more together (None without one), a pass whose gaps hold more than ``OUTLIER`` times
    the median pass's ratio left out. NNabla's own work between functions is small beside the hooks'
    and counts with them, so that at this scale the functions and the hooks' cost fill the passes:
    what replicas of the program's functions once showed (a replica's share of a pass is its function and
    NNabla's work for it).
    Taken over the passes together, the kept passes' functions and the hooks' cost fill those passes
    exactly; a median of each pass's ratio would leave the passes' mean off by their skew (a slow spell).
    ``excluded``: nnprofile's own work, left out of the gaps."""
    measured: List[Tuple[float, float]] = []
    for p in passes:
        if p.dynamic or len(p.calls) < 2:
            continue
        # nnprofile's own work inside the pass (a step that ended at its first function) is no gap
        gaps = (
            (p.end_ns - p.start_ns)
            - overlap(p.start_ns, p.end_ns, excluded)
            - sum(c.end_ns - c.start_ns - overlap(c.start_ns, c.end_ns, excluded) for c in p.calls)
        )
        costs = sum(outside_of(c, p) for c in p.calls[:-1])
        if costs > 0:
            measured.append((max(0.0, gaps), costs))
    if not measured:
        return None
    typical = median([g / c for g, c in measured])
    kept = [(g, c) for g, c in measured if g <= OUTLIER * typical * c] or measured
    return sum(g for g, _ in kept) / sum(c for _, c in kept)


def overshoot(
    p: Pass,
    outside_of: Callable[[Call, Pass], float],
    excluded: Sequence[Tuple[int, int]] = (),
    waited: Callable[[Call, Call], float] = lambda a, b: 0.0,
) -> float:
    """What the hooks' cost between a pass's functions, as estimated (``outside_of(call, pass)`` for each function
    but the last of a stretch), is above the time there was between them (nnprofile's own work left out, and what
    other work took there, ``waited(a, b)``, taken off the pass apart): the hooks cannot have taken more than that,
    so the estimate stands at it there. One scale fits every graph's passes (``gap_ratio``); a graph whose passes
    leave less between their functions than the others (small, warm functions) would otherwise lose more than its
    gaps, and read shorter than its own functions."""
    over = 0.0
    for calls in p.runs():
        gaps = sum(
            max(0, b.start_ns - a.end_ns) - overlap(a.end_ns, b.start_ns, excluded) - waited(a, b)
            for a, b in zip(calls, calls[1:])
        )
        over += max(0.0, sum(outside_of(c, p) for c in calls[:-1]) - max(0.0, gaps))
    return over


# Passes of a phase a graph that ran only outside the kept steps needs for its own scale (else the steps' stands).
OWN_PASSES = 5


def own_scale(
    costs: HookCosts,
    passes: Mapping[str, Sequence[Pass]],
    outside_of: Callable[[Call, Pass], float],
    excluded: Sequence[Tuple[int, int]] = (),
) -> Optional[HookCosts]:
    """The costs (as scaled to the kept steps' passes) scaled again to a graph's own passes, per phase where it ran
    ``OWN_PASSES`` of two functions or more, for a graph that ran only outside the kept steps (a test after the
    training, batch by batch): its work leaves the hooks' code other caches than the steps' (a small batch's,
    warm). ``outside_of`` reads the costs given. None where no phase has the passes."""
    ratios = {}
    for phase, ps in passes.items():
        usable = [p for p in ps if not p.dynamic and len(p.calls) >= 2]
        if len(usable) >= OWN_PASSES:
            ratios[phase] = gap_ratio(usable, outside_of, excluded)
    forward, backward = ratios.get("forward"), ratios.get("backward")
    if forward is None and backward is None:
        return None

    def clamp(x: float) -> float:
        return max(MIN_SCALE, min(MAX_SCALE, x))

    return replace(
        costs,
        scale=clamp(costs.scale * forward) if forward is not None else costs.scale,
        backward_scale=clamp(costs._scale(BACKWARD) * backward) if backward is not None else costs._scale(BACKWARD),
    )


def _phase_ratio(
    capture: Capture,
    passes: Sequence[Pass],
    outside: Callable[[Call, Pass], float],
    excluded: Sequence[Tuple[int, int]],
) -> Optional[float]:
    """``gap_ratio`` over a phase's passes other work did not touch (a pass it held up has gaps no hook made), and
    where some are left, those the sampler's handler did not run in (what it leaves in the caches slows the hooks
    after it)."""
    calm = [p for p in passes if not interference.pass_disturbed(p, capture.marks)]
    return gap_ratio([p for p in calm if not interference.sampled_in(p, capture.handled)] or calm, outside, excluded)


def fit(
    capture: Capture,
    costs: HookCosts,
    step_passes: List[List[Pass]],
    kept: List[int],
    excluded: List[Tuple[int, int]],
) -> Tuple[HookCosts, Dict[str, float]]:
    """The hooks' costs as measured (on a chain; in an earlier recording, on replicas too), fitted to the program:
    scaled per phase to the gaps between the functions of its kept passes (``gap_ratio``), the cost between a pass's
    functions no more than the time there (``overshoot``, where it is taken off). Returns the costs and what the
    header says of them."""
    graph = capture.graph
    key = {
        id(c): costs.key(graph.signature(graph.functions[c.function]), p.phase)
        for i in kept
        for p in step_passes[i]
        for c in p.calls
    }

    def outside(c: Call, p: Pass) -> float:  # a function's cost between it and the next, as ``costs`` stand
        return costs.between(c.kind, key[id(c)])

    ratios = {
        phase: _phase_ratio(capture, [p for i in kept for p in step_passes[i] if p.phase == phase], outside, excluded)
        for phase in ("forward", "backward")
    }
    costs = scaled(costs, ratios["forward"], ratios["backward"])
    return costs, {
        "signatures": float(len(costs.by_signature)),
        "forward_scale": round(costs.scale, 4),
        "backward_scale": round(costs._scale(BACKWARD), 4),
    }
