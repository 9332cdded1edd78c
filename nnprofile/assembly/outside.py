"""What a recorded program ran only outside its kept steps: before the first kept step (before the loop, in the
steps set aside) and after the last one (a final evaluation, saving). A graph the kept steps do not run is a
section of its own, its figures per call and its hooks' cost scaled to its own passes where they are enough; the
program's own calls the kept steps do not make are one more section. No step holds them.
"""

from __future__ import annotations

from typing import Dict, Hashable, List, Sequence, Set

from ..base.functions import FunctionInfo
from ..base.hookcost import BACKWARD
from ..result import Section
from . import hookfit, interference
from .events import Call, Capture, CommCall, EAGER, Event, InputCall, MonitorCall, SolverCall
from .graphs import Graph
from .roles import apply_role, roles
from .sections import Builder


def outside_sections(
    builder: Builder,
    graphs: Sequence[Graph],
    kept: Sequence[int],
    skip: int,
    before: List[Event],
    after: List[Event],
    capture: Capture,
    later: Sequence[int] = (),
) -> List[Section]:
    """What ran only outside the kept steps (before the first kept step: before the loop, in the steps set aside;
    after the last step: a final evaluation, saving; in the steps after the kept ones that were recorded, ``later``:
    a validation the hooks went back on for, ``passtimes.PassTimes.unusual``): a section for each graph that the
    kept steps do not run, then one for the program's calls of iterators, solvers, monitors and eager work that they
    do not make. Their figures are per call; no step holds them."""
    steps = len(builder.per_step)
    early, late = [steps] + list(range(min(skip, steps))), [steps + 1]  # graphs' passes: per step, before, after
    every = early + list(later) + late  # (in the order they ran)
    ran = [g for g in graphs if not any(g.passes[i] for i in kept) and any(g.passes[i] for i in every)]

    def where(at: Sequence[int]) -> str:  # (of these indexes)
        return " and ".join(
            w
            for w, x in (
                ("before the first kept step", any(i in early for i in at)),
                ("in the steps after the kept ones", any(i in later for i in at)),
                ("after the last step", late[0] in at),
            )
            if x
        )

    out: List[Section] = []
    found = roles(graphs, every, capture, before=steps)
    for g in sorted(ran, key=lambda g: min(p.start_ns for i in every for p in g.passes[i])):
        indexes = [i for i in every if g.passes[i]]
        section = own_graph_section(builder, g, indexes, where(indexes))
        apply_role(section, found[g.key])
        out.append(section)
    functions = capture.graph.functions
    made = {key for i in kept for key in call_keys(builder.per_step[i], functions)}

    def only_outside(span: Sequence[Event]) -> List[Event]:
        return [e for e in span if getattr(e, "depth", 0) or call_key(e, functions) not in made]

    spans = {i: only_outside(before if i == steps else after if i == late[0] else builder.per_step[i]) for i in every}
    program = builder.program.outside_section([spans[i] for i in every], "")
    if program.entries:
        program.info.outside = where([i for i in every if call_keys(spans[i], functions)])
        out.append(program)
    return out


def own_graph_section(builder: Builder, g: Graph, indexes: List[int], where: str) -> Section:
    """The section of a graph that ran only outside the kept steps, its hooks' cost scaled to its own passes where
    they are enough (``hookfit.own_scale``; said in its info, ``hook_scale``)."""
    marks = builder.calls.capture.marks
    handled = builder.calls.capture.handled
    passes = {
        phase: [
            p
            for i in indexes
            for p in g.passes[i]
            if p.phase == phase
            and not interference.pass_disturbed(p, marks)
            and not interference.sampled_in(p, handled)
        ]
        for phase in ("forward", "backward")
    }
    own = hookfit.own_scale(builder.calls.costs, passes, builder.calls.outside_cost, builder.calls.excluded)
    saved = builder.calls.costs
    builder.calls.costs = own or saved
    try:
        section = builder.graph_section(g, (indexes, where))
    finally:
        builder.calls.costs = saved
    if own is not None:
        section.info.hook_scale = {
            phase: round(own._scale(phase_key), 4)
            for phase, phase_key in (("forward", None), ("backward", BACKWARD))
            if passes[phase]
        }
    return section


def call_key(e: Event, functions: Dict[int, FunctionInfo]) -> Hashable:
    """What a program's own call is, as the sections group it (None for a function of a pass)."""
    if isinstance(e, InputCall):
        return ("input", e.iterator)
    if isinstance(e, SolverCall):
        return ("solver", e.solver)
    if isinstance(e, MonitorCall):
        return ("monitor", e.monitor)
    if isinstance(e, CommCall):
        return ("comm", e.method)
    if isinstance(e, Call) and e.kind == EAGER:
        f = functions.get(e.function)
        return ("eager", f.type if f is not None else "?", f.created if f is not None else None)
    return None


def call_keys(events: Sequence[Event], functions: Dict[int, FunctionInfo]) -> Set[Hashable]:
    """The program's own calls among ``events``, by what they are."""
    return {call_key(e, functions) for e in events if not getattr(e, "depth", 0)} - {None}
