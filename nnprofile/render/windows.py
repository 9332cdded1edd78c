"""A long training's windows in words and rows: the log's block, the finding, windows.csv and the Windows sheet.

What the view over the windows found is ``nnprofile.analysis.windows``' (the series, the slowdown and
the part that grew, the layers that moved); it is said here, once for every output.
"""

from __future__ import annotations

from typing import List

from ..analysis.windows import Slowdown, WindowsAnalysis, compared


def finding(s: Slowdown) -> str:
    """The slowdown found, with its figures, naming the windows it compares."""
    return (
        "the step slowed from window %d on (steps from %d, %.0f s into the run): %.3f ms in %s against %.3f ms in "
        "window %d (%+.1f%%, more than the %.3f ms the windows' own spread allows); "
        "the part that grew most: %s, %.3f ms against %.3f ms (%+.3f ms)"
        % (
            s.window,
            s.first_step,
            s.started_s,
            s.step_ms,
            "window %d" % s.last_window if s.last_window else "the last window",
            s.base_ms,
            s.base_window,
            100 * (s.ratio - 1),
            s.threshold_ms,
            s.part,
            s.part_ms,
            s.part_base_ms,
            s.part_ms - s.part_base_ms,
        )
    )


def run_lines(a: WindowsAnalysis, shown: int = 0) -> List[str]:
    """What a long run's log leads with: the run's windows, what the view over them found and the layers that moved
    between the same two windows; then which window the figures below it are (``shown``: its number)."""
    first, last = a.windows[0], a.windows[-1]
    out = ["Run: %d windows recorded, steps %d to %d" % (len(a.windows), first.first_step, last.last_step)]
    out += summary_lines(a)
    here = next((w for w in a.windows if w.window == shown), last)
    out.append(
        "The figures below are window %d's (%s%s; each window's step by part follows them)"
        % (here.window, here.span, "" if here.complete else ", not filled")
    )
    return out


def lines(a: WindowsAnalysis) -> List[str]:
    """The log's block over the windows: each window's step by part."""
    out = ["Windows: %d recorded" % len(a.windows)]
    for w in a.windows:
        out.append(
            "Window %d: %s, %s into the run%s: step %.3f ms = %s"
            % (
                w.window,
                w.span,
                _when(w.started_s, w.ended_s),
                "" if w.complete else " (not filled)",
                w.step_ms,
                " + ".join("%s %.3f ms" % (p, ms) for p, ms in w.parts),
            )
        )
    return out


def summary_lines(a: WindowsAnalysis) -> List[str]:
    """What the view found: the slowdown (or that there was none), the layers that moved."""
    out = []
    if a.slowdown is not None:
        out.append("Finding: %s" % finding(a.slowdown))
    elif len(a.windows) > 1:
        out.append("Finding: the step did not slow over the run by more than the windows' own spread")
    if a.moved:
        ends = compared(a.windows)
        out.append(
            "Layers that moved most from window %d to window %d (ms per step): %s"
            % (ends[0].window, ends[-1].window, ", ".join("%s %.3f to %.3f" % (name, x, y) for name, x, y in a.moved))
        )
    return out


def columns(a: WindowsAnalysis) -> List[str]:
    """windows.csv's columns: each window's steps and times, its step, and each part (ms per step)."""
    parts: List[str] = []
    for w in a.windows:
        parts += [p for p, _ in w.parts if p not in parts]
    return [
        "window",
        "first_step",
        "last_step",
        "steps",
        "started_s",
        "ended_s",
        "step_ms",
        "step_error_ms",
        *["%s_ms" % p for p in parts],
        "complete",
        "folder",
    ]


def rows(a: WindowsAnalysis) -> List[List[object]]:
    parts = [c[:-3] for c in columns(a)[8:-2]]
    rows: List[List[object]] = []
    for w in a.windows:
        held = dict(w.parts)
        rows.append(
            [
                w.window,
                w.first_step,
                w.last_step,
                w.steps,
                w.started_s,
                w.ended_s,
                w.step_ms,
                w.step_error_ms,
                *[held.get(p) for p in parts],
                w.complete,
                w.folder,
            ]
        )
    return rows


def _when(started_s: float, ended_s: float) -> str:
    """A window's time in the run, at a precision that tells its ends apart ("1.8 s to 1.8 s" says nothing)."""
    for digits in (1, 2, 3):
        if round(started_s, digits) != round(ended_s, digits):
            return "%.*f s to %.*f s" % (digits, started_s, digits, ended_s)
    return "at %.3f s" % started_s
