"""A recorded program's passes, grouped into the graphs they ran, and each graph's layers named.

A graph is what the program calls ``forward``/``backward`` on: a training loss, a
validation prediction, a GAN's two losses. A static graph is known by the function
that computes what the pass ran on (the last function of a forward pass, the first
of a backward pass). Under ``auto_forward`` the functions are made anew every step:
a graph is known by the call site of its backward, and a function made as it runs
belongs to the graph whose backward reaches it (forward-only work to a forward-only
graph of its own).

Layers are named within their graph, from the parameters as they were while the
program ran: a function's name is the common scope of its parameters
(``conv1/conv`` for ``conv1/conv/W`` and ``conv1/conv/b``), in every graph that uses
those parameters; a scope applied twice in one graph (a siamese pair) gets an index,
as NNabla's unrolled layers do (``conv1/conv[2]``); a parameter-free function its
type, numbered per type in execution order (``ReLU``, ``ReLU_2``), as NNC names layers.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

from .passes import Pass
from .recorder import FunctionCall, SolverCall, SolverInfo

DYNAMIC_FORWARD = "forward only (auto_forward)"


@dataclass
class Graph:
    key: Any
    name: str
    dynamic: bool = False
    # Per step (of those given): its passes, split by graph.
    passes: List[List[Pass]] = field(default_factory=list)
    trained_by: List[int] = field(default_factory=list)  # solver indexes

    def forward_passes(self, step: int) -> List[Pass]:
        return [p for p in self.passes[step] if p.phase == "forward"]

    def backward_passes(self, step: int) -> List[Pass]:
        return [p for p in self.passes[step] if p.phase == "backward"]


def split_by_graph(steps: Sequence[List[Any]], passes: Sequence[List[Pass]]) -> List[Graph]:
    """The graphs of the steps given, in order of first use; each with its passes per step."""
    graphs: Dict[Any, Graph] = {}
    unnamed = 0
    for s, step_passes in enumerate(passes):
        dynamic_functions = {c.function for c in steps[s] if isinstance(c, FunctionCall) and c.dynamic}
        # Static passes over a dynamic graph: their graph is known by the backward's call site.
        owner: Dict[Any, Any] = {}
        for p in step_passes:
            if p.dynamic:
                continue
            dynamic = p.root in dynamic_functions
            key = ("auto_forward", p.site) if dynamic else ("static", p.root)
            if dynamic:
                for call in p.calls:
                    owner.setdefault(call.function, key)
            graph = graphs.get(key)
            if graph is None:
                graph = graphs[key] = Graph(key, p.name, dynamic, passes=[[] for _ in range(s)])
            elif not graph.name and p.name:
                graph.name = p.name
        for graph in graphs.values():
            graph.passes.append([])
        for p in step_passes:
            if not p.dynamic:
                key = ("auto_forward", p.site) if p.root in dynamic_functions else ("static", p.root)
                graphs[key].passes[-1].append(p)
                continue
            # auto_forward calls: each to the graph whose backward reaches it, in runs per graph.
            runs: List[Tuple[Any, Pass]] = []
            for call in p.calls:
                key = owner.get(call.function, ("forward only",))
                if key not in graphs:
                    graphs[key] = Graph(key, "", True, passes=[[] for _ in range(s + 1)])
                if not runs or runs[-1][0] != key:
                    runs.append((key, Pass("forward")))
                runs[-1][1].calls.append(call)
            for key, run in runs:
                graphs[key].passes[-1].append(run)
    out = [g for g in graphs.values() if any(g.passes)]
    out.sort(key=lambda g: _first_use(g))
    for g in out:
        if g.key == ("forward only",):
            g.name = DYNAMIC_FORWARD
        elif not g.name:
            unnamed += 1
            g.name = "graph %d" % unnamed
    _unique_names(out)
    return out


def _first_use(graph: Graph) -> Tuple[int, int]:
    for s, step_passes in enumerate(graph.passes):
        if step_passes:
            return s, min(p.start_ns for p in step_passes)
    return len(graph.passes), 0


def _unique_names(graphs: List[Graph]) -> None:
    seen: Dict[str, int] = {}
    for g in graphs:
        seen[g.name] = seen.get(g.name, 0) + 1
        if seen[g.name] > 1:
            g.name = "%s (%d)" % (g.name, seen[g.name])


def layer_keys(graph: Graph, step: int) -> List[Tuple[Any, FunctionCall, str]]:
    """(layer key, call, phase) of each of a graph's calls in a step, in order. A static graph's
    layer is its function; an auto_forward graph's is its position in the step's forward calls."""
    out: List[Tuple[Any, FunctionCall, str]] = []
    if not graph.dynamic:
        for p in graph.passes[step]:
            out += [(c.function, c, p.phase) for c in p.calls]
        return out
    position: Dict[Any, int] = {}
    for p in graph.passes[step]:
        if p.phase == "forward":
            for c in p.calls:
                position.setdefault(c.function, len(position))
    backward_only = 0
    for p in graph.passes[step]:
        for c in p.calls:
            if c.function in position:
                out.append((("position", position[c.function]), c, p.phase))
            else:
                backward_only += 1
                out.append((("backward only", backward_only), c, p.phase))
    return out


class Namer:
    """Names one graph's layers, in the order they are first seen, from the parameter names seen
    while the program ran."""

    def __init__(self, parameter_names: Dict[Any, str]):
        self.parameter_names = parameter_names
        self.per_scope: Dict[str, int] = {}
        self.per_type: Dict[str, int] = {}

    def scope(self, function: Any) -> str:
        """The common scope of a function's parameters ("" for none)."""
        names = [self.parameter_names.get(v) for v in function.inputs]
        params = [n for n in names if n]
        if not params:
            return ""
        scopes = [p.rsplit("/", 1)[0] if "/" in p else p for p in params]
        if len(set(scopes)) == 1:
            return scopes[0]
        common = os.path.commonprefix([x.split("/") for x in scopes])
        return "/".join(common) or scopes[0]

    def name(self, function: Any) -> str:
        scope = self.scope(function)
        if scope:
            self.per_scope[scope] = self.per_scope.get(scope, 0) + 1
            n = self.per_scope[scope]
            return scope if n == 1 else "%s[%d]" % (scope, n)
        kind = function.info.type_name
        self.per_type[kind] = self.per_type.get(kind, 0) + 1
        n = self.per_type[kind]
        return kind if n == 1 else "%s_%d" % (kind, n)


def trainers(graph: Graph, steps: Sequence[List[Any]], solvers: Sequence[SolverInfo],
             parameter_names: Dict[Any, str]) -> List[int]:
    """The solvers that train a graph: a backward pass of it falls between a solver's zero_grad (or
    its previous update) and its update, and the solver holds parameters the graph uses."""
    found: List[int] = []
    uses = set()
    for step_passes in graph.passes:
        for p in step_passes:
            for c in p.calls:
                for v in c.function.inputs:
                    if v in parameter_names:
                        uses.add(v)
    for s, events in enumerate(steps):
        backward_times = [p.start_ns for p in graph.passes[s] if p.phase == "backward"]
        if not backward_times:
            continue
        opened: Dict[int, int] = {}  # solver -> when its current window opened
        for e in events:
            if not isinstance(e, SolverCall):
                continue
            if e.method == "update":
                start = opened.get(e.solver, float("-inf"))
                if any(start <= t < e.start_ns for t in backward_times) and e.solver not in found:
                    held = solvers[e.solver].parameters if e.solver < len(solvers) else {}
                    if not held or any(v in uses for v in held.values()):
                        found.append(e.solver)
                opened[e.solver] = e.end_ns
            elif e.method == "zero_grad":
                opened[e.solver] = e.end_ns
    return sorted(found)


def solver_labels(solvers: Sequence[SolverInfo], parameter_names: Dict[Any, str]) -> List[str]:
    """How each solver is called in labels: its type alone when it is the only one; else with the
    common scope of its parameters (Adam: gen), else the program's name for it (Adam: solver_dis),
    else the order in which it was made (Adam: 2)."""
    if len(solvers) <= 1:
        return [s.type_name for s in solvers]
    scopes = []
    for s in solvers:
        # Full names (the names given to set_parameters are relative to the scope it was called in).
        names = [parameter_names.get(v) or k for k, v in s.parameters.items()]
        parts = [n.split("/")[:-1] for n in names if n]  # each parameter's scope
        scopes.append("/".join(os.path.commonprefix(parts)) if parts else "")
    if all(scopes) and len(set(scopes)) == len(scopes):
        return ["%s: %s" % (s.type_name, scope) for s, scope in zip(solvers, scopes)]
    variables = [s.variable for s in solvers]
    if all(variables) and len(set(variables)) == len(variables):
        return ["%s: %s" % (s.type_name, v) for s, v in zip(solvers, variables)]
    return ["%s: %d" % (s.type_name, i + 1) for i, s in enumerate(solvers)]

