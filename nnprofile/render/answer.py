"""The answer first: what a log (and the terminal) opens with, before any entry or any word on method.

For each step (a training section's, a recorded program's) and each inference pass: its time and parts, a sorted
table of its top layers (``top`` rows, ``sort`` by time a step, forward, backward or name), their grouping by layer
type (``group_by="type"``: the table is by type instead), and the first piece of advice. torch.profiler's
``key_averages().table(sort_by=..., row_limit=...)`` is the model; the figures are the analysis's, so that they
read as the sections below them read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

from ..analysis import Analysis, SectionAnalysis
from ..analysis.breakdown import LayerTime, Summary
from .words import named
from .advice import words
from .step import other_line

SORTS = ("time", "forward", "backward", "name")
GROUPS = ("layer", "type")
TOP = 10


@dataclass(frozen=True)
class View:
    """How the answer's table is shown: its rows, their order, by layer or by layer type."""

    top: int = TOP
    sort: str = "time"
    group_by: str = "layer"


def _key(sort: str) -> Callable[[Tuple[str, str, float, float, float, int]], Tuple[str, float]]:
    if sort == "name":
        return lambda row: (row[0].lower(), 0.0)
    index = {"time": 2, "forward": 3, "backward": 4}[sort]
    return lambda row: ("", -float(row[index]))


def _rows(layers: Sequence[LayerTime], group_by: str) -> List[Tuple[str, str, float, float, float, int]]:
    """(name, type, ms a step, forward and backward ms a step, layers) by layer, or summed by layer type."""
    if group_by == "layer":
        return [(named(l), l.layer_type, l.step_ms, l.forward_step_ms, l.backward_step_ms, 1) for l in layers]
    grouped: Dict[str, List[float]] = {}
    for l in layers:
        g = grouped.setdefault(l.layer_type or "?", [0.0, 0.0, 0.0, 0])
        g[0] += l.step_ms
        g[1] += l.forward_step_ms
        g[2] += l.backward_step_ms
        g[3] += l.copies
    return [(t, t, v[0], v[1], v[2], int(v[3])) for t, v in grouped.items()]


# What each order sorts by, as a table's title says it (``title``), and the column it sorts by.
SORTED_BY = {"time": "time a %s", "forward": "forward time a %s", "backward": "backward time a %s", "name": "name"}


def title(view: View, unit: str = "step", fell_back: bool = False) -> str:
    """A table's title: what it lists and what it is sorted by (``fell_back``: it could not sort as asked)."""
    what = "layer types" if view.group_by == "type" else "layers"
    if fell_back:
        return "Top %s by time a %s (no %s time in a %s: sorted by time):" % (what, unit, view.sort, unit)
    if view.sort == "name":
        return "%s by name (the first %d):" % (what[0].upper() + what[1:], view.top)
    return "Top %s by %s:" % (what, SORTED_BY[view.sort] % unit)


def table(layers: Sequence[LayerTime], whole_ms: float, view: View, unit: str = "step") -> List[str]:
    """The sorted table of layers (or layer types), ``view.top`` rows, each its forward and backward time (a step's;
    a pass's only its time), its time a ``unit`` and its share of ``whole_ms``: the column it is sorted by always
    among them, as torch.profiler's ``table(sort_by=...)`` shows its own."""
    rows = sorted(_rows(layers, view.group_by), key=_key(view.sort))
    shown = rows[: view.top]
    if not shown:
        return []
    by_type = view.group_by == "type"
    phases = _trains(layers) and unit == "step"  # forward and backward columns; a pass (or a step that trains
    # nothing), its time alone
    first = "layer type" if by_type else "layer"
    width = max(len(first), *(len(r[0]) for r in shown))
    kind = max(len("layers" if by_type else "type"), *(len(str(r[5]) if by_type else r[1] or "") for r in shown))
    align = "%*s" if by_type else "%-*s"  # a count right, a type's name left
    head = ("  %3s  %-*s  " + align) % ("#", width, first, kind, "layers" if by_type else "type")
    if phases:
        head += "  %11s  %11s" % ("forward", "backward")
    out = [head + "  %11s  %8s" % ("ms a %s" % unit, "of it")]
    for i, r in enumerate(shown, 1):
        share = "%.1f%%" % (100 * r[2] / whole_ms) if whole_ms > 0 else ""
        line = ("  %3d  %-*s  " + align) % (i, width, r[0], kind, str(r[5]) if by_type else r[1] or "")
        if phases:
            line += "  %11.4f  %11.4f" % (r[3], r[4])
        out.append(line + "  %11.4f  %8s" % (r[2], share))
    if len(rows) > len(shown):
        more = len(rows) - len(shown)
        out.append(
            "  (%d more %s%s; --top N shows more)" % (more, "type" if by_type else "layer", "" if more == 1 else "s")
        )
    return out


def _trains(layers: Sequence[LayerTime]) -> bool:
    """Whether any layer runs backward (a step that trains nothing has no backward column)."""
    return any(l.backward_step_ms > 0 for l in layers)


def by_type_line(layers: Sequence[LayerTime], whole_ms: float, most: int = 5) -> str:
    """The layer types' shares in one line, the largest first."""
    rows = sorted(_rows(layers, "type"), key=lambda r: -r[2])
    if not rows or whole_ms <= 0:
        return ""
    parts = ["%s %.1f%% (%d)" % (r[0], 100 * r[2] / whole_ms, r[5]) for r in rows[:most]]
    return "By layer type (layers): %s%s" % (", ".join(parts), ", ..." if len(rows) > most else "")


def _step_lines(s: Summary, view: View) -> List[str]:
    step = s.step_ms
    out = [
        "Step of %s: %.3f ms = %s"
        % (
            s.section,
            step,
            " + ".join("%s %.3f ms (%.1f%%)" % (p, ms, 100 * ms / step if step > 0 else 0) for p, ms in s.parts),
        )
    ]
    if s.layers:
        layers = s.base_layers
        fell_back = view.sort == "backward" and not _trains(layers)  # no backward to sort by: by time, and said
        out.append(title(view, "step", fell_back))
        out += table(layers, step, View(view.top, "time", view.group_by) if fell_back else view)
        if view.group_by == "layer":
            out.append(by_type_line(layers, step))
    if s.own_lines:
        out.append(other_line(s))
    if s.advice:
        out.append("First advice: %s" % words(s.advice[0]).text)
    return out


def _inference_lines(a: SectionAnalysis, view: View) -> List[str]:
    whole = a.section.entries_of("forward_all")
    if not whole or not a.layers:
        return []
    ms = whole[0].mean_ms
    fell_back = view.sort == "backward"  # an inference pass runs no backward: by time, and said
    shown = View(view.top, "time", view.group_by) if fell_back else view
    out = [
        "Inference pass of %s: %.3f ms" % (a.section.title, ms),
        title(view, "pass", fell_back),
    ]
    out += table(a.layers, ms, shown, unit="pass")
    if view.group_by == "layer":
        out.append(by_type_line(a.layers, ms))
    return out


DEFAULT = View()


def lines(analysis: Analysis, view: View = DEFAULT) -> List[str]:
    """The answer block: each step and each inference pass of a project, in the sections' order (a program's
    evaluations are parts of its step)."""
    out: List[str] = []
    for a in analysis.sections:
        if a.step is not None:
            out += _step_lines(a.step, view)
        elif a.section.kind == "executor" and a.section.complete:
            out += _inference_lines(a, view)
    return [line for line in out if line]
