"""Which part of a step moved: a step judged slower (or faster) is said with the part whose time a step changed
most between the two results (its input, a pass, its update, its program's own Python), so that a verdict on the
whole step points at what to look at."""

from __future__ import annotations

from typing import Dict, Optional, Protocol, Sequence

from ..analysis import analyze
from ..result import Profile

STEPS = ("training step", "step")  # the metrics that are a whole step (``gate._metrics``)
PASS_MATERIAL = 0.25  # a recorded graph's pass counts where it moves its program's step by this much of the threshold


class Judged(Protocol):
    """A verdict of the gate (``gate.Verdict``), as far as the step's parts amend it."""

    section: str
    metric: str
    ratio: float
    slower: bool
    faster: bool
    unresolved: bool
    note: str


def step_parts(profile: Profile) -> Dict[str, Dict[str, float]]:
    """Each section's step by part (ms a step), by the section's title; sections without a step left out."""
    out: Dict[str, Dict[str, float]] = {}
    for section in analyze(profile).sections:
        if section.step is not None:
            out[section.section.title] = dict(section.step.parts)
    return out


def moved_most(baseline: Dict[str, float], new: Dict[str, float]) -> Optional[str]:
    """The part whose time a step changed most, with its two figures; None where no part is in both."""
    common = [p for p in baseline if p in new]
    if not common:
        return None
    part = max(common, key=lambda p: abs(new[p] - baseline[p]))
    change = new[part] - baseline[part]
    return "%s moved most: %.3f to %.3f ms a step (%+.3f ms)" % (part, baseline[part], new[part], change)


def update_share(parts: Dict[str, float]) -> Optional[float]:
    """The solvers' updates as a share of the program's step, from its parts ("update (Adam)")."""
    step = sum(parts.values())
    ms = sum(v for p, v in parts.items() if p.split(" ", 1)[0] == "update")
    return ms / step if step > 0 and ms > 0 else None


def pass_share(parts: Dict[str, float], graph: str, metric: str) -> Optional[float]:
    """A graph's pass (``metric``: forward_all, backward_all) as a share of its program's step, from the step's
    parts ("forward (loss)"); None where the step has no such part."""
    kind = {"forward_all": "forward", "backward_all": "backward"}.get(metric)
    step = sum(parts.values())
    ms = parts.get("%s (%s)" % (kind, graph)) if kind else None
    return ms / step if ms is not None and step > 0 else None


def passes_material(
    verdicts: Sequence[Judged], graphs: Dict[str, str], before: Dict[str, Dict[str, float]], threshold: float
) -> None:
    """A recorded program's graph pass (or its update) counts only where its change moves the program's step by
    PASS_MATERIAL of the threshold: a validation run once in ten steps that reads 37% slower moves the step by half a
    percent, and two calls in a window can never resolve it. Where the program's step is judged (ok, or faster), a
    pass of it that could not be is no reason to leave the gate undecided. ``graphs``: the graphs' names by section
    title."""
    steps = [parts for title, parts in before.items() if title.startswith("script ")]
    if not steps:
        return
    judged = any(v.metric in STEPS and not (v.slower or v.unresolved) for v in verdicts)
    for v in verdicts:
        if v.section in graphs:
            share = pass_share(steps[0], graphs[v.section], v.metric)
        else:  # the program's own update, a part of its step too
            share = update_share(steps[0]) if v.metric == "update" and v.section.startswith("script ") else None
        if share is None or not (v.slower or v.faster or v.unresolved):
            continue
        moved = share * abs(v.ratio - 1)
        if v.unresolved and not v.slower and judged:
            v.unresolved = False
            v.note = (v.note + "; " if v.note else "") + "its program's step is judged"
            continue
        if moved < PASS_MATERIAL * threshold:
            v.slower = v.faster = v.unresolved = False
            v.note = "moves the step by %.2f%%: not counted (under %.2g%%)" % (
                100 * moved,
                100 * PASS_MATERIAL * threshold,
            )


def say_moved(
    verdicts: Sequence[Judged], before: Dict[str, Dict[str, float]], after: Dict[str, Dict[str, float]]
) -> None:
    """A step that moved (slower, faster, or not judged) names the part that moved most."""
    for v in verdicts:
        if v.metric in STEPS and (v.slower or v.faster or v.unresolved):
            said = moved_most(
                before.get(v.section, {}),
                next(iter(after.values()), {}) if len(after) == 1 else after.get(v.section, {}),
            )
            if said:
                v.note = (v.note + "; " if v.note else "") + said
