"""What each graph of a recorded program is for: which solvers train it (their updates after its backward), and its
role (trained, backward only, updating parameters, feeding a trained graph, or an evaluation); the solvers'
labels and the scopes they update."""

from __future__ import annotations

import os
from typing import Dict, Hashable, List, Optional, Sequence, Set, Tuple

from ..base import kinds
from ..result import Section
from ..result.details import SolverSummary
from .events import Capture, Event, SolverCall
from .graphs import Graph, GraphKey
from .naming import WRITERS, scope_of
from .passes import Pass


def trainers(graph: Graph, steps: Sequence[List[Event]], capture: Capture) -> List[int]:
    """The solvers that train a graph: a backward pass of it falls between a solver's zero_grad (or
    its previous update) and its update, and the solver holds parameters the graph uses."""
    found: List[int] = []
    functions = capture.graph.functions
    uses: Set[int] = set()
    for step_passes in graph.passes:
        for p in step_passes:
            for c in p.calls:
                f = functions.get(c.function)
                if f is not None:
                    uses.update(v for v in f.inputs if capture.graph.variables[v].parameter)
    for s, events in enumerate(steps):
        backward_times = [p.start_ns for p in graph.passes[s] if p.phase == "backward"]
        if not backward_times:
            continue
        opened: Dict[int, float] = {}  # solver -> when its current window opened
        for e in events:
            if not isinstance(e, SolverCall):
                continue
            if e.method == "update":
                start = opened.get(e.solver, float("-inf"))
                if any(start <= t < e.start_ns for t in backward_times) and e.solver not in found:
                    held = capture.solvers[e.solver].parameters if e.solver < len(capture.solvers) else []
                    if not held or any(v in uses for v in held):
                        found.append(e.solver)
                opened[e.solver] = e.end_ns
            elif e.method == "zero_grad":
                opened[e.solver] = e.end_ns
    return sorted(found)


def solver_label(labels: Sequence[str], index: int) -> str:
    """Solver ``index``'s label (``solver_labels``), or its number for a solver the capture does not list."""
    return labels[index] if index < len(labels) else "solver %d" % (index + 1)


def solver_labels(capture: Capture) -> List[str]:
    """How each solver is called in labels: its type alone when no other solver shares it; else with
    the common scope of its parameters (Adam: gen), else the program's name for it (Adam:
    solver_dis), else the line that made it (Adam: line 40), else the order in which it was made."""
    solvers = capture.solvers
    types = [s.type_name for s in solvers]
    labels = list(types)
    for type_name in set(types):
        same = [i for i, t in enumerate(types) if t == type_name]
        if len(same) < 2:
            continue
        for names in (
            _scopes(capture, same),
            [solvers[i].variable for i in same],
            ["line %s" % str(solvers[i].created).rsplit(":", 1)[1] if solvers[i].created else "" for i in same],
            [str(k + 1) for k in range(len(same))],
        ):
            if all(names) and len(set(names)) == len(names):
                for i, name in zip(same, names):
                    labels[i] = "%s: %s" % (type_name, name)
                break
    return labels


def _scopes(capture: Capture, which: Sequence[int]) -> List[str]:
    out = []
    variables = capture.graph.variables
    for i in which:
        names = [variables[v].parameter or "" for v in capture.solvers[i].parameters]
        parts = [n.split("/")[:-1] for n in names if n]  # each parameter's scope
        out.append("/".join(os.path.commonprefix(parts)) if parts else "")
    return out


def solver_summaries(
    capture: Capture,
    labels: Sequence[str],
    graphs: Sequence[Graph],
    per_step: Sequence[List[Event]],
    kept: Sequence[int],
) -> List[SolverSummary]:
    """Each solver as the step's section says it: its label and class, the scopes of the parameters it holds, its
    updates per kept step, the graphs it trains."""
    variables = capture.graph.variables
    out = []
    for i, s in enumerate(capture.solvers):
        scopes: List[str] = []
        for v in s.parameters:
            name = variables[v].parameter if v in variables else None
            scope = scope_of(name) if name else ""
            if scope and scope not in scopes and len(scopes) < SolverSummary.MAX_SCOPES:
                scopes.append(scope)
        updates = sum(
            1
            for k in kept
            for e in per_step[k]
            if isinstance(e, SolverCall) and e.solver == i and e.method == "update" and not e.depth
        )
        out.append(
            SolverSummary(
                solver_label(labels, i),
                s.type_name,
                len(s.parameters),
                scopes,
                round(updates / len(kept), 4) if kept else 0.0,
                [g.name for g in graphs if i in g.trained_by],
                s.module,
            )
        )
    return out


# What a graph is for, as its section says it (``Section.info.role``).
TRAINED, BACKWARD, FEEDS, EVALUATION, UPDATES = "trained", "backward", "feeds", "evaluation", "updates"
FORWARD = "forward"  # forward only, and no measurement of the training: an acting policy, an inference, a demo


def writes(graph: Graph, capture: Capture) -> List[str]:
    """The scopes of the parameters a graph writes (``F.assign`` into a parameter: a target network's copy, a
    moving average), in order."""
    functions, variables = capture.graph.functions, capture.graph.variables
    written: List[str] = []
    for step in graph.passes:
        for p in step:
            for c in p.calls:
                f = functions.get(c.function)
                if f is None or f.type not in WRITERS or not f.inputs:
                    continue
                name = variables[f.inputs[0]].parameter
                if name and name not in written:
                    written.append(name)
    if not written:
        return []
    common = "/".join(os.path.commonprefix([scope_of(n).split("/") for n in written]))
    return [common] if common else sorted({scope_of(n) for n in written})


def roles(
    graphs: Sequence[Graph], kept: Sequence[int], capture: Capture, before: Optional[int] = None
) -> Dict[GraphKey, Tuple[str, List[str]]]:
    """Graph key -> (role, the graphs it feeds). A graph a solver updates is trained; one run forward and
    backward without an update after it (a power iteration) computes gradients; a forward-only graph whose
    outputs a graph run backward reads in the same step, without computing them itself (through a variable
    unlinked from it, which shares its buffer), feeds that graph and is part of training; a forward-only
    graph whose outputs no such graph reads is an evaluation of the training, or no measurement at all
    (``forward``: ``plain_forward``). ``before``: the index of the passes run before the first step, where known."""
    functions = capture.graph.functions
    training = any(g.trained_by for g in graphs)
    backward = {g.key for g in graphs if any(p.phase == "backward" for i in kept for p in g.passes[i])}
    out: Dict[GraphKey, Tuple[str, List[str]]] = {}
    for g in graphs:
        if g.trained_by:
            out[g.key] = (TRAINED, [])
            continue
        written = writes(g, capture)
        if written:
            out[g.key] = (UPDATES, written)
            continue
        if g.key in backward:
            out[g.key] = (BACKWARD, [])
            continue
        fed: List[str] = []
        for i in kept:
            made = {
                v
                for p in g.passes[i]
                if p.phase == "forward" and p.root in functions
                for v in functions[p.root].outputs
            }
            if not made:
                continue
            for t in graphs:
                if t.key not in backward or t.name in fed or not t.passes[i]:
                    continue
                reads, computes = set(), set()
                for p in t.passes[i]:
                    for c in p.calls:
                        f = functions.get(c.function)
                        if f is not None:
                            reads.update(f.inputs)
                            computes.update(f.outputs)
                if made & (reads - computes):
                    fed.append(t.name)
        for i in kept:
            fed += [t for t in backward_through(g, graphs, i) if t not in fed]
        if fed:
            out[g.key] = (FEEDS, fed)
        else:
            out[g.key] = (FORWARD if plain_forward(g, kept, capture, training, before) else EVALUATION, [])
    return out


def plain_forward(g: Graph, kept: Sequence[int], capture: Capture, training: bool, before: Optional[int]) -> bool:
    """Whether a forward-only graph that nothing trained reads is no evaluation of the training: in a program that
    trains nothing (an inference); run before the program made any solver (a demonstration, before any training);
    or run in every step of the training without reducing its batch to a figure (an acting policy's action, where an
    evaluation reduces to a loss or a score, or runs now and then)."""
    if not training:
        return True
    made = [s.made_ns for s in capture.solvers if s.made_ns]
    ran = [p for step in g.passes for p in step]
    if made and len(made) == len(capture.solvers) and ran and all(p.end_ns <= min(made) for p in ran):
        return True
    if not kept or not all(i < len(g.passes) and g.passes[i] for i in kept):
        return False
    return not any(_measures(p, capture) for i in kept for p in g.passes[i] if p.phase == "forward")


def _measures(p: Pass, capture: Capture) -> bool:
    """Whether a forward pass reduces its batch to a single figure (a loss, an accuracy): its last function's output
    is one number, and a reduction made it."""
    functions, variables = capture.graph.functions, capture.graph.variables
    root = functions.get(p.root)
    if root is None:
        return False
    sizes = [_size(variables[v].shape) for v in root.outputs if v in variables]
    if not sizes or max(sizes) > 1:
        return False
    return any(
        kinds.layer_kind(functions[c.function].type) == kinds.REDUCTION for c in p.calls if c.function in functions
    )


def _size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def backward_through(g: Graph, graphs: Sequence[Graph], step: int) -> List[str]:
    """The graphs whose backward, in this step, runs back through functions that no forward pass of their own ran
    before it, and whose last forward was one of ``g``'s passes (``result.forward()`` of a whole graph, then
    ``loss.backward()`` of a part of it never run forward on its own): ``g`` computed what those backwards read. A
    graph that ran those functions forward itself computed them (another graph running them again, an accuracy on
    the same network, feeds it nothing)."""
    forwards = sorted(
        ((p.start_ns, h.key, p) for h in graphs for p in h.passes[step] if p.phase == "forward"), key=lambda x: x[0]
    )
    names = {h.key: h.name for h in graphs}
    out: List[str] = []
    for t in graphs:
        for b in (p for p in t.passes[step] if p.phase == "backward"):
            last: Dict[Hashable, Hashable] = {}
            for start, key, p in forwards:
                if start >= b.start_ns:
                    break
                for c in p.calls:
                    last[c.function] = key
            own = {
                c.function for p in t.passes[step] if p.phase == "forward" and p.start_ns < b.start_ns for c in p.calls
            }
            if (
                t.key != g.key
                and names[t.key] not in out
                and any(last.get(c.function) == g.key and c.function not in own for c in b.calls)
            ):
                out.append(names[t.key])
    return out


def apply_role(section: Section, role: Tuple[str, List[str]]) -> None:
    """What a graph is for, into its section's info (``roles``): its role, and what it feeds or writes."""
    section.info.role = role[0]
    if role[1] and role[0] == UPDATES:
        section.info.writes = role[1]
    elif role[1]:
        section.info.feeds = role[1]
