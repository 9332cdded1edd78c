"""A profile, or a comparison, as an HTML fragment for Jupyter (``_repr_html_``).

What a notebook shows below a cell, in report.html's order: each step's
breakdown as a bar (a program's across its graphs, with what each is for), the
advice, the top layers; then the notes, the header, the other sections, and a
link to the full report when one was written. Notebooks may be untrusted, so the fragment holds no script and no
style element (inline styles only, which a notebook's sanitizer keeps), and
every name from a project or a program is escaped.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from .notes import said, texts
from ..analysis import Analysis, SectionAnalysis, analyze
from .words import named, own_lines_note, plural, purpose
from ..analysis.breakdown import Advice, Part, Summary
from .advice import words
from .step import note as step_note, top_heading
from ..base.choices import GRAPH
from ..compare import Comparison
from ..result import views
from . import interference
from .colours import part_colour
from .log import section_line

if TYPE_CHECKING:
    from ..result import Profile, Section

BOX = "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px; line-height: 1.4; color: #1d2330"
CELL = "padding: 2px 10px 2px 0; text-align: left; vertical-align: top"
NUMBER = "padding: 2px 10px 2px 0; text-align: right; font-variant-numeric: tabular-nums"
MUTED = "color: #5a6478"
HEADER_KEYS = (
    ("project", "project"),
    ("context", "context"),
    ("steps", "steps"),
    ("sampling", "sampling"),
    ("batch_size", "batch size"),
    ("world_size", "world size"),
    ("date", "date"),
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _link(location: Optional[str], name: str) -> str:
    if not location:
        return ""
    path = os.path.join(location, name)
    if not os.path.isfile(path):
        return ""
    try:
        href = os.path.relpath(path)
    except ValueError:  # another drive
        href = path
    return '<p>Full report: <a href="%s" target="_blank">%s</a></p>' % (_e(href.replace(os.sep, "/")), _e(path))


def _bar(parts: Sequence[Part], total: float) -> str:
    if total <= 0:
        return ""
    cells = []
    for name, ms in parts:
        if ms <= 0:
            continue
        share = ms / total
        cells.append(
            '<div title="%s: %.3f ms (%.1f%%)" style="width: %.3f%%; background: %s; height: 18px; '
            "overflow: hidden; white-space: nowrap; color: #fff; font-size: 11px; padding-left: 2px; "
            'box-sizing: border-box">%s</div>'
            % (
                _e(name),
                ms,
                100 * share,
                100 * share,
                part_colour(name),
                _e(name) if share > 0.12 else "",
            )
        )
    legend = " + ".join("%s %.3f ms (%.1f%%)" % (_e(n), ms, 100 * ms / total) for n, ms in parts)
    return (
        '<div style="display: flex; width: 100%%; max-width: 900px; margin: 4px 0">%s</div>'
        '<div style="%s; font-size: 12px">step %.3f ms = %s</div>' % ("".join(cells), MUTED, total, legend)
    )


NOISY = 0.10  # a step whose relative standard error is above this is too noisy to compare with another


def certainty(section: Section) -> str:
    """How sure the step's figure is: its relative standard error over the steps, and what to do when it is too
    noisy to compare runs by (a notebook cell's few steps on a busy machine)."""
    steps = section.entries_of("step")
    whole = steps or [e for e in section.entries if e.phase in ("forward_all", "backward_all")]
    known = [e for e in whole if e.stats.rse_known]
    if not known:
        return "too few steps for an uncertainty: record more steps (--active 20 or more)"
    e = max(known, key=lambda x: x.stats.rse)
    line = "%s: %.3f ms, relative standard error %.1f%% over %d %s" % (
        "step" if steps else e.label,
        e.stats.mean / 1e6,
        100 * e.stats.rse,
        e.stats.n,
        "steps" if steps else "samples",
    )
    if e.stats.rse > NOISY:
        line += (
            "; too noisy to compare with another run: record more steps (%%%%nnprofile --active 50) or "
            "profile in fresh processes (nnprofile ... --repeat 3)"
        ).replace("%%%%", "%%")
    return line


def _graphs_table(step: Summary, purposes: Dict[str, str]) -> str:
    """A program's graphs in its step: what each is for, its passes per step, its time and share."""
    total = step.step_ms
    body = "".join(
        '<tr><td style="%s">%s</td><td style="%s">%s</td><td style="%s">%.2f</td><td style="%s">%.2f</td>'
        '<td style="%s">%.3f ms</td><td style="%s">%.1f%%</td></tr>'
        % (
            CELL,
            _e(g.name),
            CELL,
            _e(purposes.get(g.name, "")),
            NUMBER,
            g.forward_per_step,
            NUMBER,
            g.backward_per_step,
            NUMBER,
            g.forward_ms + g.backward_ms,
            NUMBER,
            100 * (g.forward_ms + g.backward_ms) / total if total > 0 else 0,
        )
        for g in step.graphs
    )
    return (
        '<table style="border-collapse: collapse; margin: 4px 0"><tr><th style="%s">graph</th><th style="%s">'
        'what it is for</th><th style="%s">forward passes per step</th><th style="%s">backward passes per '
        'step</th><th style="%s">per step</th><th style="%s">of the step</th></tr>%s</table>'
        % (CELL, CELL, NUMBER, NUMBER, NUMBER, NUMBER, body)
    )


def _own_lines_table(step: Summary) -> str:
    """The program's own lines that ``other`` holds, the most sampled first, each with its interval."""
    body = "".join(
        '<tr><td style="%s">%s</td><td style="%s">%s</td><td style="%s"><code>%s</code></td>'
        '<td style="%s">%.3f ms</td><td style="%s">%.1f%% (%d %s, %.0f%% to %.0f%%)</td></tr>'
        % (
            CELL,
            _e(x.where),
            CELL,
            _e(x.function),
            CELL,
            _e(x.text[:80]),
            NUMBER,
            x.ms,
            NUMBER,
            100 * x.share,
            x.samples,
            plural(x.samples, "sample"),
            100 * x.share_low,
            100 * x.share_high,
        )
        for x in step.own_lines[:5]
    )
    return (
        '<table style="border-collapse: collapse; margin: 4px 0"><tr><th style="%s">other: the program\'s '
        'own line</th><th style="%s">function</th><th style="%s">code</th><th style="%s">per step</th>'
        '<th style="%s">of other</th></tr>%s</table><p style="%s; margin: 2px 0">%s</p>'
        % (CELL, CELL, CELL, NUMBER, NUMBER, body, MUTED, _e(own_lines_note(step.own_samples, step.own_clock)))
    )


def _lead(a: SectionAnalysis, step: Summary, purposes: Dict[str, str]) -> List[str]:
    """Where a section's step goes: its bar, for a program its graphs, the advice, the top layers."""
    out = [
        '<div style="margin-top: 8px; font-weight: 600">Where the step goes: %s%s</div>'
        % (_e(a.section.title), "" if a.section.complete else " (incomplete)"),
        _bar(step.parts, step.step_ms),
    ]
    sure = certainty(a.section)
    if sure:
        out.append('<p style="%s; margin: 2px 0">%s</p>' % (MUTED, _e(sure)))
    total = step.step_ms
    if step.graphs:
        out.append(_graphs_table(step, purposes))
    if step.own_lines:
        out.append(_own_lines_table(step))
    out += [_advice(x) for x in step.advice]
    top = step.top_layers
    if top:
        body = "".join(
            '<tr><td style="%s">%s</td><td style="%s">%s</td><td style="%s">%.3f ms</td>'
            '<td style="%s">%.1f%%</td></tr>'
            % (
                CELL,
                _e(named(l)),
                CELL,
                _e(l.layer_type),
                NUMBER,
                l.step_ms,
                NUMBER,
                100 * l.step_ms / total if total > 0 else 0,
            )
            for l in top
        )
        out.append(
            '<table style="border-collapse: collapse; margin: 4px 0"><tr><th style="%s">top layer</th>'
            '<th style="%s">type</th><th style="%s">%s</th><th style="%s">of the step'
            "</th></tr>%s</table>" % (CELL, CELL, NUMBER, _e(top_heading(step)), NUMBER, body)
        )
    out += ['<p style="%s; margin: 2px 0">Note: %s</p>' % (MUTED, _e(step_note(n))) for n in step.notes]
    return out


def _other_section(a: SectionAnalysis) -> str:
    """A section without a step: a program's graph in a line (its layers are in the step's top layers), else the
    section's title and its five slowest entries."""
    parts: List[str] = []
    s = a.section
    if s.kind == GRAPH:  # a program's graph: its passes (its layers are in the step's top layers)
        passes = ", ".join(
            "%s %.3f ms" % (e.label, e.mean_ms) for e in s.entries if e.phase in ("forward_all", "backward_all")
        )
        parts.append(
            '<div style="%s">%s; %d layers%s</div>'
            % (
                MUTED,
                _e(section_line(s)[len("Profiling ") : -4]),
                len(a.layers),
                "; " + _e(passes) if passes else "",
            )
        )
    else:
        parts.append(
            '<div style="margin-top: 10px; font-weight: 600">%s%s</div>'
            % (_e(s.title), "" if s.complete else " (incomplete)")
        )
        slowest = sorted(s.entries, key=lambda e: -e.mean_ms)[:5]
        parts.append(
            '<table style="border-collapse: collapse; margin: 4px 0">%s</table>'
            % "".join(
                '<tr><td style="%s">%s</td><td style="%s">%.6f ms</td></tr>' % (CELL, _e(e.label), NUMBER, e.mean_ms)
                for e in slowest
            )
        )
    return "".join(parts)


def profile_html(profile: "Profile", analysis: Optional[Analysis] = None) -> str:
    """The step first (as report.html opens), then the notes, the run's header, the other sections."""
    analysis = analysis or analyze(profile)
    h = profile.header
    out: List[str] = ['<div class="nnprofile" style="%s">' % BOX]
    status = (
        '<span style="background: #e9f6ee; color: #1d5c36; padding: 1px 8px; border-radius: 4px">complete</span>'
        if profile.complete
        else '<span style="background: #f8696b; color: #fff; padding: 1px 8px; border-radius: 4px">INCOMPLETE: %s'
        "</span>" % _e(profile.failure or "stopped")
    )
    out.append(
        '<div style="font-size: 15px; font-weight: 600; margin: 2px 0 6px">nnprofile %s %s</div>'
        % (_e(h.nnprofile), status)
    )
    purposes = {a.section.name: purpose(a.section.info) for a in analysis.sections if a.section.kind == GRAPH}
    for a in analysis.sections:
        if a.step is not None:
            out += _lead(a, a.step, purposes)
    busy = interference.sentence(profile)
    if busy:
        out.append('<p style="%s; margin: 2px 0">Interference: %s</p>' % (MUTED, _e(busy)))
    for note in texts(profile.notes):
        out.append('<p style="%s; margin: 2px 0">Note: %s</p>' % (MUTED, _e(note)))
    values = {k: said(v) for k, v in h.items()}
    rows = [
        '<tr><td style="%s; %s">%s</td><td style="%s">%s</td></tr>' % (CELL, MUTED, _e(label), CELL, _e(values[key]))
        for key, label in HEADER_KEYS
        if values.get(key) not in (None, "", [])
    ]
    out.append('<table style="border-collapse: collapse; margin-top: 6px">%s</table>' % "".join(rows))
    if analysis.ranks is not None:
        from .ranks import summary_lines

        lines = [line for line in summary_lines(analysis.ranks) if not line.startswith(("Rank ", "Advice: "))]
        out.append("<div><b>Ranks</b></div>" + "".join('<p style="margin: 2px 0">%s</p>' % _e(x) for x in lines))
        out += [_advice(a) for a in analysis.ranks.advice]
    out += [_other_section(a) for a in analysis.sections if a.step is None]
    out.append(_link(profile.location, "report.html"))
    out.append("</div>")
    return "".join(out)


def _advice(advice: Advice) -> str:
    a = words(advice)
    return (
        '<div style="border-left: 4px solid #f0ad4e; background: #fff8ec; padding: 4px 8px; margin: 4px 0">'
        '%s<div style="%s; font-size: 12px">Evidence: %s</div></div>' % (_e(a.text), MUTED, _e(a.evidence))
    )


def comparison_html(c: Comparison) -> str:
    out: List[str] = ['<div class="nnprofile-compare" style="%s">' % BOX]
    out += [
        '<div style="%s">%s</div>' % ("font-weight: 600" if i == 0 else MUTED, _e(line))
        for i, line in enumerate(c.header)
    ]
    head = "".join(
        '<th style="%s">%s</th>' % (NUMBER if i > 1 else CELL, _e(t))
        for i, t in enumerate(("metric", "configuration", "runs", "mean", "median", "ratio", "95% interval"))
    )
    body = []
    for r in c.rows:
        interval = "%.3f to %.3f" % (r.ci_low, r.ci_high) if r.ci_low is not None and r.ci_high is not None else ""
        body.append(
            '<tr><td style="%s">%s (%s)</td><td style="%s">%s</td><td style="%s">%d</td>'
            '<td style="%s">%.4g</td><td style="%s">%.4g</td><td style="%s">%s</td><td style="%s">%s</td>'
            "</tr>"
            % (
                CELL,
                _e(r.metric),
                _e(r.unit),
                CELL,
                _e(r.config),
                NUMBER,
                r.stats.n,
                NUMBER,
                r.stats.mean,
                NUMBER,
                r.stats.median,
                NUMBER,
                "%.3f" % r.ratio if r.ratio is not None else "",
                NUMBER,
                interval,
            )
        )
    if body:
        out.append(
            '<table style="border-collapse: collapse; margin: 6px 0"><tr>%s</tr>%s</table>' % (head, "".join(body))
        )
    out += ['<p style="margin: 2px 0">%s</p>' % _e(f) for f in c.findings]
    location = getattr(c, "location", None)
    out.append(_link(location, "compare.html") or _link(location, "compare.log"))
    out.append("</div>")
    return "".join(out)


views.register("profile_html", profile_html)
views.register("comparison_html", comparison_html)
