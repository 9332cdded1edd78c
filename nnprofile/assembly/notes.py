"""What a recording's assembly notes beside its figures (``nnprofile.result.notes``, said by
``nnprofile.render.notes``): nnprofile's own work where it weighs on short steps, the work after the loop that no
figure holds, what could not be recorded; and the updates a step, in the words of the steps' rule."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base.stats import median
from ..result import Section
from ..result.notes import Note
from .events import Capture, Event, SolverCall
from .graphs import UNDETERMINED, Graph
from .intervals import overlap
from .roles import solver_label

OWN_WORK_NOTE = 0.2


def own_work_note(
    program: Section, kept_bounds: Sequence[Tuple[int, int]], excluded: Sequence[Tuple[int, int]]
) -> Optional[Note]:
    """What nnprofile's own work between the program's calls took in a kept step (the median over the kept
    steps), where that is ``OWN_WORK_NOTE`` of the step (its mean, the figure every output shows) or more: it is
    left out of every figure, but in so short a step the program's own Python after it runs from caches it filled,
    and ``other`` reads high. The median, as it is work in every step that the note is about: a window's files
    written once, after its kept steps (inside the last one's bounds), is no step's doing."""
    steps = program.entries_of("step")
    if not steps or not steps[0].samples_ns or not kept_bounds:
        return None
    own = median([overlap(a, b, excluded) for a, b in kept_bounds]) / 1e6
    step = steps[0].mean_ms
    if step <= 0 or own < OWN_WORK_NOTE * step:
        return None
    return Note("own_work", {"own_ms": own, "step_ms": step})


def updates_per_step(per_step: List[List[Event]], kept: Sequence[int], labels: Sequence[str]) -> List[List[Any]]:
    """Each solver's updates a step over the kept steps (``[["Adam: critic", 1.0], ["Adam: actor", 0.5]]``), in
    the solvers' order; [] without an update."""
    counts: Dict[int, int] = {}
    for i in kept:
        for e in per_step[i]:
            if isinstance(e, SolverCall) and e.method == "update" and not e.depth:
                counts[e.solver] = counts.get(e.solver, 0) + 1
    if not kept:
        return []
    return [[solver_label(labels, s), n / len(kept)] for s, n in sorted(counts.items())]


def after_the_loop(graphs: Sequence[Graph], kept: Sequence[int], steps: int) -> List[Note]:
    """The passes, after the last step, of graphs the kept steps run too (a final evaluation): in no figure, said."""
    ran = []
    for g in graphs:
        passes = g.passes[steps + 1]
        if not passes or not any(g.passes[i] for i in kept):
            continue
        counts: Dict[str, int] = {}
        for p in passes:
            counts[p.phase] = counts.get(p.phase, 0) + 1
        ran.append({"graph": g.name, "passes": counts, "ms": sum(p.end_ns - p.start_ns for p in passes) / 1e6})
    return [Note("after_the_loop", {"graphs": ran})] if ran else []


def capture_notes(capture: Capture, graphs: Sequence[Graph]) -> List[Note]:
    """What the recording itself says: its faults, what input entries are, a backward that communicates where no
    hook sees it, functions under auto_forward whose graph cannot be told."""
    notes = [Note("fault", {"where": where, "times": n}) for where, n in capture.faults]
    if capture.iterators:
        notes.append(Note("input_is_wait"))
    if capture.callback_used:
        notes.append(Note("callback_reduce"))
    undetermined = [g.name for g in graphs if g.key == UNDETERMINED]
    if undetermined:
        notes.append(Note("undetermined_graph", {"graph": undetermined[0]}))
    return notes


def unresolved_note(unresolved: Sequence[Tuple[str, float, float]]) -> List[Note]:
    """Entries shorter than the timing's cost inside them (label, mean, that cost; ns): shown at a tenth."""
    return [Note("unresolved", {"entries": [list(u) for u in unresolved]})] if unresolved else []


def spoiled_note(spoiled: Sequence[str]) -> List[Note]:
    """Figures that stand on few undisturbed calls."""
    return [Note("spoiled", {"entries": list(spoiled)})] if spoiled else []


def hooks_off_note(hooks: Sequence[bool]) -> List[Note]:
    """Where the program ended with the hooks off (``hooks``: each switch, on or off, in order)."""
    return [Note("hooks_off_at_end")] if hooks and not hooks[-1] else []
