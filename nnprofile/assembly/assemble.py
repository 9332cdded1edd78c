"""From a recording's events to the sections of a profile: the chain, one pure function per stage.

``assemble(capture, costs, name)``: the events are grouped into passes (``passes``), replayed
through the loop's structure to find the steps (``steps``), cut into steps, the passes grouped
into the graphs they ran (``graphs``), and each graph, and the rest of the step, made a section
(``sections``). Work outside the kept steps (before them, in the steps set aside, after the last
one: a final evaluation, saving) is not in any section; it is said in the notes, with its passes
and its time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base.hookcost import HookCosts, measured_in_program
from ..result import Section
from ..result.drift import drift_over
from ..result.timeline import TimelineEvent
from . import steps as step_rule
from .events import DYNAMIC, EAGER, Call, Capture, CommCall, Hooks, InputCall, SolverCall, StepMark, end_of, start_of
from .graphs import UNDETERMINED, Graph, solver_labels, split_by_graph, trainers
from .passes import Pass, group_passes
from .sections import Builder, overlap

INPUT_NOTE = ("input (load_dataset) is the time the program waited in DataIterator.next(); NNabla's "
              "iterators load the next batch in a thread while the step runs (use_thread, the default), so "
              "it is the wait, not the loading")


@dataclass
class Assembly:
    sections: List[Section]
    timeline: List[TimelineEvent]
    steps: int              # steps found in the recording (but those run without the hooks)
    skip: int               # of them set aside first
    kept: int               # of them kept
    how: str                # how the steps were found
    notes: List[str]
    costs: HookCosts        # what the hooks cost, as taken off (measured in the program where it could be)
    in_program: Optional[Dict[str, float]] = None  # plain and hooked steps' medians, how many, cost
    origin_ns: int = 0      # the recorder's clock at the timeline's zero (the first kept step's start)
    graphs: List[Graph] = field(default_factory=list)


def replay(capture: Capture, passes: Sequence[Pass]) -> step_rule.Loop:
    """The loop's structure, as the recorder followed it while the program ran."""
    loop = step_rule.Loop()
    starting = {id(p.calls[0]): p for p in passes}
    recent: set = set()  # functions made under auto_forward since the last update
    for e in capture.events:
        if isinstance(e, Call):
            p = starting.get(id(e))
            if p is not None:
                if p.dynamic:
                    loop.pass_started("forward", None, "auto_forward", p.start_ns)
                else:
                    graph = ("auto_forward", p.site) if p.root in recent else ("static", p.root)
                    loop.pass_started(p.phase, graph, p.site, p.start_ns)
            if e.kind == DYNAMIC:
                recent.add(e.function)
        elif isinstance(e, InputCall):
            loop.input(e.iterator)
        elif isinstance(e, SolverCall) and e.method == "update":
            loop.update(e.solver, e.end_ns)
            recent = set()
        elif isinstance(e, StepMark):
            loop.mark(e.at_ns)
    return loop


def _plain_steps(per_step: List[List[Any]]) -> List[bool]:
    """Which steps ran without the function hooks (they are switched at a step's start)."""
    out = []
    on = True
    for events in per_step:
        for e in events:
            if isinstance(e, Hooks):
                on = e.on
            else:
                break
        out.append(not on)
    return out


def assemble(capture: Capture, costs: HookCosts, name: str) -> Assembly:
    """The sections of a recorded program, its timeline, and what its steps were."""
    events = capture.events
    last_ns = max([end_of(e) for e in events] + [capture.started_ns])
    all_passes = group_passes(events, capture.sites)
    loop = replay(capture, all_passes)
    rule = loop.rule()
    bounds = step_rule.bounds(loop, rule, capture.started_ns, last_ns)
    per_step = step_rule.split(events, bounds, start_of)
    before, after = step_rule.outside(events, bounds, start_of)
    skip = min(capture.skip_first, max(0, len(bounds) - 1))
    plain = _plain_steps(per_step)
    hooked_after_skip = [i for i in range(skip, len(bounds)) if not plain[i]]
    kept = hooked_after_skip[:capture.active]
    plain_kept = [i for i in range(skip, len(bounds)) if plain[i]]

    # A step's own duration: without nnprofile's work and without the time in collectives, which
    # is the other ranks' (a rank waiting for a straggler would measure the straggler's hooks).
    def own(i: int) -> float:
        start, end = bounds[i]
        return end - start - overlap(start, end, capture.excluded) - sum(
            e.end_ns - e.start_ns for e in per_step[i] if isinstance(e, CommCall))
    calls = [[e for e in per_step[i] if isinstance(e, Call)] for i in range(len(per_step))]
    in_program = measured_in_program(
        costs, [(own(i), sum(1 for c in calls[i] if c.kind != DYNAMIC), sum(1 for c in calls[i] if c.kind == DYNAMIC),
                 sum(c.end_ns - c.start_ns for c in calls[i])) for i in kept],
        [own(i) for i in plain_kept])
    if in_program is not None:
        costs = in_program[0]
    # The graphs of every step, and of what ran before the first step and after the last (pseudo-steps
    # at both ends: they name every graph the same way, wherever it ran).
    spans = [before] + per_step + [after]
    passes = [group_passes(span, capture.sites) for span in spans]
    graphs = split_by_graph(spans, passes, capture)
    labels = solver_labels(capture)
    for g in graphs:
        g.trained_by = trainers(g, spans, capture)
    for g in graphs:  # back to the steps' own indexes
        g.passes = g.passes[1:-1] + [g.passes[0], g.passes[-1]]
    builder = Builder(capture, costs, name, labels, kept, per_step, bounds)
    shown = sorted((g for g in graphs if any(g.passes[i] for i in kept)),
                   key=lambda g: next((n, min(p.start_ns for p in g.passes[i])) for n, i in enumerate(kept)
                                      if g.passes[i]))  # in order of first use in the kept steps
    sections = [builder.graph_section(g) for g in shown]
    sections.append(builder.program_section())
    drift_over(sections, len(kept), 0.10)
    trained = [s for s, g in zip(sections, shown) if g.trained_by] or sections[:-1]
    if trained and kept:
        trained[0].memory = builder.memory(trained[0])
    names = _namer(graphs, capture, labels)
    notes = []
    if capture.iterators:
        notes.append(INPUT_NOTE)
    if capture.callback_used:
        notes.append("the program reduces its gradients with all_reduce_callback: NNabla's backward runs that "
                     "communication itself, where no hook sees it, so it is inside backward_all and the "
                     "backward_function entries, not separated from them (the call that sets it up is timed)")
    undetermined = [g.name for g in graphs if g.key == UNDETERMINED]
    if undetermined:
        notes.append("under auto_forward, functions that no backward reached are in the graph '%s': the rule "
                     "(a function belongs to the graph whose backward reaches it) cannot tell their graph"
                     % undetermined[0])
    notes += unstepped(graphs, labels, spans, kept, skip, len(per_step), capture)
    found = len(bounds) - len(plain_kept)
    return Assembly(sections if any(s.entries for s in sections) else [], builder.timeline, found, skip,
                    len(kept), step_rule.describe(rule, found, names), notes, costs,
                    in_program[1] if in_program is not None else None, builder.origin, graphs)


def _namer(graphs: Sequence[Graph], capture: Capture, labels: Sequence[str]) -> Any:
    by_key = {g.key: g.name for g in graphs}

    def name(what: Tuple[str, Any]) -> str:
        kind, key = what
        if kind == "graph":
            return by_key.get(key, "?")
        if kind == "iterator":
            return capture.iterators[key].name if key < len(capture.iterators) else "?"
        return labels[key] if key < len(labels) else "solver %d" % (key + 1)
    return name


def unstepped(graphs: Sequence[Graph], labels: Sequence[str], spans: Sequence[List[Any]], kept: Sequence[int],
              skip: int, steps: int, capture: Capture) -> List[str]:
    """What ran outside the kept steps and is in no section: the graphs and solvers that ran only before
    them (before the first step, or in the steps set aside), and everything after the last step.

    ``spans``: the events before the first step, of each step, and after the last; a graph's passes
    are per step, then before, then after (indexes -2 and -1)."""
    out = []
    kept_solvers = {e.solver for i in kept for e in spans[1 + i] if isinstance(e, SolverCall)}
    set_aside = list(range(min(skip, steps)))
    early = _ran(graphs, labels, [spans[0]] + [spans[1 + i] for i in set_aside], [-2] + set_aside, kept,
                 kept_solvers, capture, eager=False)
    if early:
        where = ("before the first step" if not skip else
                 "before the first kept step (in the %d step%s set aside, or before them)" % (skip, "" if skip == 1 else "s"))
        out.append("ran only %s, and is in no section: %s" % (where, "; ".join(early)))
    late = _ran(graphs, labels, [spans[-1]], [-1], (), set(), capture, eager=True)
    if late:
        out.append("after the last step (work after the loop: a final evaluation, saving), in no section: %s"
                   % "; ".join(late))
    return out


def _ran(graphs: Sequence[Graph], labels: Sequence[str], spans: Sequence[List[Any]], indexes: Sequence[int],
         kept: Sequence[int], kept_solvers: set, capture: Capture, eager: bool) -> List[str]:
    """Each graph and solver of these spans but those the kept steps hold too (and with ``eager``, the
    eager work): its passes or calls and its time in all."""
    out = []
    for g in graphs:
        if any(g.passes[i] for i in kept):
            continue
        passes = [p for i in indexes for p in g.passes[i]]
        if not passes:
            continue
        counts: Dict[str, int] = {}
        for p in passes:
            counts[p.phase] = counts.get(p.phase, 0) + 1
        total = sum(p.end_ns - p.start_ns for p in passes)
        out.append("graph '%s' %s, %.3f ms in all" % (g.name, " and ".join(
            "%d %s pass%s" % (n, phase, "" if n == 1 else "es") for phase, n in sorted(counts.items(), reverse=True)),
            total / 1e6))
    events = [e for span in spans for e in span]
    solvers: Dict[int, List[SolverCall]] = {}
    for e in events:
        if isinstance(e, SolverCall) and e.solver not in kept_solvers:
            solvers.setdefault(e.solver, []).append(e)
    for s, calls in solvers.items():
        updates = sum(1 for c in calls if c.method == "update")
        out.append("solver %s %d call%s (%d update%s), %.3f ms in all" % (
            labels[s] if s < len(labels) else s + 1, len(calls), "" if len(calls) == 1 else "s", updates,
            "" if updates == 1 else "s", sum(c.end_ns - c.start_ns for c in calls) / 1e6))
    work = [e for e in events if isinstance(e, Call) and e.kind == EAGER] if eager else []
    if work:
        lines = sorted({capture.graph.functions[e.function].created or "?" for e in work})
        out.append("eager work %d call%s (at %s), %.3f ms in all" % (
            len(work), "" if len(work) == 1 else "s", ", ".join(lines[:3]) + (", ..." if len(lines) > 3 else ""),
            sum(e.end_ns - e.start_ns for e in work) / 1e6))
    return out
