"""A recording's calls as its sections count them: each call's time, nnprofile's own work and the hooks' cost taken
off, whether other work held it up and by how much, the calls inside it, and its timeline events.

``nnprofile.assembly.sections`` (a graph's layers and passes) and ``nnprofile.assembly.program`` (the program's own
calls) both read the calls through one ``Calls``: the same call costs the same in every section.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base.hookcost import HookCosts
from ..base.interference import CPU
from ..result.details import Child
from ..result.timeline import TimelineEvent
from . import hookfit
from .events import (
    WAITS,
    Call,
    Capture,
    CommCall,
    Event,
    Hooks,
    InputCall,
    MonitorCall,
    SolverCall,
    StepMark,
    disturbed,
    end_of,
    shortfall,
    start_of,
)
from .intervals import merged, overlap, waited_aside, waited_at
from .passes import Pass
from .tree import descendants

UNRESOLVED = 0.9  # the hooks' cost inside a call, as a share of it, beyond which it is not taken off


class Calls:
    """The calls of one capture, with the hooks' ``costs`` to take off them; ``kids``: id(call) -> the calls that ran
    inside it; ``origin``: where the timeline starts (its events are appended to ``timeline``)."""

    def __init__(
        self, capture: Capture, costs: HookCosts, labels: List[str], kids: Dict[int, List[Event]], origin: int
    ) -> None:
        self.capture, self.costs, self.labels, self.kids, self.origin = capture, costs, labels, kids, origin
        self.functions = capture.graph.functions
        self.excluded = merged(capture.excluded)
        self.unresolved: List[Tuple[str, float, float]] = []  # (label, mean, the hooks' cost): a tenth shown
        self.timeline: List[TimelineEvent] = []
        self._keys: Dict[Tuple[Any, str], Optional[str]] = {}  # (function, phase) -> its signature's key (below)
        self._overshoot: Dict[Tuple[int, int], Tuple[Pass, HookCosts, float]] = {}  # (pass, costs) -> ``overshoot``
        self._figures: Dict[Tuple[int, int], Tuple[Pass, HookCosts, float, float]] = {}  # -> ``figures``
        self._pass_taken: Dict[int, Tuple[Pass, float, bool, Optional[float]]] = {}  # pass -> ``pass_taken``
        self._spans: Dict[int, Tuple[Event, float]] = {}  # id(call) -> (the call, its ``span``)
        # The collectives' own waits for a CPU (their marks, read inside them): a rank that waits for the others
        # polls, and is switched out as any spinning task is; that time is the others' to set, not other work's.
        self._comm_waits = sorted(
            (e.start_ns, max(0, e.m1 - e.m0))
            for e in capture.events
            if isinstance(e, CommCall) and not e.depth and e.m1 > e.m0
        )

    def span(self, call: Event) -> float:
        """A call's time, nnprofile's own work inside it (the sampler's, its wrappers') left out: found once a call
        (every figure of its pass, step and entry asks it)."""
        known = self._spans.get(id(call))
        if known is None or known[0] is not call:
            start, end = start_of(call), end_of(call)
            known = self._spans[id(call)] = (call, float(end - start - overlap(start, end, self.excluded)))
        return known[1]

    def lasted(self, start: int, end: int) -> float:
        """What [start, end) took of the program's own: nnprofile's work in it and other work's share of the CPU
        (``waited``) left out."""
        return float(end - start - overlap(start, end, self.excluded)) - self.waited(start, end)

    def signature(self, call: Call, phase: str = "forward") -> Optional[str]:
        """The call's key among the hooks' costs measured per signature (its backward's for a backward call): the
        function's signature and the phase make it, whichever costs are taken off, so it is made once a function and
        phase (asked a few times for every call)."""
        k = (call.function, phase)
        if k not in self._keys:
            f = self.functions.get(call.function)
            self._keys[k] = self.costs.key(self.capture.graph.signature(f) if f is not None else None, phase)
        return self._keys[k]

    def own_cost(self, call: Call, phase: str = "forward") -> float:
        """What the hooks' eviction adds to a call's own time (the part beyond their fixed cost; none for a
        function measured on replicas, which held their own; none at all where no eviction was measured, as only an
        earlier nnprofile's recording holds one)."""
        c = self.costs
        if not c.eviction:
            return 0.0
        key = self.signature(call, phase)
        if call.kind == "static" and c.measured(key):
            return 0.0
        return c.eviction * max(0.0, self.span(call) - c.inside(call.kind, key))

    def hook_total(self, calls: Sequence[Call], phase: str = "forward") -> float:
        """What the hooks added to a stretch of these calls: each call's whole cost and its eviction."""
        c = self.costs
        return sum(c.total(x.kind, self.signature(x, phase)) + self.own_cost(x, phase) for x in calls)

    def resolved(self, label: str, mean: float, off: float) -> float:
        """The hooks' cost to take off a call of mean ``mean``: where it would leave (almost) nothing of a call that
        ran, only so much that a tenth of what was measured is left (1 - UNRESOLVED), and said (``unresolved``): no
        layer that ran reads zero, and the cost left in (``Entry.kept_cost_ns``) is small beside the pass's."""
        if mean > 0 and off >= UNRESOLVED * mean:
            self.unresolved.append((label, mean, off))
            return UNRESOLVED * mean
        return off

    def inner(self, call: Event) -> Tuple[List[Event], float]:
        """The calls inside ``call`` and what timing them added to its time."""
        inside = descendants(call, self.kids)
        if not inside:
            return inside, 0.0
        return inside, sum(
            self.costs.total(x.kind, self.signature(x)) + self.own_cost(x) if isinstance(x, Call) else 0.0
            for x in inside
        )

    def children(self, calls: Sequence[Tuple[Event, float]]) -> List[Child]:
        """Each kind of child of these calls (``(call, hooks inside it)``): its calls per parent call and mean."""
        kinds: Dict[str, List[float]] = {}
        order: List[str] = []
        types: Dict[str, str] = {}
        for call, _ in calls:
            for child in self.kids.get(id(call), []):
                label, kind = self.child_label(child)
                if label not in kinds:
                    kinds[label] = []
                    order.append(label)
                    types[label] = kind
                kinds[label].append(self.span(child))
        n = max(1, len(calls))
        return [
            Child(
                label,
                types[label],
                round(len(kinds[label]) / n, 4),
                round(sum(kinds[label]) / len(kinds[label]) / 1e6, 6),
            )
            for label in order
        ]

    def child_label(self, child: Event) -> Tuple[str, str]:
        if isinstance(child, Call):
            f = self.functions.get(child.function)
            kind = f.type if f is not None else "function"
            how = {"eager": "on NdArrays", "dynamic": "auto_forward"}.get(child.kind, "graph")
            return "%s (%s)" % (kind, how), kind
        if isinstance(child, SolverCall):
            label = self.labels[child.solver] if child.solver < len(self.labels) else "solver"
            return "%s (%s)" % (child.method, label), "solver"
        if isinstance(child, InputCall):
            return "load_dataset (%s)" % self.capture.iterators[child.iterator].name, "input"
        if isinstance(child, MonitorCall):
            return "monitor (%s)" % child.monitor, "monitor"
        return "%s (communicator)" % getattr(child, "method", "call"), "communication"

    def nested_events(self, call: Event) -> None:
        """The calls inside ``call``, nested inside it on the timeline."""
        o = self.origin
        for child in descendants(call, self.kids):
            label, _ = self.child_label(child)
            self.timeline.append(
                TimelineEvent(
                    label, "inside", start_of(child) - o, end_of(child) - o, {"depth": getattr(child, "depth", 1)}
                )
            )

    def figures(self, p: Pass) -> Tuple[float, float]:
        """A hooked pass's time less the hooks' cost as estimated (inside its functions too), and that less what other
        work took of it (inside its functions and between them, where the marks tell): found once a pass and costs,
        as ``overshoot`` is (every figure of a step asks them of each of its passes)."""
        key = (id(p), id(self.costs))
        if key not in self._figures:
            inner = sum(self.inner(c)[1] for c in p.calls)
            est = max(0.0, self.pass_time(p) - self.pass_hooks(p) - inner)
            inside, _, gaps = self.pass_taken(p)
            self._figures[key] = (p, self.costs, est, max(0.0, est - inside - (gaps or 0.0)))
        _, _, est, net = self._figures[key]
        return est, net

    def pass_taken(self, p: Pass) -> Tuple[float, bool, Optional[float]]:
        """What other work took of a pass: inside the functions it held up (what is known of it, summed), whether
        that is not all known (on the CPU's marks, a function's taken unknown), and between them (``gap_taken``).
        Found once a pass (its section's row and every figure of its step ask it)."""
        if id(p) not in self._pass_taken:
            taken = [self.taken(c) for c in p.calls if self.hit(c)]
            unknown = self.capture.marks == CPU and None in taken
            self._pass_taken[id(p)] = (p, sum(t or 0.0 for t in taken), unknown, self.gap_taken(p))
        _, inside, unknown, gaps = self._pass_taken[id(p)]
        return inside, unknown, gaps

    def pass_hooks(self, p: Pass) -> float:
        """What the hooks added inside a pass (from its first function's start to its last one's end): each
        call's cost, but the part of each stretch's last one's that falls after its end, outside the pass, and
        between them no more than there was (``overshoot``)."""
        after = sum(self.outside_cost(last, p) for _, _, last in p.spans())
        return self.hook_total(p.calls, p.phase) - after - self.overshoot(p)

    def overshoot(self, p: Pass) -> float:
        """What the hooks' cost between a pass's functions, as estimated, is above the time between them
        (``hookfit.overshoot``): not taken off the pass, nor off the step that holds it."""
        key = (id(p), id(self.costs))  # asked of each pass for its step and for its own row: found once
        if key not in self._overshoot:  # (the pass and the costs kept with it: no other object takes their ids)
            self._overshoot[key] = (
                p,
                self.costs,
                hookfit.overshoot(p, self.outside_cost, self.excluded, self.gap_wait),
            )
        return self._overshoot[key][2]

    def outside_cost(self, call: Call, p: Pass) -> float:
        """What the hooks add after a function of a pass, outside its own interval, as the costs stand."""
        return self.costs.between(call.kind, self.signature(call, p.phase))

    def hit(self, call: Event) -> bool:
        """Whether other work kept the program from running while the call ran (its marks)."""
        return disturbed(call, self.capture.marks)

    def taken(self, call: Event) -> Optional[float]:
        """What other work took of a call it held up: its wall time less the thread's CPU time (None where the marks
        are no CPU time: a wait, an asynchronous device). None too where that is more than the call's own time
        (nnprofile's own work inside it left out): the marks then hold what other work took of nnprofile's own work
        there too (a collection its events set off), and cannot tell the two apart (under load, a 0.15 s collection
        read as 84 ms taken of a function of 42 ms, and left its pass at zero)."""
        if self.capture.marks != CPU or isinstance(call, WAITS + (StepMark, Hooks)):
            return None
        wall = call.end_ns - call.start_ns
        taken = max(0, wall - (call.m1 - call.m0))
        if taken > wall - overlap(call.start_ns, call.end_ns, self.excluded):
            return None
        return float(taken)

    def gap_taken(self, p: Pass) -> Optional[float]:
        """What other work took of a pass between its functions: each gap between two of them (within a stretch of
        the pass) whose CPU time falls short of its wall time, by that much; a gap that holds nnprofile's own work
        (left out of the pass already, with whatever held it up) is not read. None where no gap was held up."""
        if self.capture.marks != CPU:
            return None
        waits = [self.gap_wait(a, b) for calls in p.runs() for a, b in zip(calls, calls[1:])]
        return sum(waits) if any(waits) else None

    def gap_wait(self, a: Call, b: Call) -> float:
        """What other work took between two functions of a pass, ``a`` and the next, ``b``: the gap's wall time
        less the thread's CPU time there, where that falls short; 0 where it does not, where the marks are no CPU
        time, and where the gap holds nnprofile's own work (left out already, with whatever held it up)."""
        if self.capture.marks != CPU or b.start_ns < a.end_ns or overlap(a.end_ns, b.start_ns, self.excluded):
            return 0.0
        if shortfall(a.end_ns, b.start_ns, a.m1, b.m0, CPU):
            return float((b.start_ns - a.end_ns) - (b.m0 - a.m1))
        return 0.0

    def waited(self, start: int, end: int, field: int = 1) -> float:
        """What other work took of [start, end): the time the thread waited for a CPU (``field`` 2: its involuntary
        context switches), from the readings taken where steps may begin and as nnprofile's own work ends
        (``Capture.waits``), each side interpolated between the readings around it, less what it waited inside
        nnprofile's own work (set aside already) and inside collectives (the other ranks'); 0 where none were
        read."""
        waits = self.capture.waits
        if len(waits) < 2:
            return 0.0
        taken = waited_at(waits, end, field) - waited_at(waits, start, field)
        if field == 1:
            taken -= waited_aside(waits, self.excluded, start, end)  # (nnprofile's own work: set aside already)
            if self._comm_waits:
                taken -= sum(w for at, w in self._comm_waits if start <= at < end)
        return max(0.0, taken)

    def function_time(self, call: Call, inner: float, phase: str) -> float:
        """A function's own time in a pass as its entry counts it: the calls inside it and the hooks' cost inside it
        taken off (so that the pass's rest, between its functions, is what the entries leave of it)."""
        took = max(0.0, self.span(call) - inner)
        return max(0.0, took - self.costs.taken_off(took, call.kind, self.signature(call, phase)))

    def pass_time(self, p: Pass) -> float:
        """The time a pass ran (its stretches: an auto_forward graph's each function from where NNabla began making it),
        nnprofile's own work left out."""
        return float(sum(end - start - overlap(start, end, self.excluded) for start, end, _ in p.spans()))
