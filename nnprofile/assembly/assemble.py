"""From a recording's events to the sections of a profile: the chain, one pure function per stage.

``assemble(capture, costs, name)``: the events are grouped into passes (``passes``), replayed
through the loop's structure to find the steps (``steps``), cut into steps, the passes grouped
into the graphs they ran (``graphs``), and each graph, and the rest of the step, made a section
(``sections``). Work outside the kept steps (before them, in the steps set aside, after the last
one: a final evaluation, saving) is not in any section; it is said in the notes, with its passes
and its time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..base.hookcost import HookCosts
from ..base.stats import Drift
from ..result import Section
from ..result.drift import drift_over, emptied
from ..result.notes import Note
from ..result.checks import first_events
from ..result.timeline import TimelineEvent
from . import hookfit, interference, lean, steps as step_rule
from .events import (
    DYNAMIC,
    Call,
    Capture,
    Event,
    Hooks,
    InputCall,
    SolverCall,
    StepMark,
    end_of,
    stack_of,
    start_of,
)
from .iterations import entries, loop_where, select, step_loop
from .tree import children, top_level, with_children
from .graphs import Graph, GraphKey, graph_key, split_by_graph
from .roles import apply_role, roles, solver_label, solver_labels, solver_summaries, trainers
from .feeding import evaluation_inputs
from .passes import Pass, group_passes
from .intervals import merged
from .outside import outside_sections
from .sections import Builder
from .notes import (
    after_the_loop,
    capture_notes,
    hooks_off_note,
    own_work_note,
    spoiled_note,  # noqa: F401
    unresolved_note,
    updates_per_step,
)

# A kept step slower than the usual speed by more than this is left out of the means: the machine's slow
# spells (1.2-1.7x), not the program's own variation from step to step (a step after a validation reads
# its data from colder caches), which is its time as much as any other.
DRIFT = 0.25
# nnprofile's own work in a kept step (left out of every figure) at this share of the step or more: said, with
# what it does to the figures (the program's own code after it runs from colder caches).


@dataclass
class Assembly:
    sections: List[Section]
    timeline: List[TimelineEvent]
    steps: int  # steps found in the recording (but those run without the hooks)
    skip: int  # of them set aside first
    kept: int  # of them kept
    how: Note  # how the steps were found
    notes: List[Note]
    costs: HookCosts  # what the hooks cost, as taken off (measured in the program where it could be)
    # How the hooks' cost was fitted to the program: signatures measured on replicas (an earlier recording's); the
    # steps without the hooks against those with (pairs, medians, scale); the bound the gaps between functions set.
    in_program: Optional[Dict[str, float]] = None
    origin_ns: int = 0  # the recorder's clock at the timeline's zero (the first kept step's start)
    graphs: List[Graph] = field(default_factory=list)
    kept_steps: List[int] = field(default_factory=list)  # the kept steps' numbers, from 1
    plain_steps: List[int] = field(default_factory=list)  # the steps run without the hooks, among them


def replay(events: Sequence[Event], passes: Sequence[Pass]) -> step_rule.Loop:
    """The loop's structure (its pattern of updates, marks and passes), from the program's own calls."""
    loop = step_rule.Loop()
    starting = {id(p.calls[0]): p for p in passes}
    recent: set = set()  # functions made under auto_forward since the last update
    for e in events:
        if isinstance(e, Call):
            p = starting.get(id(e))
            if p is not None:
                if p.dynamic:
                    loop.pass_started("forward", None, "auto_forward", p.start_ns)
                else:
                    loop.pass_started(p.phase, graph_key(p, recent), p.site, p.start_ns)
            if e.kind == DYNAMIC:
                recent.add(e.function)
        elif isinstance(e, InputCall):
            loop.input(e.iterator)
        elif isinstance(e, SolverCall) and e.method == "update":
            loop.update(e.solver, e.end_ns)
            recent = set()
        elif isinstance(e, StepMark):
            loop.mark(e.at_ns)
        elif isinstance(e, Hooks):
            loop.hooks(e.on)
    return loop


def iteration_bounds(top: Sequence[Event], capture: Capture) -> Optional[Tuple[List[Tuple[int, int]], str, int, int]]:
    """The steps (``_iteration_bounds``), the loop's line, and how many of its iterations are no steps: before its
    first update, and after it in runs of the loop without an update (a validation through the same loop)."""
    found = _iteration_bounds(top, capture)
    if found is None:
        return None
    bounds, where, steps = found
    before = steps.index(True) if True in steps else len(steps)
    return bounds, where, before, sum(1 for x in steps[before:] if not x)


def _iteration_bounds(
    top: Sequence[Event], capture: Capture
) -> Optional[Tuple[List[Tuple[int, int]], str, List[bool]]]:
    """The steps as the iterations of the program's loop (``nnprofile.assembly.iterations``) that are steps (its
    ``Gate``: in a program that updates, those of the runs of the loop that update, from a little before each run's
    first update on): each from its first call to the next step's, the last to the end of its last call; and the
    loop's line. Work between two steps outside them (a validation after each epoch, in the loop or outside it) is
    the earlier step's. None where the calls carry no stacks or no loop holds them."""
    if not capture.codes:
        return None
    stacked = [(i, stack_of(e)) for i, e in enumerate(top) if stack_of(e)]
    if not stacked:
        return None
    is_update = [isinstance(e, SolverCall) and e.method == "update" for e in (top[i] for i, _ in stacked)]
    updates = [st for (_, st), u in zip(stacked, is_update) if u]
    keys = updates or [st for i, st in stacked if isinstance(top[i], (Call, InputCall))]
    loop = step_loop([k for k in keys if k is not None], capture.codes)
    if loop is None:
        return None
    found = entries([st for _, st in stacked], loop, capture.codes)
    steps = select(found, is_update, bool(updates))
    flags = dict(zip([i for i, _ in stacked], found))
    bounds: List[Tuple[int, int]] = []
    current: Optional[int] = None
    in_step, last_end, k = False, 0, -1
    for i, e in enumerate(top):
        if isinstance(e, Hooks):
            continue
        if i in flags:
            flag = flags[i]
            if flag:  # an iteration begins: a step, or no step (before the first, or in a run without an update)
                k += 1
                in_step = steps[k]
                if in_step:
                    if current is not None:
                        bounds.append((current, start_of(e)))
                    current = start_of(e)
            elif flag is None:
                in_step = False
        if in_step and current is not None:
            last_end = max(last_end, end_of(e))
    if current is not None:  # the last step: to its last call
        bounds.append((current, last_end))
    return bounds, loop_where(loop, capture.codes), steps


def find_steps(
    capture: Capture, top: Sequence[Event], passes: Sequence[Pass], last_ns: int
) -> Tuple[List[Tuple[int, int]], step_rule.Rule, step_rule.Loop]:
    """Where the steps are: marks where the program gives them; else the iterations of its loop; else the
    repeating pattern of its updates or passes (``nnprofile.assembly.steps``)."""
    loop = replay(top, passes)
    if not loop.marks:
        found = iteration_bounds(top, capture)
        if found is not None:
            bounds = _loop_left(found[0], top)
            return bounds, step_rule.Rule("iterations", where=found[1], before=found[2], idle=found[3]), loop
    rule = loop.rule()
    return step_rule.bounds(loop, rule, capture.started_ns, last_ns), rule, loop


def _loop_left(bounds: List[Tuple[int, int]], top: Sequence[Event]) -> List[Tuple[int, int]]:
    """The last step ended where the hooks came back on inside it, after it began without them: the recorder puts
    them back on where the program is past its loop in the steps without the hooks (``Recorder.past_the_loop``), and
    what follows (an evaluation, saving) is after the last step, not in it."""
    if not bounds:
        return bounds
    start, end = bounds[-1]
    on: Optional[bool] = None
    for e in top:
        if isinstance(e, Hooks):
            if e.at_ns <= start:
                on = e.on
            elif e.at_ns < end and e.on and on is False:
                return bounds[:-1] + [(start, e.at_ns)]
    return bounds


def assemble(capture: Capture, costs: HookCosts, name: str) -> Assembly:
    """The sections of a recorded program, its timeline, and what its steps were."""
    events = capture.events
    top = top_level(events)
    kids = children(events)
    last_ns = max([end_of(e) for e in top] + [capture.started_ns])
    all_passes = group_passes(top, capture.sites)
    bounds, rule, _ = find_steps(capture, top, all_passes, last_ns)
    per_step = [with_children(span, kids) for span in step_rule.split(top, bounds, start_of)]
    step_passes = [group_passes(span, capture.sites) for span in per_step]  # (each step's, grouped once)
    before, after = (with_children(span, kids) for span in step_rule.outside(top, bounds, start_of))
    skip = min(capture.skip_first, max(0, len(bounds) - 1))
    kept, plain_kept, later = hookfit.kept_steps(hookfit.hook_states(per_step), skip, capture.active)
    excluded = merged(capture.excluded)  # nnprofile's own work between the program's calls
    costs, hooks = hookfit.fit(capture, costs, step_passes, kept, excluded)
    graphs = graphs_of(capture, before, per_step, step_passes, after, kept, skip)
    labels = solver_labels(capture)
    graph_roles = roles(graphs, kept, capture)
    builder = Builder(capture, costs, name, labels, kept, per_step, step_passes, bounds, set(plain_kept), kids)
    shown = in_kept_steps(graphs, kept)
    plain = _plain_figures(builder, graphs, per_step, step_passes, bounds, kept, plain_kept)
    sections = _kept_sections(builder, shown, graph_roles, plain)

    interference.apply(sections, capture, builder.switch_rate, kept, bounds, builder.calls.waited)  # others' share
    inputs_of = evaluation_inputs(graphs, graph_roles, per_step, kept, capture)
    sections[-1].info.inputs_of = inputs_of or sections[-1].info.inputs_of
    if capture.solvers:
        sections[-1].info.solvers = solver_summaries(capture, labels, graphs, per_step, kept)
    raised = hold_parts(sections)
    drift = drift_over(sections, len(kept), DRIFT, keep_rare=True)
    _step_memory(builder, sections, shown, kept)
    names = _namer(graphs, capture, labels)
    notes = capture_notes(capture, graphs) + every_step_counts(drift, sections, kept)
    notes += unresolved_note(builder.calls.unresolved) + _step_notes(
        sections[-1], [bounds[i] for i in kept], excluded, raised
    )
    # What ran only outside the kept steps: before the program's step section (the last, as every reader takes it).
    outside = outside_sections(builder, graphs, kept, skip, before, after, capture, later)
    interference.apply(outside, capture, builder.switch_rate, kept, bounds, builder.calls.waited)
    sections[-1:-1] = outside
    notes += spoiled_note(interference.spoiled(sections))
    notes += after_the_loop(graphs, kept, len(per_step))
    notes += hooks_off_note([e.on for e in events if isinstance(e, Hooks)])
    notes += _lean_note(builder, plain, sections[-1], bounds, kept, plain_kept, shown)
    how = _how(rule, len(bounds), names, per_step, kept, labels)
    return Assembly(
        sections if any(s.entries for s in sections) else [],
        first_events(builder.calls.timeline),
        len(bounds),
        skip,
        len(kept),
        how,
        notes,
        costs,
        hooks,
        builder.calls.origin,
        graphs,
        [i + 1 for i in kept],
        [i + 1 for i in plain_kept],
    )


def _how(
    rule: Any, steps: int, names: Any, per_step: List[List[Event]], kept: Sequence[int], labels: List[str]
) -> Note:
    """How the steps were found (``nnprofile.render.rules`` says it), with the updates a step holds where they are
    the program's iterations."""
    figures = step_rule.rule_figures(rule, steps, names)
    if rule.kind == "iterations":
        figures["updates"] = updates_per_step(per_step, kept, labels)
    return Note("steps_" + rule.kind, figures)


def _step_memory(builder: Builder, sections: List[Section], shown: Sequence[Graph], kept: Sequence[int]) -> None:
    """The step's memory, estimated on the first graph a solver trains (else the first graph)."""
    trained = [s for s, g in zip(sections, shown) if g.trained_by] or sections[:-1]
    if trained and kept:
        trained[0].memory = builder.memory(trained[0])


def _plain_figures(
    builder: Builder,
    graphs: Sequence[Graph],
    per_step: List[List[Event]],
    step_passes: List[List[Pass]],
    bounds: List[Tuple[int, int]],
    kept: List[int],
    plain: List[int],
) -> Optional[lean.Lean]:
    """The plain steps' figures (``lean.measure``), given to the step's section, or None where too few ran."""
    name_of = {id(p): g.name for g in graphs for i in kept for p in g.passes[i]}

    def graph_of(p: Pass) -> Optional[str]:
        return name_of.get(id(p))

    found = lean.measure(builder.calls, per_step, step_passes, bounds, kept, plain, graph_of)
    if found is not None:
        builder.program.lean = (found, graph_of)
    return found


def _estimate_off(builder: Builder, step: Section, bounds: List[Tuple[int, int]], kept: List[int]) -> Optional[float]:
    """What the hooks' cost as estimated took off a kept step (ms, on average): the steps as they ran with the hooks
    against the step's figure."""
    entry = next((e for e in step.entries if e.phase == "step"), None)
    if entry is None or not entry.samples_ns:
        return None
    ran = [builder.calls.lasted(*bounds[i]) for i in kept]
    return round((sum(ran) / len(ran) - sum(entry.samples_ns) / len(entry.samples_ns)) / 1e6, 6)


def _kept_sections(
    builder: Builder,
    shown: Sequence[Graph],
    graph_roles: Dict[GraphKey, Tuple[str, List[str]]],
    plain: Optional[lean.Lean],
) -> List[Section]:
    """A section per graph the kept steps ran, each with what it is for (its passes scaled to the ``plain`` steps'
    figures, where they ran), then the program's step."""
    sections = [builder.graph_section(g) for g in shown]
    for g, section in zip(shown, sections):
        apply_role(section, graph_roles[g.key])
    if plain is not None:
        lean.scale(sections, plain)
    return sections + [builder.program.program_section()]


def _lean_note(
    builder: Builder,
    plain: Optional[lean.Lean],
    step: Section,
    bounds: List[Tuple[int, int]],
    kept: List[int],
    plain_kept: List[int],
    shown: Sequence[Graph],
) -> List[Note]:
    """What the step's figures stand on (``lean.note``): the plain steps, or the estimate and what it took off."""
    if not kept:
        return []
    off = _estimate_off(builder, step, bounds, kept) if plain is None else None
    return [lean.note(plain, off, len(kept), plain_kept, [g.name for g in shown])]


def _step_notes(
    step: Section, spans: Sequence[Tuple[int, int]], excluded: Sequence[Tuple[int, int]], raised: int
) -> List[Note]:
    """What the step's notes say of nnprofile's own work in it, and of steps held to the sum of their parts."""
    notes = []
    own = own_work_note(step, list(spans), list(excluded))
    if own:
        notes.append(own)
    if raised:
        notes.append(Note("held_to_parts", {"steps": raised, "kept": len(spans)}))
    return notes


def graphs_of(
    capture: Capture,
    before: List[Event],
    per_step: List[List[Event]],
    step_passes: List[List[Pass]],
    after: List[Event],
    kept: Sequence[int],
    skip: int,
) -> List[Graph]:
    """The graphs of every step, and of what ran before the first step and after the last (pseudo-steps at both ends:
    they name every graph the same way, wherever it ran), each with its trainers; its passes per step at the steps'
    own indexes, then those before the first step and after the last."""
    spans = [before] + per_step + [after]
    passes = [group_passes(before, capture.sites)] + step_passes + [group_passes(after, capture.sites)]
    # The graphs of the steps the profile shows or notes: kept, set aside, before the first, after the last.
    noted = {0, len(spans) - 1} | {1 + i for i in kept} | {1 + i for i in range(skip)}
    graphs = split_by_graph(spans, passes, capture, noted, {1 + i for i in kept})
    for g in graphs:
        g.trained_by = trainers(g, spans, capture)
    for g in graphs:  # back to the steps' own indexes
        g.passes = g.passes[1:-1] + [g.passes[0], g.passes[-1]]
    return graphs


def in_kept_steps(graphs: Sequence[Graph], kept: Sequence[int]) -> List[Graph]:
    """The graphs the kept steps ran, in order of first use there."""
    return sorted(
        (g for g in graphs if any(g.passes[i] for i in kept)),
        key=lambda g: next((n, min(p.start_ns for p in g.passes[i])) for n, i in enumerate(kept) if g.passes[i]),
    )


def every_step_counts(drift: Drift, sections: Sequence[Section], kept: Sequence[int]) -> List[Note]:
    """Where leaving out the steps the machine ran slow in would leave some entry no call, every step counts: no
    section says a round is left out, and a note says which steps ran slow."""
    if not math.isinf(drift.threshold):
        return []
    slow = Drift(drift.levels, DRIFT, drift.exempt)
    for s in sections:
        s.speed_levels = []
    return [
        Note(
            "every_step_counts",
            {"slow_steps": [kept[r] + 1 for r in slow.dropped], "emptied": emptied(sections, slow)},
        )
    ]


def hold_parts(sections: Sequence[Section]) -> int:
    """Each kept step at least as long as its timed parts (each graph's passes, each call of the program's),
    the hooks' cost taken off each: where the hooks' cost as estimated for the whole step is more than the
    step leaves, the step is the sum of its parts. Returns in how many steps."""
    program = sections[-1]
    steps = program.entries_of("step")
    if not steps:
        return 0
    step = steps[0]
    parts = [e for e in program.entries if e.phase != "step"] + [
        e for s in sections[:-1] for e in s.entries if e.phase in ("forward_all", "backward_all")
    ]
    totals = [e.round_totals() for e in parts]
    held = [sum(t[r] for t in totals if r < len(t)) for r in range(len(step.samples_ns))]
    raised = sum(1 for x, h in zip(step.samples_ns, held) if h > x)
    if raised:
        step.samples_ns = [max(x, h) for x, h in zip(step.samples_ns, held)]
    return raised


def _namer(graphs: Sequence[Graph], capture: Capture, labels: Sequence[str]) -> Callable[[Tuple[str, Any]], str]:
    by_key = {g.key: g.name for g in graphs}

    def name(what: Tuple[str, Any]) -> str:
        kind, key = what
        if kind == "graph":
            return by_key.get(key, "?")
        if kind == "iterator":
            return capture.iterators[key].name if key < len(capture.iterators) else "?"
        return solver_label(labels, key)

    return name
