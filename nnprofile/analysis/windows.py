"""The view over a long training's windows: how the step and its parts moved over the run.

``summarize_window`` turns a window's profile into a few figures (``nnprofile.result.windows``);
``analyze_windows`` reads the series: each window's step and parts against its steps and the wall
clock, the layers whose time moved most between the first window and the last, and a finding where
the step slowed by more than the noise between windows allows, with the part that grew.

The rule of the finding: the step of a window against the first window's is slower when the
difference is more than ``NOISE_FLOOR`` of the first window's step and more than twice the two
means' combined standard error (each window's kept steps give its own). A slowdown lasts: the last
window is slower so, and so is every window from the one the finding names. Which one: where the
series steps from its earlier level to its later one (the split into two runs of windows, each near
its own median on a log scale, that fits best), among the windows of that lasting run; a slow spell
of the machine in the window just before the change is then not taken for its start. The finding
also names the part whose time per step grew most between the first window and the last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from ..base.stats import median, summarize
from ..result import Entry
from ..result.windows import WindowSummary
from .breakdown import Summary

NOISE_FLOOR = 0.05  # a slowdown under 5% of the step is not said, whatever the windows' spread
MOVED_LAYERS = 5


@dataclass(frozen=True)
class Slowdown:
    window: int  # from this window on, every window is slower
    first_step: int
    started_s: float
    step_ms: float  # the last window's step
    base_ms: float  # the first window's
    threshold_ms: float  # what the noise allows
    part: str  # the part that grew most
    part_ms: float  # its time per step in the last window
    part_base_ms: float  # ... and in the first
    base_window: int = 1  # the windows compared: the first filled one, and the last
    last_window: int = 0

    @property
    def ratio(self) -> float:
        return self.step_ms / self.base_ms if self.base_ms > 0 else float("inf")


@dataclass
class WindowsAnalysis:
    windows: List[WindowSummary]
    slowdown: Optional[Slowdown] = None
    moved: List[Tuple[str, float, float]] = field(default_factory=list)  # layer, first window's ms, last's


def _threshold(a: WindowSummary, b: WindowSummary) -> float:
    se = math.sqrt((a.step_error_ms or 0.0) ** 2 + (b.step_error_ms or 0.0) ** 2)
    return max(NOISE_FLOOR * a.step_ms, 2 * se)


def slowdown(windows: Sequence[WindowSummary]) -> Optional[Slowdown]:
    """The module's rule (above), between the windows ``compared`` (the filled ones: a last window the program cut
    short is no window's figure), as the layers that moved are: None where the step did not slow so."""
    windows = compared(windows)
    if len(windows) < 2:
        return None
    first, last = windows[0], windows[-1]
    slow = [w.step_ms - first.step_ms > _threshold(first, w) for w in windows[1:]]
    if not slow[-1]:
        return None
    k = len(slow) - 1
    while k > 0 and slow[k - 1]:
        k -= 1
    since = windows[change_point(windows, 1 + k)]
    before, after = dict(first.parts), dict(last.parts)
    grown = sorted((after.get(p, 0.0) - before.get(p, 0.0), p) for p in set(before) | set(after) if p != "other")
    if "other" in before or "other" in after:
        grown.append((after.get("other", 0.0) - before.get("other", 0.0), "other"))
    delta, part = max(grown) if grown else (0.0, "other")
    return Slowdown(
        since.window,
        since.first_step,
        since.started_s,
        last.step_ms,
        first.step_ms,
        _threshold(first, last),
        part,
        after.get(part, 0.0),
        before.get(part, 0.0),
        first.window,
        last.window,
    )


def change_point(windows: Sequence[WindowSummary], earliest: int) -> int:
    """The index (from ``earliest`` on) where the step moves from its earlier level to its later one: the
    split whose two runs lie nearest their own medians (absolute log deviations); the earliest at a tie."""
    logs = [math.log(max(w.step_ms, 1e-9)) for w in windows]

    def spread(values: Sequence[float]) -> float:
        m = median(values)
        return sum(abs(v - m) for v in values)

    costs = [(spread(logs[:k]) + spread(logs[k:]), k) for k in range(max(1, earliest), len(windows))]
    return min(costs)[1] if costs else earliest


def compared(windows: Sequence[WindowSummary]) -> List[WindowSummary]:
    """The windows layers are compared between: the filled ones (a last window the program cut short holds a few
    steps, whose figures are no window's), all where fewer than two are filled."""
    filled = [w for w in windows if w.complete]
    return filled if len(filled) >= 2 else list(windows)


def moved_layers(windows: Sequence[WindowSummary], top: int = MOVED_LAYERS) -> List[Tuple[str, float, float]]:
    """The layers whose time per step changed most between the first filled window and the last."""
    windows = compared(windows)
    if len(windows) < 2:
        return []
    a, b = windows[0].layers, windows[-1].layers
    moved = sorted(set(a) | set(b), key=lambda n: -abs(b.get(n, 0.0) - a.get(n, 0.0)))
    return [(n, a.get(n, 0.0), b.get(n, 0.0)) for n in moved[:top] if b.get(n, 0.0) != a.get(n, 0.0)]


def analyze_windows(windows: Sequence[WindowSummary]) -> Optional[WindowsAnalysis]:
    if not windows:
        return None
    return WindowsAnalysis(list(windows), slowdown(windows), moved_layers(windows))


def summarize_window(
    step: Summary,
    entry: Entry,
    window: int,
    first_step: int,
    started_s: float,
    ended_s: float,
    complete: bool,
    folder: str,
    layers: int = 50,
) -> WindowSummary:
    """A window in a few figures: its program step's breakdown (``step``, and its ``step`` entry), its
    heaviest ``layers`` layers by time per step; ``first_step``: its first kept step over the whole run."""
    totals = [t for r, t in enumerate(entry.round_totals()) if r not in set(entry.dropped_rounds)]
    error = summarize(totals).std / math.sqrt(len(totals)) / 1e6 if len(totals) > 1 else None
    heavy = sorted(step.base_layers, key=lambda l: -l.step_ms)[:layers]
    steps = len(entry.round_sizes or entry.samples_ns)
    return WindowSummary(
        window,
        first_step,
        first_step + steps - 1,
        steps,
        round(started_s, 3),
        round(ended_s, 3),
        round(step.step_ms, 6),
        round(error, 6) if error is not None else None,
        [(p, round(ms, 6)) for p, ms in step.parts],
        {l.layer: round(l.step_ms, 6) for l in heavy},
        complete,
        folder,
    )
