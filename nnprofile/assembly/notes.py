"""What a recording's assembly says in words beside its figures: nnprofile's own work where it weighs on short
steps, the updates a step, and the work after the loop that no figure holds."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..result import Section
from .events import SolverCall
from .graphs import UNDETERMINED, Graph
from .intervals import overlap

OWN_WORK_NOTE = 0.2


def own_work_note(
    program: Section, kept_bounds: Sequence[Tuple[int, int]], excluded: Sequence[Tuple[int, int]]
) -> Optional[str]:
    """What nnprofile's own work between the program's calls took in a kept step (its mean), where that is
    ``OWN_WORK_NOTE`` of the step (its mean, the figure every output shows) or more: it is left out of every
    figure, but in so short a step the program's own Python after it runs from caches it filled, and ``other``
    reads high."""
    steps = program.entries_of("step")
    if not steps or not steps[0].samples_ns or not kept_bounds:
        return None
    own = sum(overlap(a, b, excluded) for a, b in kept_bounds) / len(kept_bounds) / 1e6
    step = steps[0].mean_ms
    if step <= 0 or own < OWN_WORK_NOTE * step:
        return None
    return (
        "nnprofile's own work between the program's calls took %.3f ms of each kept step (the mean), %.0f%% "
        "of the step's %.3f ms: it is left out of every figure, but in steps this short the program's own code "
        "after it runs from colder caches, so that 'other' (and the step) can read higher than the program "
        "runs without nnprofile" % (own, 100.0 * own / step, step)
    )


def updates_per_step(per_step: List[List[Any]], kept: Sequence[int], labels: Sequence[str]) -> str:
    """`` (updates a step: Adam: critic 1, Adam: actor 0.5)`` over the kept steps; "" without an update."""
    counts: Dict[int, int] = {}
    for i in kept:
        for e in per_step[i]:
            if isinstance(e, SolverCall) and e.method == "update" and not e.depth:
                counts[e.solver] = counts.get(e.solver, 0) + 1
    if not counts or not kept:
        return ""
    return " (updates a step: %s)" % ", ".join(
        "%s %s"
        % (labels[s] if s < len(labels) else "solver %d" % (s + 1), ("%.2f" % (n / len(kept))).rstrip("0").rstrip("."))
        for s, n in sorted(counts.items())
    )


def after_the_loop(graphs: Sequence[Graph], kept: Sequence[int], steps: int) -> List[str]:
    """The passes, after the last step, of graphs the kept steps run too (a final evaluation): in no figure, said."""
    ran = []
    for g in graphs:
        passes = g.passes[steps + 1]
        if not passes or not any(g.passes[i] for i in kept):
            continue
        counts: Dict[str, int] = {}
        for p in passes:
            counts[p.phase] = counts.get(p.phase, 0) + 1
        ran.append(
            "graph '%s' %s, %.3f ms in all"
            % (
                g.name,
                " and ".join(
                    "%d %s pass%s" % (n, phase, "" if n == 1 else "es")
                    for phase, n in sorted(counts.items(), reverse=True)
                ),
                sum(p.end_ns - p.start_ns for p in passes) / 1e6,
            )
        )
    if not ran:
        return []
    return ["after the last step (work after the loop: a final evaluation, saving), in no figure: %s" % "; ".join(ran)]


def capture_notes(capture: Any, graphs: Sequence[Graph], input_note: str) -> List[str]:
    """What the recording itself says: its faults, what input entries are, a backward that communicates where no
    hook sees it, functions under auto_forward whose graph cannot be told."""
    notes = ["%s" % fault for fault in capture.faults]
    if capture.iterators:
        notes.append(input_note)
    if capture.callback_used:
        notes.append(
            "the program reduces its gradients with all_reduce_callback: NNabla's backward runs that "
            "communication itself, where no hook sees it, so it is inside backward_all and the "
            "backward_function entries, not separated from them (the call that sets it up is timed)"
        )
    undetermined = [g.name for g in graphs if g.key == UNDETERMINED]
    if undetermined:
        notes.append(
            "under auto_forward, functions that no backward reached are in the graph '%s': the rule "
            "(a function belongs to the graph whose backward reaches it) cannot tell their graph" % undetermined[0]
        )
    return notes


def unresolved_note(unresolved: Sequence[Tuple[str, float, float]]) -> List[str]:
    """Entries shorter than the timing's cost inside them (label, mean, that cost; ns): shown at a tenth."""
    if not unresolved:
        return []
    first = "; ".join(
        "%s, %.3f us a call against %.3f us" % (label, mean / 1e3, off / 1e3) for label, mean, off in unresolved[:5]
    )
    more = "; and %d more" % (len(unresolved) - 5) if len(unresolved) > 5 else ""
    return [
        "shorter than the timing's own cost estimated inside them, so shown at a tenth of what was "
        "measured (an upper bound; the rest of that cost taken off): %s%s" % (first, more)
    ]


def spoiled_note(spoiled: Sequence[str]) -> List[str]:
    """Figures that stand on few undisturbed calls."""
    if not spoiled:
        return []
    return [
        "few calls ran undisturbed by other work for these figures (they stand on those few, or on "
        "every call where none did): %s%s"
        % ("; ".join(spoiled[:5]), "; and %d more" % (len(spoiled) - 5) if len(spoiled) > 5 else "")
    ]


def hooks_off_note(hooks: Sequence[bool]) -> List[str]:
    """Where the program ended with the hooks off (``hooks``: each switch, on or off, in order)."""
    if hooks and not hooks[-1]:
        return [
            "the program ended while steps ran without the hooks (those that measure what the hooks "
            "cost, after the kept steps): what it did after its last step (a final evaluation, saving) "
            "was not seen"
        ]
    return []
