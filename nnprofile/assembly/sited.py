"""Each graph's passes set to the program's own calls of them in the steps without the hooks, site by site.

The program's code times each call of a pass where it makes it (``Capture.pass_calls``: its site, the file, line and
column of the call). A site whose every call in the kept steps held one pass of one graph, of the call's phase, is
that graph's: its calls in the steps run without the hooks after them are those passes as the program runs alone.
Its calls are those from the first plain step the step is measured over (``Plain.lean``: the steps before it carry
what the hooks left in the caches, in no step of the program alone) to the end, whatever step they fall in (a
validation's passes between epochs, the first step after it, slower in the program alone too); where fewer than
``MIN_CALLS`` fall there, all its calls after the kept steps. A graph's factor of a phase is then the plain calls'
mean at each of its sites, times its passes there in the kept steps, against their estimate with the hooks
(``estimate``). Where one of its passes in the kept steps was called from no such site, or a site ran fewer than
``MIN_CALLS`` times without the hooks, there is none (the gaps' scales stand, ``nnprofile.assembly.lean``).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .passes import Pass

MIN_CALLS = 3  # a site's plain calls its mean needs
Key = Tuple[str, str]  # (graph name, phase)
Span = Tuple[int, int]


PassNote = Tuple[int, int, str, str]  # a call of a pass the program's code timed (``Capture.pass_calls``)


def outermost(notes: Sequence[PassNote]) -> List[PassNote]:
    """The pass calls no other holds (a pass called inside a method of the program's own that is noted too)."""
    out: List[PassNote] = []
    for n in sorted(notes, key=lambda n: (n[0], -n[1])):
        if not out or n[0] >= out[-1][1]:
            out.append(n)
    return out


@dataclass
class Plain:
    """Where the program ran without the hooks: ``span``, the steps after the kept ones; ``hooked``, the spans of
    the passes the hooks saw in it (a call holding one ran with them on); ``lean``, the spans of the plain steps of
    the kept steps' usual shape, and ``typical``, the ids of the passes of the kept steps of that shape."""

    span: Span
    hooked: Sequence[Span] = ()
    lean: Sequence[Span] = ()
    typical: Set[int] = field(default_factory=set)


def factors(
    notes: Sequence[Tuple[int, int, str, str]],
    kept: Sequence[Pass],
    plain: Plain,
    graph_of: Callable[[Pass], Optional[str]],
    estimate: Callable[[Pass], float],
    length: Callable[[int, int], float],
) -> Dict[Key, float]:
    """Each (graph, phase)'s factor from its sites: ``notes``, the outermost calls in time order; ``kept``, the kept
    steps' passes; ``length``, a span's time less nnprofile's and other work's. A site whose kept passes are of
    several graphs (a function of the program's own that runs a training graph and, every few steps, a validation's
    from the same line) is its usual steps' graph's where those hold one: its calls in the plain steps of their
    shape against its passes in the kept ones (the others' passes there keep their figures)."""
    by_site, unsited = _sites(notes, kept, graph_of)
    took = _plain_calls(notes, [plain.span], plain.hooked, length)
    usual = _plain_calls(notes, plain.lean, plain.hooked, length)
    # (from the first plain step the step is measured over: the steps before it carry the hooks' leavings)
    settled = _plain_calls(notes, [(min(plain.lean)[0], plain.span[1])], plain.hooked, length) if plain.lean else took
    sums: Dict[Key, List[float]] = {}
    for site, passes in by_site.items():
        keys = {(graph_of(p) or "", p.phase) for p in passes}
        times = settled.get(site, [])
        if len(times) < MIN_CALLS:  # (a site called seldom: a validation's, after the kept steps)
            times = took.get(site, [])
        if len(keys) > 1:
            passes = [p for p in passes if id(p) in plain.typical]
            mine = {(graph_of(p) or "", p.phase) for p in passes}
            unsited |= keys - mine
            keys, times = mine, usual.get(site, [])
        if len(keys) != 1 or len(times) < MIN_CALLS:
            unsited |= keys
            continue
        w = sums.setdefault(keys.pop(), [0.0, 0.0])
        w[0] += len(passes) * sum(times) / len(times)
        w[1] += sum(estimate(p) for p in passes)
    return {key: p / e for key, (p, e) in sums.items() if key not in unsited and e > 0}


def _sites(
    notes: Sequence[Tuple[int, int, str, str]], kept: Sequence[Pass], graph_of: Callable[[Pass], Optional[str]]
) -> Tuple[Dict[str, List[Pass]], Set[Key]]:
    """The kept passes by the site of the call that held each, and the (graph, phase)s that have none: a pass no call
    holds, a site whose call held more than one pass, or one of another phase or of no graph."""
    starts = [n[0] for n in notes]
    by_site: Dict[str, List[Pass]] = {}
    unsited: Set[Key] = set()
    held: Dict[int, List[Pass]] = {}
    for p in kept:
        k = bisect_right(starts, p.start_ns) - 1
        if k < 0 or notes[k][1] < p.end_ns or not notes[k][3]:
            unsited.add((graph_of(p) or "", p.phase))
        else:
            held.setdefault(k, []).append(p)
    spoiled: Set[str] = set()
    for k, inside in held.items():
        site = notes[k][3]
        if len(inside) != 1 or inside[0].phase != notes[k][2] or graph_of(inside[0]) is None:
            spoiled.add(site)
        by_site.setdefault(site, []).extend(inside)
    for site in spoiled:
        unsited |= {(graph_of(p) or "", p.phase) for p in by_site.pop(site)}
    return by_site, unsited


def _plain_calls(
    notes: Sequence[Tuple[int, int, str, str]],
    within: Sequence[Span],
    hooked: Sequence[Span],
    length: Callable[[int, int], float],
) -> Dict[str, List[float]]:
    """Each site's calls in the spans ``within`` that held no pass the hooks saw: their times."""
    spans = sorted(hooked)
    ends = [b for _, b in spans]
    inside = sorted(within)
    out: Dict[str, List[float]] = {}
    for s, e, _, site in notes:
        k = bisect_right(inside, (s, float("inf"))) - 1
        if not site or k < 0 or e > inside[k][1]:
            continue
        k = bisect_right(ends, s)  # (the first hooked span ending after the call starts)
        if k < len(spans) and spans[k][0] < e:
            continue
        out.setdefault(site, []).append(length(s, e))
    return out
