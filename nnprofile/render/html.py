"""report.html: one self-contained page for a reader with a browser.

It opens with where the step goes (the parts of the step, for a program each graph with what it is
for, the advice, the top layers), then one part per section with its layers (a long table folded,
every table scrolled inside its box: nothing is wider than the window).

Everything is inside the file: the data as JSON in a ``<script
type="application/json">`` element, the stylesheet, and a small script that
builds the page with DOM calls (``textContent``, ``createElementNS`` for the
SVG charts). No CDN, font, image or request leaves the file. Every name from
a project or a program reaches the page as text, never as markup: a layer
named ``<img src=x onerror=alert(1)>`` shows as those characters.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

from .notes import said, texts
from ..analysis import Analysis, SectionAnalysis, charted_layers
from ..analysis.breakdown import MIN_SHARE_SAMPLES, per_step_ms
from .words import drift_words, named, own_lines_note, purpose
from .advice import words
from .step import chart_note, note, top_heading
from .windows import finding
from ..base.choices import GRAPH
from . import interference
from . import memory
from .sampling import load_line, passes_line, sampling_line
from ..analysis.ranks import RanksAnalysis
from .ranks import summary_lines as ranks_lines
from ..analysis.windows import WindowsAnalysis
from .colours import PART_COLOURS
from .log import section_line
from ..result import Entry, Profile, Section
from ..result.layer_columns import IN_REPORT, SHOW_TEXT, LayerRow, select
from .base import Contents

NAME = "html"
FILENAME = "report.html"
WHAT = "the one-file HTML report"
WRITES = (FILENAME,)
HEADER_KEYS = (
    ("project", "project"),
    ("context", "context"),
    ("implementation_classes", "implementation classes"),
    ("nnprofile", "nnprofile"),
    ("nnabla", "nnabla"),
    ("machine", "machine"),
    ("date", "date"),
    ("mode", "mode"),
    ("sampling", "sampling rule"),
    ("batch_size", "batch size"),
    ("world_size", "world size"),
    ("rank", "rank"),
    ("ranks_merged", "ranks merged"),
    ("hosts", "hosts"),
)


# The layer table: ``nnprofile.result.layer_columns.IN_REPORT``, and "calls inside", said here.
INSIDE = ("inside", "calls inside", SHOW_TEXT, True)


def layer_columns() -> List[Tuple[str, str, str, bool]]:
    """(key, heading, how it is shown, shown at first) of each column of the layer table, for its script."""
    return [(c.name, c.heading, c.show, c.first) for c in select(IN_REPORT)] + [INSIDE]


def _layers(a: SectionAnalysis) -> List[Dict[str, Any]]:
    """The layer table: each layer's forward and backward as the analysis paired them."""
    step = a.step.step_ms if a.step is not None and a.step.step_ms > 0 else a.program_step_ms
    chosen = select(IN_REPORT)
    rows = []
    for lt in a.layers:
        f, b = lt.forward, lt.backward
        per_step = sum(per_step_ms(x) for x in (f, b) if x is not None) if a.program_step_ms else lt.total_ms
        row = LayerRow(a.section, lt, per_step, step_ms=step)
        values = {c.name: c.get(row) for c in chosen}
        values["source"] = values["source"] or ""
        values["inside"] = _inside(f, b)
        rows.append(values)
    return rows


def _inside(*entries: Optional[Entry]) -> str:
    """What ran inside a layer's calls: ``forward: Mul2 (on NdArrays) x1; backward: ...``."""
    parts = []
    for e in entries:
        if e is not None and e.children:
            listed = ", ".join("%s x%g" % (c.label, c.calls) for c in e.children)
            side = {"forward_function": "forward: ", "backward_function": "backward: "}.get(e.phase, "")
            parts.append(side + listed)
    return "; ".join(parts)


def _section(a: SectionAnalysis, profile: Profile) -> Dict[str, Any]:
    s: Section = a.section
    charted, shown = charted_layers(a)
    data: Dict[str, Any] = {
        "title": s.title,
        "complete": s.complete,
        "layers": _layers(a),
        "subtitle": section_line(s)[len("Profiling ") : -4],
        "entries": [
            {
                "label": e.label,
                "mean": e.mean_ms,
                "per_step": e.calls_per_round() if s.kind != "optimizer" and s.kind != "executor" else None,
                "rse": e.stats.known_rse,
                "inside": _inside(e),
            }
            for e in s.entries
            if e.phase not in ("forward_function", "backward_function")
        ],
        "chart": [
            {
                "layer": l.layer if l.copies == 1 else "%s (%d copies)" % (l.layer, l.copies),
                "fwd_mean": l.forward_ms,
                "bwd_mean": l.backward_ms,
            }
            for l in charted
        ],
        "chart_note": chart_note(shown),
        "coverage": [{"what": "%s of %s" % (c.layer_phase, c.whole_phase), "share": c.share} for c in a.coverage],
        "drift": drift_words(a.drift),
        "notes": ([passes_line(s)] if passes_line(s) else [])
        + ([sampling_line(a.precision)] if a.precision is not None and s.sampling else [])
        + (["Input: %s" % load_line(s)] if load_line(s) else [])
        + memory.lines(a),
        "incomplete": [e.label for e in a.incomplete],
    }
    if s.memory.curve:
        data["memory"] = {"curve": s.memory.curve, "peak": s.memory.peak_estimated, "fixed": s.memory.fixed}
    return data


def _lead(index: int, a: SectionAnalysis, purposes: Dict[str, str]) -> Dict[str, Any]:
    """What the page opens with, for a section with a step: where the step goes (its parts, and for a program
    each graph with what it is for), the advice, the top layers."""
    s = a.step
    assert s is not None
    step = s.step_ms
    share = (lambda ms: ms / step) if step > 0 else (lambda ms: None)
    return {
        "title": a.section.title,
        "section": index,
        "ms": step,
        "parts": [[p, ms] for p, ms in s.parts],
        "advice": [words(x)._asdict() for x in s.advice],
        "top": [
            {"layer": named(l), "type": l.layer_type, "ms": l.step_ms, "share": share(l.step_ms)} for l in s.top_layers
        ],
        "top_heading": "%s, ms per step" % top_heading(s),
        "graphs": [
            {
                "name": g.name,
                "purpose": purposes.get(g.name, ""),
                "fwd": g.forward_per_step,
                "bwd": g.backward_per_step,
                "ms": g.forward_ms + g.backward_ms,
                "share": share(g.forward_ms + g.backward_ms),
            }
            for g in s.graphs
        ],
        "notes": [note(n) for n in s.notes],
        "own": [
            {"where": x.where, "function": x.function, "text": x.text, "samples": x.samples}
            if s.own_samples < MIN_SHARE_SAMPLES
            # too few samples for a share: the counts only
            else {
                "where": x.where,
                "function": x.function,
                "text": x.text,
                "ms": x.ms,
                "share": x.share,
                "samples": x.samples,
                "interval": "%.0f%% to %.0f%%" % (100 * x.share_low, 100 * x.share_high),
            }
            for x in s.own_lines
        ],
        "own_samples": s.own_samples,
        "own_note": own_lines_note(s.own_samples, s.own_clock),
    }


def _windows(w: WindowsAnalysis) -> Dict[str, Any]:
    """A long training's windows: each window's step by part, against its steps and the wall clock; what the
    view found; the layers that moved most."""
    return {
        "windows": [
            {
                "window": x.window,
                "span": x.span,
                "started_s": x.started_s,
                "ended_s": x.ended_s,
                "ms": x.step_ms,
                "parts": [[p, ms] for p, ms in x.parts],
                "complete": x.complete,
                "folder": x.folder,
            }
            for x in w.windows
        ],
        "finding": finding(w.slowdown) if w.slowdown is not None else None,
        "moved": [[name, a, b] for name, a, b in w.moved],
    }


def _ranks(r: RanksAnalysis) -> Dict[str, Any]:
    """A merged view's ranks: the analysis's lines (but the per-rank ones, which the chart and table show),
    each rank's parts (communication split into transfer and waiting), the steps, the advice."""
    named = r.straggler.rank if r.straggler is not None and r.straggler.named else None
    ranks = []
    for x in r.ranks:
        parts = {p: x.parts[p] for p in ("input", "forward", "backward", "update", "monitor", "other")}
        parts["transfer"] = max(0.0, x.parts["communication"] - x.wait_ms)
        parts["waiting"] = x.wait_ms
        ranks.append(
            {
                "rank": x.rank,
                "host": x.host,
                "step": x.step_ms,
                "busy": x.busy_ms,
                "parts": parts,
                "communication": x.parts["communication"],
                "ratio": r.busy_ratio(x),
                "straggler": x.rank == named,
            }
        )
    return {
        "lines": [line for line in ranks_lines(r) if not line.startswith(("Rank ", "Advice: "))],
        "ranks": ranks,
        "advice": [words(a)._asdict() for a in r.advice],
        "steps": [
            {"step": s.step, "slowest": s.slowest, "spread": s.busy_spread_ms, "last_in": s.last_in} for s in r.steps
        ],
    }


def report_data(profile: Profile, analysis: Analysis, trace: Optional[str]) -> Dict[str, Any]:
    def shown(value: object) -> str:
        return ", ".join(str(x) for x in value) if isinstance(value, list) else str(value)

    values = {k: said(v) for k, v in profile.header.items()}
    header = [[label, shown(values[key])] for key, label in HEADER_KEYS if values.get(key) not in (None, "", [])]
    purposes = {a.section.name: purpose(a.section.info) for a in analysis.sections if a.section.kind == GRAPH}
    found = profile.interference()
    busy = interference.sentence(profile)
    return {
        "header": header,
        "notes": texts(profile.notes),
        "complete": profile.complete,
        "failure": profile.failure,
        "interference": {
            "text": busy,
            "share": found.share if found is not None else None,
            "measured": bool(found is not None and found.measured),
        }
        if busy
        else None,
        "trace": trace,
        "sections": [_section(a, profile) for a in analysis.sections],
        "layer_columns": layer_columns(),
        "colours": PART_COLOURS,
        "lead": [_lead(i, a, purposes) for i, a in enumerate(analysis.sections) if a.step is not None],
        "windows": _windows(analysis.windows) if analysis.windows is not None else None,
        "ranks": _ranks(analysis.ranks) if analysis.ranks is not None else None,
    }


def _json_for_html(data: Dict[str, Any]) -> str:
    # Inside <script>, "</" could close the element; "<!--" could start a comment.
    return (
        json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )


def render(profile: Profile, analysis: Analysis) -> str:
    from ..render.trace import FILENAME as TRACE

    data = report_data(profile, analysis, TRACE if profile.timeline else None)
    return PAGE.replace("/*DATA*/", _json_for_html(data))


def files(profile: Profile, analysis: Analysis) -> Contents:
    return {FILENAME: render(profile, analysis)}


with open(os.path.join(os.path.dirname(__file__), "report.html.in"), encoding="utf-8") as _f:
    PAGE = _f.read()
