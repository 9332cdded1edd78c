"""What each of a recorded program's data iterators feeds: the training, or an evaluation (a validation's data)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .events import Call, Capture, Event, InputCall, depth_of
from .graphs import Graph, GraphKey
from .roles import EVALUATION, TRAINED


def evaluation_inputs(
    graphs: Sequence[Graph],
    graph_roles: Dict[GraphKey, Tuple[str, List[str]]],
    per_step: List[List[Event]],
    kept: Sequence[int],
    capture: Capture,
) -> Dict[str, str]:
    """Iterator name -> the graph it feeds, for each iterator whose reads in the kept steps are each followed, until
    the next read, by forward passes only (a validation's data, run through an evaluation or forward through the
    trained graph): it belongs to the evaluation, not to the training's input. An iterator after whose reads a
    backward runs feeds training, whatever ran forward on its data first (a metric before the loss)."""
    if not any(graph_roles.get(g.key, ("",))[0] == TRAINED for g in graphs):
        return {}  # no training at all (an inference loop): its data is its input
    graph_of: Dict[int, Tuple[Graph, str]] = {}
    for g in graphs:
        for i in kept:
            for p in g.passes[i]:
                graph_of[id(p.calls[0])] = (g, p.phase)
    forward_only: Dict[int, bool] = {}
    fed: Dict[int, List[Graph]] = {}
    for i in kept:
        span: List[int] = []  # the iterators read since the last pass that followed a read
        ran: List[Tuple[Graph, str]] = []
        events: List[Optional[Event]] = list(per_step[i]) + [None]
        for e in events:
            if e is not None and depth_of(e):
                continue
            if e is None or (isinstance(e, InputCall) and ran):
                _feed(span, ran, forward_only, fed)
                span, ran = [], []
            if isinstance(e, InputCall):
                span.append(e.iterator)
            elif isinstance(e, Call) and id(e) in graph_of and span:
                ran.append(graph_of[id(e)])
    out: Dict[str, str] = {}
    for it, only in forward_only.items():
        if not only or it >= len(capture.iterators) or not fed.get(it):
            continue
        evaluations = [g for g in fed[it] if graph_roles.get(g.key, ("",))[0] == EVALUATION]
        out[capture.iterators[it].name] = (evaluations or fed[it])[0].name
    return out


def _feed(
    span: Sequence[int], ran: Sequence[Tuple[Graph, str]], forward_only: Dict[int, bool], fed: Dict[int, List[Graph]]
) -> None:
    """What the iterators read in ``span`` fed: the graphs that ran (and how) until the next read."""
    if not ran:
        return
    backward = any(phase == "backward" for _, phase in ran)
    for it in span:
        forward_only[it] = forward_only.get(it, True) and not backward
        known = fed.setdefault(it, [])
        known += [g for g, _ in ran if all(g is not k for k in known)]
