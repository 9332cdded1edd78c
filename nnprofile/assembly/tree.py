"""A recording's calls as a tree: which call ran inside which.

NNabla runs functions inside functions: a custom ``PythonFunction``'s ``forward_impl`` and
``backward_impl`` call NNabla functions on NdArrays, a backward builds and runs new functions (double
backward, ``nn.grad``), a solver of the program's own computes on NdArrays, a loader calls functions
inside ``DataIterator.next``. Each event keeps its depth (the calls open around it), and events are
kept in the order they ended: a call's children are the events just before it, one level deeper,
back to the last event at its own depth or above, as in a post-order walk.

Passes, graphs, steps and eager work are read off the top-level calls only (``top_level``); a child's
time is inside its parent's and is never counted again beside it. A parent's entry lists its children
(``children``), and the timeline nests them inside it, as torch.profiler's call tree and Perfetto's
nested slices do.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

from .events import Event, Hooks, StepMark, depth_of


def top_level(events: Sequence[Event]) -> List[Event]:
    """The program's own calls (depth 0), and its marks, in order."""
    return [e for e in events if isinstance(e, (StepMark, Hooks)) or depth_of(e) == 0]


def children(events: Sequence[Event]) -> Dict[int, List[Event]]:
    """id(event) -> its direct children, in order. A child whose parent was never recorded (its window
    closed, or the parent's recording failed) has no entry here and is in no parent's list."""
    out: Dict[int, List[Event]] = {}
    pending: Dict[int, List[Event]] = {}  # depth -> events at that depth awaiting their parent
    for e in events:
        if isinstance(e, (StepMark, Hooks)):
            continue
        d = depth_of(e)
        below = pending.pop(d + 1, None)
        if below:
            out[id(e)] = below
        for deeper in [k for k in pending if k > d + 1]:  # orphans: their parent was not recorded
            del pending[deeper]
        pending.setdefault(d, []).append(e)
    return out


def descendants(event: Event, tree: Dict[int, List[Event]]) -> List[Event]:
    """Every call inside ``event``, depth first, in the order they ended."""
    out: List[Event] = []
    for child in tree.get(id(event), []):
        out += descendants(child, tree)
        out.append(child)
    return out


def with_children(span: Sequence[Event], kids: Dict[int, List[Event]]) -> List[Event]:
    """A span of the program's own calls with the calls inside each, before it (as they ended)."""
    if not kids:
        return list(span)
    out: List[Event] = []
    for e in span:
        out += descendants(e, kids)
        out.append(e)
    return out
