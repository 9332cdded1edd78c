"""The outputs of ``nnprofile check``: a text table, a Markdown summary for a pull request, JUnit XML."""

from __future__ import annotations

from typing import List

from ..compare.gate import UNJUDGED, Check, Verdict
from .safe import markdown_text, safe_text, xml_attribute


def _cells(v: Verdict) -> List[str]:
    return [
        v.section,
        v.metric,
        "%.4f" % v.baseline.mean_ms,
        "%.4f" % v.new.mean_ms,
        "%.3f (%.3f to %.3f)" % (v.ratio, v.ci_low, v.ci_high),
        v.word + ("; " + v.note if v.note else ""),
    ]


HEAD = ["section", "metric", "baseline ms", "new ms", "ratio (95% CI)", "verdict"]


def summary_line(c: Check) -> str:
    if c.refusals:
        return "nnprofile check: CANNOT JUDGE: %s" % "; ".join(c.refusals)
    if c.exit_code == 0:
        layers = c.unresolved_layers
        return "nnprofile check: PASS: nothing got slower by more than %g%%%s%s" % (
            c.threshold * 100,
            " (structure changed)" if c.structure else "",
            "; %d layer%s could not be judged alone (see UNRESOLVED)" % (len(layers), "" if len(layers) == 1 else "s")
            if layers
            else "",
        )
    if c.exit_code == UNJUDGED:
        wanted = [v.repeats for v in c.unresolved if v.repeats]
        return "nnprofile check: UNRESOLVED: %d figure%s could not be judged%s" % (
            len(c.unresolved),
            "" if len(c.unresolved) == 1 else "s",
            " (about %d runs of each, interleaved, would resolve %s: --repeat %d)"
            % (max(wanted), "them" if len(c.unresolved) > 1 else "it", max(wanted))
            if wanted
            else "",
        )
    reasons = []
    if c.slower:
        reasons.append(
            "%d figure%s slower by more than %g%% (95%% CI above 1)"
            % (len(c.slower), "" if len(c.slower) == 1 else "s", c.threshold * 100)
        )
    if c.strict_order and c.structure:
        reasons.append("the structure changed (--strict-order)")
    return "nnprofile check: FAIL: %s" % "; ".join(reasons)


def text(c: Check) -> str:
    lines = [summary_line(c)]
    lines += ["Comparability: %s" % x for x in c.comparability]
    lines += ["Machine: %s" % x for x in c.machine]
    lines += ["Structure: %s" % x for x in c.structure]
    rows = [HEAD] + [_cells(v) for v in c.verdicts]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEAD))]
    for r in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return "\n".join(safe_text(line) for line in lines) + "\n"


def markdown(c: Check) -> str:
    md = markdown_text
    lines = ["## %s" % md(summary_line(c)), ""]
    for title, items in (("Comparability", c.comparability), ("Machine", c.machine), ("Structure", c.structure)):
        if items:
            lines += ["**%s**" % title, ""] + ["- %s" % md(x) for x in items] + [""]
    lines += ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(md(x) for x in _cells(v)) + " |" for v in c.verdicts]
    return "\n".join(lines) + "\n"


def junit(c: Check) -> str:
    cases = []
    for v in c.verdicts:
        name = xml_attribute("%s: %s" % (v.section, v.metric))
        body = ""
        if v.slower:
            body = "<failure message=%s/>" % xml_attribute(
                "ratio %.3f (95%% CI %.3f to %.3f) above %g" % (v.ratio, v.ci_low, v.ci_high, 1 + c.threshold)
            )
        cases.append('  <testcase classname="nnprofile.check" name=%s>%s</testcase>' % (name, body))
    structure_failed = c.strict_order and bool(c.structure)
    body = "<failure message=%s/>" % xml_attribute("; ".join(c.structure)) if structure_failed else ""
    cases.append('  <testcase classname="nnprofile.check" name="structure">%s</testcase>' % body)
    body = "<error message=%s/>" % xml_attribute("cannot judge: " + "; ".join(c.refusals)) if c.refusals else ""
    cases.append('  <testcase classname="nnprofile.check" name="judgeable">%s</testcase>' % body)
    failures = len(c.slower) + int(structure_failed)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="nnprofile check" tests="%d" '
        'failures="%d" errors="%d">\n%s\n</testsuite>\n'
        % (len(cases), failures, int(bool(c.refusals)), "\n".join(cases))
    )
