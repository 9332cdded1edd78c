"""Where a recorded program's steps are: one step is one iteration of its loop.

A training loop repeats a pattern of solver updates: one update (``solver.update()``
each iteration), or one per solver (a GAN's generator, then its discriminator), or
a few of one and one of another (a critic updated five times per generator
update). The step is the shortest repeating pattern that holds every solver's
update; it ends at the end of the pattern's last update. Work after the last
complete pattern (saving the model, a final evaluation) is not a step.

Without a solver, ``nnprofile.step()`` marks where steps end; without either, the
repeating pattern of passes does (an inference loop: each ``y.forward()``), and
a program with none of these is one step. Pure functions of the markers, so that
the rule is tested on sequences.
"""
from __future__ import annotations

from typing import Any, Hashable, List, Sequence, Tuple



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
    """The updates a step holds: the shortest repeating pattern holding every solver's update; one
    update when the pattern never repeats (solvers used one after the other, as a program that
    trains a static graph, clears its parameters and trains a dynamic one)."""
    p = period(keys)
    return 1 if p == len(keys) and len(set(keys)) > 1 else p


def count_steps(updates: Sequence[Hashable], marks: int, passes: Sequence[Hashable]) -> int:
    """Complete steps so far (while recording: when to stop)."""
    if marks:
        return marks
    if updates:
        return len(updates) // update_period(updates)
    if passes:
        p = period(passes)
        return len(passes) // p if p < len(passes) else 1
    return 0


def step_bounds(update_ends: Sequence[Tuple[Hashable, int]], mark_ends: Sequence[int],
                pass_starts: Sequence[Tuple[Hashable, int]], started_ns: int, last_ns: int) -> Tuple[List[Tuple[int, int]], str]:
    """The steps as (start, end) in ns, and how they were found (for the log).

    ``update_ends``: (solver, end of the call) of each update; ``mark_ends``: each
    ``nnprofile.step()``; ``pass_starts``: (call site, start) of each pass; ``started_ns``:
    when recording started; ``last_ns``: the end of the last call recorded.
    """
    if mark_ends:
        bounds = _consecutive(started_ns, list(mark_ends))
        return bounds, "marked by nnprofile.step(): %d" % len(bounds)
    if update_ends:
        keys = [k for k, _ in update_ends]
        p = update_period(keys)
        ends = [end for i, (_, end) in enumerate(update_ends) if (i + 1) % p == 0]
        solvers = len(set(keys))
        how = ("solver updates: one step per update%s" % (
            "" if len(set(keys)) == 1 else " (the solvers' updates form no repeating pattern)") if p == 1 else
               "solver updates: one step per %d updates of %d solvers%s" % (
                   p, solvers, "" if p == solvers else " (the shortest repeating pattern that holds every solver's update)"))
        return _consecutive(started_ns, ends), how
    if pass_starts:
        keys = [k for k, _ in pass_starts]
        p = period(keys)
        if p == len(keys):
            return [(started_ns, last_ns)], "one step: no solver update, no nnprofile.step(), no repeating pass"
        # A step runs from the start of its first pass to the start of the next step's first pass.
        starts = [start for i, (_, start) in enumerate(pass_starts) if i % p == 0]
        complete = len(keys) // p
        ends = starts[1:complete] + ([last_ns] if complete * p == len(keys) else [starts[complete]])
        bounds = [(started_ns if i == 0 else starts[i], end) for i, end in enumerate(ends[:complete])]
        return bounds, ("passes without a solver: one step per pass" if p == 1 else
                        "passes without a solver: one step per %d passes" % p)
    return [], "nothing recorded"


def _consecutive(started_ns: int, ends: List[int]) -> List[Tuple[int, int]]:
    bounds = []
    start = started_ns
    for end in ends:
        bounds.append((start, end))
        start = end
    return bounds


def steps_of(events: Sequence[Any], bounds: Sequence[Tuple[int, int]]) -> List[List[Any]]:
    """Each step's events: those that start within it (events are in time order)."""
    out: List[List[Any]] = [[] for _ in bounds]
    i = 0
    for event in events:
        t = _start(event)
        while i < len(bounds) and t >= bounds[i][1]:
            i += 1
        if i == len(bounds):
            break
        if t >= bounds[i][0]:
            out[i].append(event)
    return out


def _start(event: Any) -> int:
    return event.at_ns if hasattr(event, "at_ns") else event.start_ns
