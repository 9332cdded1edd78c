"""A recorded program's passes, grouped into the graphs they ran, and each graph's layers named.

A graph is what the program calls ``forward``/``backward`` on: a training loss, a validation
prediction, a GAN's two losses. A static graph is known by the function that computes what the
pass ran on (the last function of a forward pass, the first of a backward pass). Under
``auto_forward`` the functions are made anew every step: a graph is known by the call site of its
backward, and a function made as it runs belongs to the graph whose backward reaches it
(forward-only work to a forward-only graph of its own).

A graph rebuilt by the same lines again and again (a new graph per task in meta-learning, per batch
of another length) is one graph: its builds run the same functions, on the same shapes, from the same
call sites (``merge_rebuilt``); its layers are known by position, as an auto_forward graph's are.

A graph is named as the program names it (``loss`` in ``loss.backward()``); two graphs the
program gave one name (a variable bound to a new graph) are told apart by the line that made
each (``loss (line 98)``, ``loss (line 120)``).

Layers are named within their graph, from the parameters as they were while the program ran: a
function's name is the common scope of its parameters (``conv1/conv`` for ``conv1/conv/W`` and
``conv1/conv/b``), in every graph that uses those parameters; a scope applied twice in one graph
(a siamese pair) gets an index, as NNabla's unrolled layers do (``conv1/conv[2]``); a
parameter-free function its type, numbered per type in execution order (``ReLU``, ``ReLU_2``), as
NNC names layers (``naming``). A parameter used outside its layer (a weight decay or L2 term, a weight norm, a
tied embedding read again, a target network's soft update) is no copy of that layer: the function is named by
what it does and the parameter it reads (``PowScalar (gcn_layer_0/affine/W)``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, Hashable, List, Optional, Sequence, Set, Tuple

from ..base.places import place, short
from .events import Call, Capture, DYNAMIC, Event
from .iterations import CodeInfo, Stack, kind, stored_name
from .passes import Pass
from .builds import UNDETERMINED, GraphKey, add_build, apart, build_name, dynamic_passes, places, read_from

DYNAMIC_FORWARD = "forward only (auto_forward)"


@dataclass
class Graph:
    key: GraphKey
    name: str
    dynamic: bool = False
    # Per step (of those given): its passes, split by graph.
    passes: List[List[Pass]] = field(default_factory=list)
    trained_by: List[int] = field(default_factory=list)  # solver indexes
    made: Optional[str] = None  # where the program made what it runs on ("train.py:98"), where known
    stack: Optional[Stack] = None  # the program's frames at its first pass (which line called what built it)
    rebuilt: bool = False  # built anew by the same lines (its builds merged): layers by position

    @property
    def has_backward(self) -> bool:
        return any(p.phase == "backward" for step in self.passes for p in step)


def graph_key(p: Pass, dynamic_functions: Set[int]) -> GraphKey:
    """What a static pass ran: its root function; over a dynamic graph, its backward's call site."""
    return ("auto_forward", p.site) if p.root in dynamic_functions else ("static", p.root)


def split_by_graph(
    steps: Sequence[List[Event]],
    passes: Sequence[List[Pass]],
    capture: Capture,
    shown: Optional[Set[int]] = None,
    kept: AbstractSet[int] = frozenset(),
) -> List[Graph]:
    """The graphs of the steps given, in order of first use; each with its passes per step. ``shown``: the steps
    whose graphs matter (a graph seen only elsewhere, in part, as the hooks were switched for the steps that measure
    their cost, is left out); ``kept``: the steps the profile is of (``tell_apart``).

    Under auto_forward a graph is no object the program keeps: its functions run as they are made, anew each step:
    which graph each function belongs to is ``nnprofile.assembly.builds``' rule (what reads it, and the program's
    call that built it). Each such graph's functions in one run of auto_forward calls are one forward pass."""
    graphs: Dict[GraphKey, Graph] = {}
    functions = capture.graph.functions
    by_backward: Set[GraphKey] = set()  # graphs named by their backward's call (a loss: ``loss.backward()``)
    for s, step_passes in enumerate(passes):
        dynamic_functions = {c.function for c in steps[s] if isinstance(c, Call) and c.kind == DYNAMIC}
        owner: Dict[int, GraphKey] = {}  # a dynamic function -> the graph whose backward reaches it
        for p in step_passes:
            if p.dynamic:
                continue
            key = graph_key(p, dynamic_functions)
            if key[0] == "auto_forward":
                for call in p.calls:
                    owner.setdefault(call.function, key)
            graph = graphs.get(key)
            if graph is None:
                graph = graphs[key] = _new_graph(key, p, s, capture)
            elif not graph.name and p.name:
                graph.name = p.name
            if p.phase == "backward" and p.name and key not in by_backward:
                graph.name = p.name  # what it is trained as, over what a forward ran it as (``metric.forward()``)
                by_backward.add(key)
        held = apart(owner, [p for p in step_passes if p.dynamic], functions, capture.codes)
        read_from(owner, [[c.function for c in p.calls] for p in step_passes if p.dynamic], functions, held)
        for graph in graphs.values():
            graph.passes.append([])
        for p in step_passes:
            if not p.dynamic:
                graphs[graph_key(p, dynamic_functions)].passes[-1].append(p)
                continue
            for key, run in dynamic_passes(p, owner, held, capture.codes).items():
                if key not in graphs:
                    graphs[key] = _built_graph(key, p, s, capture)
                add_build(graphs[key].passes[-1], run, key[0] == "auto_forward")
    out = merge_rebuilt(
        [g for g in graphs.values() if any(g.passes[i] for i in range(len(g.passes)) if shown is None or i in shown)],
        capture,
    )
    out.sort(key=_first_use)
    for g in out:  # an auto_forward graph trained: made where its first forward was built, not where its backward ran
        first = next((p for step in g.passes for p in step if p.phase == "forward" and p.dynamic), None)
        built = places(first.calls, capture.codes) if g.key[0] == "auto_forward" and first is not None else []
        if built:
            g.made = built[-1]
    _name_unnamed(out)
    tell_apart(out, capture.codes, kept)
    return out


def _built_graph(key: GraphKey, p: Pass, steps_before: int, capture: Capture) -> Graph:
    """A graph auto_forward built, first seen in ``p``: named as the program's call that built it names it."""
    name, made = build_name(key, p, capture.codes)
    where = p.calls[0].stack
    if not made and where:  # (a recording without frames: the line of the loop that built it)
        name, made = stored_name(where, capture.codes), _where(where, capture)
    return Graph(key, name, True, passes=[[] for _ in range(steps_before + 1)], made=made, stack=where)


def _new_graph(key: GraphKey, p: Pass, steps_before: int, capture: Capture) -> Graph:
    """The graph a pass first ran, with no passes in the steps before, and where the program built it."""
    root = capture.graph.functions.get(p.root)
    made = root.created if root is not None and key[0] == "static" else None
    if made is None and p.site is not None and p.site in capture.sites:
        made = capture.sites[p.site].where
    return Graph(
        key,
        p.name,
        key[0] == "auto_forward",
        passes=[[] for _ in range(steps_before)],
        made=made,
        stack=p.calls[0].stack,
    )


def _name_unnamed(graphs: Sequence[Graph]) -> None:
    """A name for each graph no call named: what auto_forward ran that no graph owns, the line that built it
    (a build stored nowhere), or its number among the rest."""
    unnamed = 0
    for g in graphs:
        if g.key == UNDETERMINED:
            g.name = DYNAMIC_FORWARD
        elif not g.name and g.dynamic and g.made:  # built by a line that stores nothing: named by that line
            g.name = "forward at %s" % short(g.made)
        elif not g.name:
            unnamed += 1
            g.name = "graph %d" % unnamed


def _where(stack: Optional[Stack], capture: Capture) -> Optional[str]:
    """``train.py:82``: the line of the outermost frame of a stack inside a loop (where a graph was built)."""
    if not stack:
        return None
    codes = capture.codes
    framed = [(c, at) for _, c, at in stack if c < len(codes)]
    inside = (
        [(c, at) for c, at in framed if codes[c].innermost(at, at) is not None]
        or [(c, at) for c, at in framed if codes[c].name != "<module>"]
        or framed
    )
    if not inside:
        return None
    c, at = inside[0]
    return place(codes[c].file, codes[c].line_at(at))


def fingerprint(graph: Graph, capture: Capture) -> Optional[str]:
    """What a static graph's build runs: its first forward pass's and first backward pass's call site and
    functions (type, arguments, shapes). None for an auto_forward graph."""
    if graph.dynamic:
        return None
    functions = capture.graph.functions
    parts: List[str] = []
    for phase in ("forward", "backward"):
        first = next((p for step in graph.passes for p in step if p.phase == phase), None)
        if first is None:
            continue
        site = capture.sites.get(first.site) if first.site is not None else None
        names = [
            capture.graph.signature(functions[c.function]) if c.function in functions else "?" for c in first.calls
        ]
        parts.append("%s@%s:%s|%s" % (phase, site.file if site else "", site.line if site else "", ";".join(names)))
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest() if parts else None


def merge_rebuilt(graphs: List[Graph], capture: Capture) -> List[Graph]:
    """Graphs that are builds of one graph (same fingerprint) made one, their passes together per step."""
    by_print: Dict[str, Graph] = {}
    out: List[Graph] = []
    for g in graphs:
        key = fingerprint(g, capture)
        first = by_print.get(key) if key is not None else None
        if first is None:
            if key is not None:
                by_print[key] = g
            out.append(g)
            continue
        first.rebuilt = True
        for i, step in enumerate(g.passes):
            if step:
                first.passes[i] = sorted(first.passes[i] + step, key=lambda p: p.start_ns)
        if not first.name and g.name:
            first.name = g.name
    return out


def _first_use(graph: Graph) -> Tuple[int, int]:
    for s, step_passes in enumerate(graph.passes):
        if step_passes:
            return s, min(p.start_ns for p in step_passes)
    return len(graph.passes), 0


def tell_apart(graphs: List[Graph], codes: Sequence[CodeInfo] = (), kept: AbstractSet[int] = frozenset()) -> None:
    """Graphs the program gave one name get the line that made each: ``loss (line 120)``; the file too
    where the lines are of different files; where one line made them (a function building a graph, called for
    training and for a validation), the line that called it (``result_all (called at train_maml.py:241)``); a number
    only where even that is the same. Where the ``kept`` steps run one of them, it keeps the name, and the others
    (seen before those steps or after them: the first step's build under auto_forward, a final evaluation) are told
    apart from it."""
    by_name: Dict[str, List[Graph]] = {}
    for g in graphs:
        by_name.setdefault(g.name, []).append(g)
    for name, same in by_name.items():
        if len(same) < 2:
            continue
        _tell_apart(name, same, codes)
        inside = [g for g in same if any(g.passes[i] for i in kept if i < len(g.passes))]
        if len(inside) == 1:
            inside[0].name = name


def _tell_apart(name: str, same: List[Graph], codes: Sequence[CodeInfo]) -> None:
    """Each of ``same`` (graphs of one name) named with what tells it from the others."""
    places = [g.made for g in same]
    files = {p.rsplit(":", 1)[0] for p in places if p}
    for i, g in enumerate(same):
        where = places[i]
        if where is None:
            g.name = "%s (%d)" % (name, i + 1)
        elif len(files) > 1 or where.startswith("In ["):  # (a notebook's cell is named whole)
            g.name = "%s (%s)" % (name, short(where))
        else:
            g.name = "%s (line %s)" % (name, where.rsplit(":", 1)[1])
    if len({g.name for g in same}) < len(same):  # one line made several: by the line that called it, else numbered
        called = _called_from([g.stack for g in same], codes)
        for i, g in enumerate(same):
            g.name = "%s (%s)" % (name, "called at %s" % called[i] if called else i + 1)


def _called_from(stacks: Sequence[Optional[Stack]], codes: Sequence[CodeInfo]) -> List[str]:
    """For stacks that part somewhere: the line of each at the outermost frame where they part ("" for all where one
    is unknown or two do not part)."""
    if not codes or any(not st for st in stacks):
        return []
    keys = [kind(st) for st in stacks]  # type: ignore[arg-type]
    if len(set(keys)) < len(keys):
        return []
    level = 0
    while all(len(k) > level for k in keys) and len({k[level] for k in keys}) == 1:
        level += 1
    out = []
    for k in keys:
        if len(k) <= level or k[level][0] >= len(codes):
            return []
        code = codes[k[level][0]]
        out.append(short(place(code.file, code.line_at(k[level][1]))))
    return out if len(set(out)) == len(out) else []


def layer_keys(graph: Graph, step: int) -> List[Tuple[Hashable, Call, str]]:
    """(layer key, call, phase) of each of a graph's calls in a step, in order. A static graph's layer is its
    function; a graph made anew (under auto_forward, or rebuilt by the same lines) has its layers by their position
    in each build's forward pass (a graph built twice a step runs each layer twice), and a function that no forward
    pass ran (a backward's own) by its position in its backward pass."""
    out: List[Tuple[Hashable, Call, str]] = []
    if not graph.dynamic and not graph.rebuilt:
        for p in graph.passes[step]:
            out += [(c.function, c, p.phase) for c in p.calls]
        return out
    at: Dict[Hashable, int] = {}
    for p in graph.passes[step]:
        if p.phase == "forward":
            for i, c in enumerate(p.calls):
                at[c.function] = i
    for p in graph.passes[step]:
        loose = 0
        for c in p.calls:
            if c.function in at:
                out.append((("position", at[c.function]), c, p.phase))
            else:
                loose += 1
                out.append((("backward only", loose), c, p.phase))
    return out
