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
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple, TypeVar

T = TypeVar("T")  # an event: what ``split`` and ``outside`` cut by time


def _classes(keys: Sequence[Hashable], start: int, p: int) -> Optional[List[Hashable]]:
    """The pattern of ``keys[start:]`` repeating every ``p`` keys: each place's key (None where only
    keys the hooks did not see fell), or None where two keys at one place differ."""
    reps: List[Hashable] = [None] * p
    for i in range(start, len(keys)):
        k = keys[i]
        if k is None:
            continue
        r = (i - start) % p
        if reps[r] is None:
            reps[r] = k
        elif reps[r] != k:
            return None
    return reps


def _tail_period(keys: Sequence[Hashable], start: int) -> int:
    """The shortest p at which ``keys[start:]`` repeats at least in part (an unfinished last pattern does not
    matter); 1 where it holds one key; 0 where it does not repeat."""
    n = len(keys) - start
    for p in range(1, n):
        if _classes(keys, start, p) is not None:
            return p
    return 1 if n > 0 and len({k for k in keys[start:] if k is not None}) <= 1 else 0


# Where the pattern is sought: at most the last WINDOW keys (a long run's recomputation stays bounded).
WINDOW = 512


def pattern(keys: Sequence[Hashable]) -> Optional[Tuple[int, int, List[Hashable]]]:
    """The loop's repeating pattern: (offset, period, the keys of one step). What repeats up to the end
    is sought over the whole sequence and after a first few keys (1, 2, 4, ... up to half: the updates
    before the loop began, a solver made and used once); each is followed back as far as it holds, and
    the shortest prefix and pattern together wins. A prefix is accepted where it is short beside the
    pattern (at most a quarter of the steps after it, or one key). None where nothing repeats."""
    n = len(keys)
    base = max(0, n - WINDOW)
    starts = [base] + [base + (1 << k) for k in range(20) if (1 << k) <= (n - base) // 2]
    best: Optional[Tuple[int, int, List[Hashable]]] = None
    for start in starts:
        p = _tail_period(keys, start)
        if not p:
            continue
        reps = _classes(keys, start, p)
        assert reps is not None
        o = start
        while o > 0:
            k, r = keys[o - 1], (o - 1 - start) % p
            if k is not None and reps[r] is not None and k != reps[r]:
                break
            if reps[r] is None:
                reps[r] = k
            o -= 1
        if o and o > max(1, (n - o) // (4 * p)):
            continue
        shift = (o - start) % p
        if best is None or o + p < best[0] + best[1]:
            best = (o, p, reps[shift:] + reps[:shift])
    return best


@dataclass
class Segment:
    """The events up to and including one solver update."""

    solver: int
    end_ns: int
    trained: frozenset  # graphs whose backward ran in it
    fed: frozenset  # iterators that fed a trained graph in it
    seen: bool = True  # recorded with the function hooks on (else its graphs are unknown)

    @property
    def by_graphs(self) -> Tuple[int, frozenset]:
        return self.solver, self.trained

    @property
    def by_structure(self) -> Tuple[int, frozenset, frozenset]:
        return self.solver, self.trained, self.fed


@dataclass
class Rule:
    """How the steps were found: what the log's ``Steps:`` line says."""

    kind: str  # "marks", "iterations", "updates", "passes", "one", "none"
    period: int = 1  # updates (or passes) a step
    pattern: List[Any] = field(default_factory=list)  # one step's segments (updates), or its pass keys
    by: str = ""  # for updates: "structure", "graphs" or "solvers"
    offset: int = 0  # updates (or passes) before the pattern began: no step's
    found: bool = True  # False: no pattern (each update is a step)
    where: str = ""  # for iterations: the loop's line ("train.py:57")
    before: int = 0  # for iterations: those before the first update (no steps)
    idle: int = 0  # for iterations: those after it in runs of the loop without an update (no steps)


class Loop:
    """The loop's structure as its events come: segments closed by updates, marks, passes."""

    def __init__(self) -> None:
        self.segments: List[Segment] = []
        self.marks: List[int] = []
        self.passes: List[Tuple[Hashable, int]] = []  # (key, start) of each pass
        self._trained: set = set()
        self._pending: List[Hashable] = []  # iterators read since the last pass
        self.read_at: List[int] = []  # each read: how many passes had begun before it
        self._fed: List[Tuple[Hashable, Hashable]] = []  # (iterator, the graph of the pass after it)
        self._steps = 0
        self._hooks = True
        self._blind = False  # the hooks were off during the current segment
        self._empty = True  # nothing seen yet in the current segment
        self._cached: Optional[Tuple[Rule, Tuple[int, int, int]]] = None

    def input(self, iterator: Hashable) -> None:
        self._pending.append(iterator)
        self.read_at.append(len(self.passes))
        self._empty = False

    def reads_per_step(self, rule: Rule) -> int:
        """In a loop whose steps are its passes: how many reads each complete step holds (the reads before
        its first pass and between its passes), where every step holds as many (but the first, whose reads
        may have come before the loop was followed: a window opens after its first step's read); else 0."""
        if rule.kind != "passes" or not rule.found:
            return 0
        steps = max(0, len(self.passes) - rule.offset) // rule.period
        counts = [0] * steps
        for at in self.read_at:
            k = (at - rule.offset) // rule.period
            if at >= rule.offset and k < steps:
                counts[k] += 1
        counts = counts[1:] or counts
        return counts[0] if counts and counts[0] > 0 and len(set(counts)) == 1 else 0

    def reads_after(self, rule: Rule) -> int:
        """The reads after the last complete step (of the step under way) in a loop whose steps are its passes."""
        complete = rule.offset + (max(0, len(self.passes) - rule.offset) // rule.period) * rule.period
        return sum(1 for at in self.read_at if at >= complete)

    def pass_started(self, phase: str, graph: Hashable, key: Hashable, start_ns: int) -> None:
        """A pass: its phase, its graph, and what identifies it among passes (for loops without a solver)."""
        for it in self._pending:
            self._fed.append((it, graph))
        self._pending = []
        if phase == "backward":
            self._trained.add(graph)
        self.passes.append((key, start_ns))
        self._empty = False

    def hooks(self, on: bool) -> None:
        """The function hooks switched: a segment without them shows no passes, and its graphs are unknown."""
        self._hooks = on
        if not on:
            self._blind = True
        elif self._empty:  # switched on before anything of the segment ran: it is seen whole
            self._blind = False

    def update(self, solver: int, end_ns: int) -> None:
        fed = frozenset(it for it, g in self._fed if g in self._trained)
        self.segments.append(Segment(solver, end_ns, frozenset(self._trained), fed, not self._blind))
        self._trained, self._fed, self._pending = set(), [], []
        self._blind, self._empty = not self._hooks, True

    def mark(self, at_ns: int) -> None:
        self.marks.append(at_ns)

    @staticmethod
    def _key(s: Segment, by: str) -> Hashable:
        """A segment's key under a rule (None where the hooks did not see its graphs)."""
        if by == "solvers":
            return (s.solver,)
        if not s.seen:
            return None
        return s.by_structure if by == "structure" else s.by_graphs

    def rule(self) -> Rule:
        """The rule the events so far follow. The recorder asks at every update, inside the program's step:
        a rule is kept while the new events follow it, and sought again only where they break it (or, for
        a loop without a pattern yet, each time the events have doubled)."""
        size = (len(self.segments), len(self.marks), len(self.passes))
        if self._cached is not None:
            rule, known = self._cached
            if known == size:
                return rule
            if known[1] == size[1] and self._continues(rule, known, size):
                self._cached = (rule, size)
                return rule
        rule = self._rule()
        self._cached = (rule, size)
        return rule

    def _continues(self, rule: Rule, known: Tuple[int, int, int], size: Tuple[int, int, int]) -> bool:
        """Whether the events after those ``known`` follow the rule (segments the hooks did not see do)."""
        if rule.kind == "updates" and rule.found:
            p = rule.period
            for i in range(known[0], size[0]):
                k = self._key(self.segments[i], rule.by)
                r = (i - rule.offset) % p
                if k is not None and rule.pattern[r] is not None and k != rule.pattern[r]:
                    return False
            return True
        if rule.kind == "passes" and not size[0]:
            p = rule.period
            return all(self.passes[i][0] == rule.pattern[(i - rule.offset) % p] for i in range(known[2], size[2]))
        if rule.kind in ("updates", "one", "none") and (rule.kind != "none" or not size[0]):
            grown = size[0] if rule.kind == "updates" else size[2]
            before = known[0] if rule.kind == "updates" else known[2]
            return grown.bit_length() == before.bit_length() and (rule.kind == "updates") == bool(size[0])
        return False

    def _rule(self) -> Rule:
        if self.marks:
            return Rule("marks")
        if self.segments:
            # The pattern is read off the segments the hooks saw; those without them (the steps run
            # without the hooks, for what they cost) fit any place in it.
            for by in ("structure", "graphs", "solvers"):
                found = pattern([self._key(s, by) for s in self.segments])
                if found is not None:
                    offset, p, keys = found
                    return Rule("updates", p, keys, by, offset)
            return Rule("updates", 1, [None], "solvers", 0, found=False)
        if self.passes:
            keys = [k for k, _ in self.passes]
            found = pattern(keys)
            if found is not None and len(keys) - found[0] > found[1]:  # repeated at least once
                offset, p, pass_keys = found
                return Rule("passes", p, pass_keys, offset=offset)
            return Rule("one")
        return Rule("none")

    def steps(self) -> int:
        """Complete steps so far, never fewer than said before (a pattern forming can only grow)."""
        rule = self.rule()
        if rule.kind == "marks":
            n = len(self.marks)
        elif rule.kind == "updates":
            n = max(0, len(self.segments) - rule.offset) // rule.period
        elif rule.kind == "passes":
            n = max(0, len(self.passes) - rule.offset) // rule.period
        elif rule.kind == "one":
            n = 1
        else:
            n = 0
        self._steps = max(self._steps, n)
        return self._steps


def bounds(loop: Loop, rule: Rule, started_ns: int, last_ns: int) -> List[Tuple[int, int]]:
    """The steps as (start, end) in ns. A step ends at the end of its pattern's last update (or at a
    mark); without a solver it runs from its first pass to the next step's first pass. Updates (or
    passes) before the pattern began are before the first step."""
    o = rule.offset
    if rule.kind == "marks":
        return _consecutive(started_ns, loop.marks)
    if rule.kind == "updates":
        segments = loop.segments
        ends = [s.end_ns for i, s in enumerate(segments) if i >= o and (i - o + 1) % rule.period == 0]
        return _consecutive(segments[o - 1].end_ns if o else started_ns, ends)
    if rule.kind == "passes":
        p = rule.period
        starts = [start for i, (_, start) in enumerate(loop.passes) if i >= o and (i - o) % p == 0]
        complete = (len(loop.passes) - o) // p
        ends = starts[1:complete] + ([last_ns] if complete * p == len(loop.passes) - o else [starts[complete]])
        return [(started_ns if i == 0 and not o else starts[i], end) for i, end in enumerate(ends[:complete])]
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


def split(events: Sequence[T], steps: Sequence[Tuple[int, int]], start_of: Callable[[T], int]) -> List[List[T]]:
    """Each step's events: those that start within it (events are in time order)."""
    out: List[List[T]] = [[] for _ in steps]
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


def outside(
    events: Sequence[T], steps: Sequence[Tuple[int, int]], start_of: Callable[[T], int]
) -> Tuple[List[T], List[T]]:
    """The events before the first step and after the last one."""
    if not steps:
        return list(events), []
    first, last = steps[0][0], steps[-1][1]
    return [e for e in events if start_of(e) < first], [e for e in events if start_of(e) >= last]


def rule_figures(rule: Rule, steps: int, name: Any = str) -> Dict[str, Any]:
    """What the log's ``Steps:`` line says (``nnprofile.render.rules``), as figures: which rule applied, and on
    what (``name`` names a pattern's graph, iterator or solver: ``name(("graph", key))``, ``name(("iterator", i))``,
    ``name(("solver", i))``)."""
    if rule.kind == "marks":
        return {"steps": steps}
    if rule.kind == "iterations":
        return {"where": rule.where, "before": rule.before, "idle": rule.idle}
    if rule.kind in ("one", "none"):
        return {}
    figures: Dict[str, Any] = {"period": rule.period, "offset": rule.offset}
    if rule.kind == "passes":
        return figures
    known = [k for k in rule.pattern if k is not None]
    figures["found"] = rule.found
    figures["solvers"] = len({k[0] for k in known})
    figures["pattern"] = [_pattern_part(rule, key, known, name) for key in rule.pattern] if rule.found else []
    return figures


def _pattern_part(rule: Rule, key: Any, known: List[Any], name: Any) -> Dict[str, Any]:
    """One update of a pattern of updates: its solver, the graphs whose backward it follows (where the pattern is
    by structure or graphs), and where the pattern's updates are fed by different iterators, what feeds it; an
    update the hooks did not see is ``{}``."""
    if key is None:
        return {}
    solver = key[0]
    if rule.by == "solvers":
        return {"solver": str(name(("solver", solver)))}
    fed = key[2] if len(key) > 2 else frozenset()
    part: Dict[str, Any] = {
        "solver": str(name(("solver", solver))),
        "after": sorted(name(("graph", g)) for g in key[1]),
    }
    if fed and rule.by == "structure" and len({k[2] for k in known}) > 1:
        part["fed_by"] = sorted(name(("iterator", i)) for i in fed)
    return part
