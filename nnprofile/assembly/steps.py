"""Where a recorded program's steps are: one step is one iteration of its loop, read off the loop's structure.

An iteration of a training loop repeats a pattern: which iterator it reads, which graph it runs
forward and backward, which solver it updates. Each solver update closes a segment of the
program's events, and the segment is known by its solver, the graphs whose backward ran in it,
and the iterators that fed those graphs (an iterator read just before a pass of a graph that is
trained in the segment; a validation iterator feeds a forward-only graph and does not count).
The step is the shortest repeating pattern of segments that holds every kind of segment:

- a plain loop: one update a step;
- a GAN: the generator's update after its loss's backward, then the discriminator's, one step;
- one solver updated twice per iteration on two graphs (virtual adversarial training: a
  labelled loss, then an unlabelled one): the two segments differ by their graphs, one step;
- one solver updated twice on one graph fed by two iterators (a labelled and an unlabelled
  batch): the segments differ by their iterators, one step;
- a critic updated five times per generator update: six updates a step.

A validation every few iterations adds forward passes to some segments, never a trained graph,
so it does not break the pattern. Where segments never repeat on their graphs and iterators
(solvers used one after the other: a static graph trained, then a dynamic one), each update is a
step. Without a solver, ``nnprofile.step()`` marks where steps end (it overrides every rule);
without either, the repeating pattern of passes does (an inference loop: each ``y.forward()``),
and a program with none of these is one step. Work after the last complete pattern (a final
evaluation, saving the model) is not a step.

``Loop`` follows the structure as events come: the recorder feeds it while the program runs (to
know when a window is done), and ``find_steps`` replays a capture through it, so that both read
the same rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, List, Optional, Sequence, Tuple


def period(keys: Sequence[Hashable]) -> int:
    """The shortest p such that the sequence repeats every p keys and its first p keys hold every
    key there is; the whole length when nothing shorter does (0 for no keys)."""
    n = len(keys)
    distinct = set(keys)
    for p in range(1, n + 1):
        if len(set(keys[:p])) < len(distinct):
            continue
        if all(keys[i] == keys[i - p] for i in range(p, n)):
            return p
    return n


def update_period(keys: Sequence[Hashable]) -> int:
    """The updates a step holds: the shortest repeating pattern holding every key; one update when
    the pattern never repeats (solvers used one after the other)."""
    p = period(keys)
    return 1 if p == len(keys) and len(set(keys)) > 1 else p


@dataclass
class Segment:
    """The events up to and including one solver update."""

    solver: int
    end_ns: int
    trained: frozenset            # graphs whose backward ran in it
    fed: frozenset                # iterators that fed a trained graph in it

    @property
    def by_graphs(self) -> Tuple[int, frozenset]:
        return self.solver, self.trained

    @property
    def by_structure(self) -> Tuple[int, frozenset, frozenset]:
        return self.solver, self.trained, self.fed


@dataclass
class Rule:
    """How the steps were found: what the log's ``Steps:`` line says."""

    kind: str                     # "marks", "updates", "passes", "one", "none"
    period: int = 1               # updates (or passes) a step
    pattern: List[Any] = field(default_factory=list)  # one step's segments (updates), or its pass keys
    by: str = ""                  # for updates: "structure", "graphs" or "solvers"


class Loop:
    """The loop's structure as its events come: segments closed by updates, marks, passes."""

    def __init__(self) -> None:
        self.segments: List[Segment] = []
        self.marks: List[int] = []
        self.passes: List[Tuple[Hashable, int]] = []   # (key, start) of each pass
        self._trained: set = set()
        self._pending: List[Hashable] = []             # iterators read since the last pass
        self._fed: List[Tuple[Hashable, Hashable]] = []  # (iterator, the graph of the pass after it)
        self._steps = 0

    def input(self, iterator: Hashable) -> None:
        self._pending.append(iterator)

    def pass_started(self, phase: str, graph: Hashable, key: Hashable, start_ns: int) -> None:
        """A pass: its phase, its graph, and what identifies it among passes (for loops without a solver)."""
        for it in self._pending:
            self._fed.append((it, graph))
        self._pending = []
        if phase == "backward":
            self._trained.add(graph)
        self.passes.append((key, start_ns))

    def update(self, solver: int, end_ns: int) -> None:
        fed = frozenset(it for it, g in self._fed if g in self._trained)
        self.segments.append(Segment(solver, end_ns, frozenset(self._trained), fed))
        self._trained, self._fed, self._pending = set(), [], []

    def mark(self, at_ns: int) -> None:
        self.marks.append(at_ns)

    def rule(self) -> Rule:
        if self.marks:
            return Rule("marks")
        if self.segments:
            candidates: List[Tuple[str, List[Hashable]]] = [
                ("structure", [s.by_structure for s in self.segments]), ("graphs", [s.by_graphs for s in self.segments])]
            for by, keys in candidates:
                p = period(keys)
                if p < len(keys) or len(set(keys)) == 1:
                    return Rule("updates", p, list(keys[:p]), by)
            solvers = [s.solver for s in self.segments]
            p = update_period(solvers)
            return Rule("updates", p, [(s,) for s in solvers[:p]], "solvers")
        if self.passes:
            keys = [k for k, _ in self.passes]
            p = period(keys)
            return Rule("passes", p, list(keys[:p])) if p < len(keys) else Rule("one")
        return Rule("none")

    def steps(self) -> int:
        """Complete steps so far, never fewer than said before (a pattern forming can only grow)."""
        rule = self.rule()
        if rule.kind == "marks":
            n = len(self.marks)
        elif rule.kind == "updates":
            n = len(self.segments) // rule.period
        elif rule.kind == "passes":
            n = len(self.passes) // rule.period
        elif rule.kind == "one":
            n = 1
        else:
            n = 0
        self._steps = max(self._steps, n)
        return self._steps


def bounds(loop: Loop, rule: Rule, started_ns: int, last_ns: int) -> List[Tuple[int, int]]:
    """The steps as (start, end) in ns. A step ends at the end of its pattern's last update (or at a
    mark); without a solver it runs from its first pass to the next step's first pass."""
    if rule.kind == "marks":
        return _consecutive(started_ns, loop.marks)
    if rule.kind == "updates":
        ends = [s.end_ns for i, s in enumerate(loop.segments) if (i + 1) % rule.period == 0]
        return _consecutive(started_ns, ends)
    if rule.kind == "passes":
        p = rule.period
        starts = [start for i, (_, start) in enumerate(loop.passes) if i % p == 0]
        complete = len(loop.passes) // p
        ends = starts[1:complete] + ([last_ns] if complete * p == len(loop.passes) else [starts[complete]])
        return [(started_ns if i == 0 else starts[i], end) for i, end in enumerate(ends[:complete])]
    if rule.kind == "one":
        return [(started_ns, last_ns)]
    return []


def _consecutive(started_ns: int, ends: Sequence[int]) -> List[Tuple[int, int]]:
    out = []
    start = started_ns
    for end in ends:
        out.append((start, end))
        start = end
    return out


def split(events: Sequence[Any], steps: Sequence[Tuple[int, int]], start_of: Any) -> List[List[Any]]:
    """Each step's events: those that start within it (events are in time order)."""
    out: List[List[Any]] = [[] for _ in steps]
    i = 0
    for event in events:
        t = start_of(event)
        while i < len(steps) and t >= steps[i][1]:
            i += 1
        if i == len(steps):
            break
        if t >= steps[i][0]:
            out[i].append(event)
    return out


def outside(events: Sequence[Any], steps: Sequence[Tuple[int, int]], start_of: Any) -> Tuple[List[Any], List[Any]]:
    """The events before the first step and after the last one."""
    if not steps:
        return list(events), []
    first, last = steps[0][0], steps[-1][1]
    return [e for e in events if start_of(e) < first], [e for e in events if start_of(e) >= last]


def describe(rule: Rule, steps: int, name: Any = str) -> str:
    """The log's ``Steps:`` line: which rule applied, and on what (``name`` names a pattern's graph,
    iterator or solver: ``name(("graph", key))``, ``name(("iterator", i))``, ``name(("solver", i))``)."""
    if rule.kind == "marks":
        return "marked by nnprofile.step(): %d" % steps
    if rule.kind == "one":
        return "one step: no solver update, no nnprofile.step(), no repeating pass"
    if rule.kind == "none":
        return "nothing recorded"
    if rule.kind == "passes":
        return ("passes without a solver: one step per pass" if rule.period == 1 else
                "passes without a solver: one step per %d passes" % rule.period)
    if rule.by == "solvers":
        return ("solver updates: one step per update%s" % (
            " (the solvers' updates form no repeating pattern)" if len({k[0] for k in rule.pattern}) > 1 else ""))
    parts = []
    for key in rule.pattern:
        solver, trained = key[0], key[1]
        fed = key[2] if len(key) > 2 else frozenset()
        text = "%s after the backward of %s" % (name(("solver", solver)), _listed(name(("graph", g)) for g in trained)) \
            if trained else "%s with no backward before it" % name(("solver", solver))
        if fed and rule.by == "structure" and len({k[2] for k in rule.pattern}) > 1:
            text += " fed by %s" % _listed(name(("iterator", i)) for i in fed)
        parts.append(text)
    if rule.period == 1:
        return "solver updates: one step per update"
    solvers = len({k[0] for k in rule.pattern})
    return "solver updates: one step per %d updates%s (the loop's repeating pattern: %s)" % (
        rule.period, " of %d solvers" % solvers if solvers > 1 else " of one solver", "; ".join(parts))


def _listed(names: Any) -> str:
    items = sorted("'%s'" % n for n in names)
    return items[0] if len(items) == 1 else "%s and %s" % (", ".join(items[:-1]), items[-1])
