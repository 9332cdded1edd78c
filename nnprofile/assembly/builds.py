"""Graphs built under auto_forward: which function belongs to which graph, by what reads it and where it was built.

Under ``auto_forward`` a graph is no object the program keeps: its functions run as they are made, anew each step.
Each function made so keeps the program's frames it was made from (``Call.frames``: each frame a token that tells
one call of a function from the next, its code and its instruction), so that a graph is known by the program's call
that built it:

- a function belongs to the graph whose backward reaches it (``owner``);
- a function such a function reads from, where no backward reached it, is that graph's too: a small branch of the
  trained graph's own build (a code's indices, a constant, a random draw); but not a network that the program's own
  call built apart (a frozen encoder whose output the trained graph reads: no function of that call is trained, and
  it reads parameters): that is a graph of its own, which feeds the trained one (``apart``);
- the rest, which nothing trained reads, belongs to the graph of the program's call that built it: the innermost
  call of the program's holding every one of those functions in the pass (``build_key``): a validation's
  ``vloss = model(vx)``, an image saved by ``save_image(img)``, each at its line.
"""

from __future__ import annotations

from typing import Dict, Hashable, List, Optional, Sequence, Set, Tuple, cast

from ..base.functions import FunctionInfo
from ..base.places import place, short
from .events import Call
from .iterations import CodeInfo, kind
from .passes import Pass

Path = Tuple[Tuple[int, Optional[int]], ...]  # (code, line) of each frame to a build's call; None: any line
# A graph's key: ("static", root function), ("auto_forward", backward's site), ("built", Path), ("forward", kind)
GraphKey = Tuple[Hashable, ...]
UNDETERMINED: GraphKey = ("forward only",)  # auto_forward work whose graph cannot be told (a recording without stacks)


def _line(codes: Sequence[CodeInfo], c: int, at: int) -> int:
    return codes[c].line_at(at) if c < len(codes) else at


def build_key(calls: Sequence[Call], codes: Sequence[CodeInfo]) -> GraphKey:
    """The graph of forward-only calls of one pass that nothing trained reads: the program's innermost call that
    made them all (the frames they share, by token), as its path of code and line; the deepest shared frame's line
    only where all were made on one line of it. UNDETERMINED where a call kept no frames."""
    framed = [c.frames for c in calls if c.frames]
    if len(framed) < len(calls) or not framed:
        first = calls[0].stack if calls else None
        return ("forward", kind(first)) if first else UNDETERMINED
    depth = min(len(f) for f in framed)
    shared = 0
    while shared < depth and len({f[shared][0] for f in framed}) == 1:
        shared += 1
    if shared == 0:
        return UNDETERMINED
    d = shared - 1
    path: List[Tuple[int, Optional[int]]] = [(c, _line(codes, c, at)) for _, c, at in framed[0][:d]]
    lines = {_line(codes, f[d][1], f[d][2]) for f in framed}
    path.append((framed[0][d][1], lines.pop() if len(lines) == 1 else None))
    return ("built", tuple(path))


def apart(
    owner: Dict[int, GraphKey], passes: Sequence[Pass], functions: Dict[int, FunctionInfo], codes: Sequence[CodeInfo]
) -> Dict[int, GraphKey]:
    """Function -> the graph of the program's call that made it, for each forward-only function of a trained graph's
    build (a pass of ``passes`` that made trained functions: ``owner``, function -> the trained graph whose backward
    reaches it) made inside a call of the program's that made no trained function, and that made a network (a
    function of it reads a parameter): a frozen encoder built by its own call, apart from the trained graph even
    where that graph reads its output."""
    trained: Set[int] = set()
    for p in passes:
        for c in p.calls:
            if c.function in owner and c.frames:
                trained.update(t for t, _, _ in c.frames)
    groups: Dict[Tuple[int, int], List[Call]] = {}
    builds = [c for p in passes if any(x.function in owner for x in p.calls) for c in p.calls]
    for c in builds:
        if c.function in owner or not c.frames:
            continue
        level = next((k for k, (t, _, _) in enumerate(c.frames) if t not in trained), None)
        if level is None or level == 0 or not trained.intersection(t for t, _, _ in c.frames[:level]):
            continue  # made where trained functions were made too (a branch of the build), or by no shared call
        groups.setdefault((level, c.frames[level][0]), []).append(c)
    out: Dict[int, GraphKey] = {}
    for (level, _), made in groups.items():
        if not any(_reads_parameter(functions.get(c.function), functions) for c in made):
            continue
        first = made[0].frames
        assert first is not None
        path = tuple((c, _line(codes, c, at)) for _, c, at in first[:level]) + ((first[level][1], None),)
        for c in made:
            out[c.function] = ("built", path)
    return out


def _reads_parameter(f: Optional[FunctionInfo], functions: Dict[int, FunctionInfo]) -> bool:
    return f is not None and any(p is None for p in f.parents) and bool(f.inputs) and f.type in _PARAMETRIC_READS


# A network's functions: what reads a parameter (the types ``nnabla.parametric_functions`` makes around them).
_PARAMETRIC_READS = frozenset(
    (
        "Affine",
        "Convolution",
        "DepthwiseConvolution",
        "Deconvolution",
        "DepthwiseDeconvolution",
        "BatchNormalization",
        "FusedBatchNormalization",
        "LayerNormalization",
        "GroupNormalization",
        "InstanceNormalization",
        "Embed",
        "RNN",
        "LSTM",
        "GRU",
    )
)


def read_from(
    owner: Dict[int, GraphKey],
    made: Sequence[Sequence[int]],
    functions: Dict[int, FunctionInfo],
    held_apart: Optional[Dict[int, GraphKey]] = None,
) -> None:
    """A function made under auto_forward that a graph's function reads from (through its outputs) is that graph's
    too, where no backward reached it: one the same line of the program's loop made (a constant inside the loss's
    own build), or a source, reading nothing (a random draw another line made); never one held apart (``apart``).
    What another line computed from inputs of its own (a frozen encoder whose parameters need no gradient) is a
    graph of that line's. ``made``: the step's such functions, by the line that made them, in the order they were
    made."""
    held = held_apart or {}
    at = {f: k for k, line in enumerate(made) for f in line}
    for f in reversed([f for line in made for f in line]):  # a function is made after the functions it reads from
        key = owner.get(f)
        info = functions.get(f)
        if key is None or info is None:
            continue
        for parent in info.parents:
            if parent is None or parent not in at or parent in owner or parent in held:
                continue
            source = functions.get(parent)
            if at[parent] == at[f] or (source is not None and not source.inputs):
                owner[parent] = key


def dynamic_passes(
    p: Pass, owner: Dict[int, GraphKey], held: Dict[int, GraphKey], codes: Sequence[CodeInfo]
) -> Dict[GraphKey, Pass]:
    """A run of auto_forward calls made by one line of the program's loop, split by graph: each graph's calls in it.
    A function no graph owns and no call of the program's made apart (``held``) is a branch of the trained graph
    built in the same run (the graph of the function owned nearest before it, else after it); in a run that builds
    nothing trained, the graph of the program's call that made them (``build_key``)."""
    owned = [k for k, c in enumerate(p.calls) if c.function in owner]
    rest = [c for c in p.calls if c.function not in owner and c.function not in held]
    place_key = build_key(rest, codes) if rest and not owned else UNDETERMINED
    out: Dict[GraphKey, Pass] = {}
    for k, call in enumerate(p.calls):
        key = owner.get(call.function) or held.get(call.function)
        if key is None:
            near = [j for j in owned if j < k] or owned
            key = owner[p.calls[near[-1] if near[0] < k else near[0]].function] if owned and call.frames else place_key
        out.setdefault(key, Pass("forward")).calls.append(call)
    return out


def add_build(step_passes: List[Pass], piece: Pass, trained: bool) -> None:
    """A trained auto_forward graph's functions made by one line joined to those the lines before made since its
    last backward: one forward pass a build (a loss built over several lines of the loop is one pass)."""
    last = step_passes[-1] if step_passes else None
    if trained and last is not None and last.dynamic and last.phase == "forward":
        last.calls.extend(piece.calls)
        return
    step_passes.append(piece)


def build_name(key: GraphKey, p: Pass, codes: Sequence[CodeInfo]) -> Tuple[str, Optional[str]]:
    """(name, where) of a graph built by the program's call ``key`` (``build_key``), first seen in ``p``: the name
    the call's line stores its result in (``vloss`` of ``vloss = model(vx)``, ``loss`` of ``loss, _ = f(x)``), else
    the function it called and where (``save_image at train.py:91``); made on one line of a loop, that line's name
    (``score`` of ``score = F.mean(d(g(z)))``); where: that line."""
    if not (isinstance(key, tuple) and len(key) == 2 and key[0] == "built"):
        return "", None
    path = cast(Path, key[1])
    first = next((c for c in p.calls if c.frames), None)
    if first is None or first.frames is None:
        return "", None
    frames = first.frames
    d = len(path) - 1
    _, c, at = frames[d]
    if d == 0 or (path[d][1] is not None and codes[c].innermost(at, at) is not None):
        # made on one line of a loop of the deepest frame they share (``score = f(g(x))`` in the loop): that line
        stored = codes[c].stored_at(at).split(",")[0].strip()
        where = place(codes[c].file, codes[c].line_at(at))
        return (stored if stored and stored != "_" else "forward at %s" % short(where)), where
    _, c, at = frames[d - 1]
    caller = codes[c]
    where = place(caller.file, caller.line_at(at))
    stored = caller.stored_at(at).split(",")[0].strip()
    if stored and stored != "_":
        return stored, where
    callee = codes[path[d][0]].name if path[d][0] < len(codes) else ""
    return "%s at %s" % (callee if callee and not callee.startswith("<") else "forward", short(where)), where


def places(calls: Sequence[Call], codes: Sequence[CodeInfo]) -> List[str]:
    """``file:line`` of each of the program's frames that made every one of the calls (outermost first): where the
    program built them, down to the call that built them all; the innermost such frame's line where it made all of
    them on one line."""
    framed = [c.frames for c in calls if c.frames]
    if not framed:
        return []
    depth = min(len(f) for f in framed)
    shared = 0
    while shared < depth and len({f[shared][0] for f in framed}) == 1:
        shared += 1
    out = []
    for k in range(shared):
        c = framed[0][k][1]
        lines = {_line(codes, c, f[k][2]) for f in framed}
        if len(lines) == 1 and c < len(codes):
            out.append(place(codes[c].file, lines.pop()))
    return out
