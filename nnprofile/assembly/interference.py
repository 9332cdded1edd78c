"""What other work on the machine took of a recording's kept steps (``nnprofile.base.interference``).

Each timed call carries the thread's marks as it began and ended (its CPU time: a call whose CPU time falls short
of its wall time was kept from running); the steps, the time the thread waited for a CPU and its involuntary
context switches as each ended. From them: the rate at which other work disturbed the program's timed calls (by
which each entry's undisturbed calls are weighted), and each section's ``Interference``: how much of the kept
steps' time other work took, how often it switched the program out, how many samples it spoiled. A step's own
samples have the time waited in them taken off already (``nnprofile.assembly.sections``).
"""

from __future__ import annotations

import bisect
from typing import Callable, List, Optional, Sequence, Tuple

from ..base.interference import rate
from ..result import Interference, Section
from .events import Capture, CommCall, Event, Hooks, StepMark, depth_of, disturbed, shortfall
from .passes import Pass


def disturbance_rate(per_step: Sequence[Sequence[Event]], kept: Sequence[int], marks: str) -> float:
    """Disturbances per ns of the program's timed calls in the kept steps (the chance a call of ``d`` ns runs
    undisturbed is then ``exp(-rate * d)``)."""
    hits, timed = 0, 0.0
    for i in kept:
        for e in per_step[i]:
            if depth_of(e) or isinstance(e, (StepMark, Hooks, CommCall)):  # (a collective is never judged)
                continue
            hits += disturbed(e, marks)
            timed += e.end_ns - e.start_ns
    return rate(hits, timed)


def pass_disturbed(p: Pass, marks: str) -> bool:
    """Whether other work kept the program from running anywhere in a pass (in a function or between two)."""
    first, last = p.calls[0], p.calls[-1]
    return shortfall(first.start_ns, last.end_ns, first.m0, last.m1, marks)


def sampled_in(p: Pass, handled: Sequence[Tuple[int, int]]) -> bool:
    """Whether the sampler's handler ran anywhere in a pass (``handled``: its intervals, in order)."""
    start, end = p.calls[0].start_ns, p.calls[-1].end_ns
    k = bisect.bisect_left(handled, (start, 0))
    return (k < len(handled) and handled[k][0] < end) or (k > 0 and handled[k - 1][1] > start)


def apply(
    sections: Sequence[Section],
    capture: Capture,
    per_ns: float,
    kept: Sequence[int],
    bounds: Sequence[Tuple[int, int]],
    waited: Callable[[int, int, int], float],
) -> None:
    """Every entry weighted by the rate other work disturbed the kept steps' calls at (``per_ns``:
    ``disturbance_rate``'s); every section told what that work took of them (``Section.interference``; not measured
    where the kernel's accounting was not read)."""
    if not capture.marks:
        for s in sections:
            s.interference = Interference(measured=False)
        return
    timed = float(sum(bounds[i][1] - bounds[i][0] for i in kept))
    known = len(capture.waits) > 1
    taken: Optional[float] = sum(waited(*bounds[i], 1) for i in kept) if known else None
    switches = int(round(sum(waited(*bounds[i], 2) for i in kept))) if known else 0
    for s in sections:
        samples, spoiled = 0, 0
        for e in s.entries:
            e.switch_rate = per_ns
            samples += len(e.samples_ns)
            spoiled += len(e.disturbed)
        s.interference = Interference(True, timed, taken, switches, spoiled, samples)


def spoiled(sections: Sequence[Section]) -> List[str]:
    """The entries whose undisturbed samples were too few for their figures to stand on them (their labels)."""
    return [
        "%s: %s" % (s.name, e.label)
        for s in sections
        for e in s.entries
        if e.disturbed and not e.stats.undisturbed_enough
    ]
