"""A step in words: the log's footer of a section with a step (its parts, half precision, the top layers, the
program's own lines, the notes and the advice) and the rows summary.csv and the Summary sheet give it, from the
analysis (``nnprofile.analysis.breakdown``)."""

from __future__ import annotations

from typing import List, Optional

from ..analysis import facts
from ..analysis.breakdown import MIN_SHARE_SAMPLES, Summary
from .words import OTHER, counted, named, pct, sampled
from .advice import words


def note(n: facts.StepNote) -> str:
    """A note on how a step's figures were reckoned."""
    if isinstance(n, facts.InputHeldUp):
        return (
            "other work took %s of the program's thread, and the input's reads wait for the data iterators' threads, "
            "which it held up too (not measured): the input's %.3f ms a step may read higher than the program runs "
            "alone, and no advice is built on it" % (pct(n.busy), n.input_ms)
        )
    if isinstance(n, facts.PartsOverStep):
        return "the parts come to %.3f ms, more than the step's %.3f ms: the program's own time reads 0" % (
            n.parts_ms,
            n.step_ms,
        )
    return (
        "%s (%s) reads %.1f %s, above what this machine reaches (%.1f %s measured): its time (%.6f ms) is too short "
        "to rate, and it is no reference for other layers"
        % (named(n.layer), n.layer.layer_type, n.rate, n.unit, n.reach, n.unit, n.total_ms)
    )


def chart_note(shown: Optional[facts.ChartShown]) -> str:
    """What a chart of layers shows, where it is not every layer ("" where it is)."""
    if shown is None:
        return ""
    if not shown.slowest:
        return "unrolled copies summed into their base layer"
    return "the %d slowest of %d %slayers" % (shown.slowest, shown.of, "base " if shown.summed else "")


def summary_lines(s: Summary) -> List[str]:
    """The log footer of a training section."""
    step = s.step_ms
    lines = [
        "Step: %.3f ms = %s"
        % (step, " + ".join("%s %.3f ms (%s)" % (p, ms, pct(ms / step if step > 0 else 0)) for p, ms in s.parts))
    ]
    if s.functions:
        lines.append("Half precision: %d of %d functions" % (s.half_functions, s.functions))
    if s.layers:
        lines.append(
            "Top layers (%s): %s"
            % (
                top_heading(s),
                ", ".join(
                    "%s %.3f ms (%s)" % (named(l), l.step_ms, pct(l.step_ms / step if step > 0 else 0))
                    for l in s.top_layers
                ),
            )
        )
    if s.own_lines:
        lines.append(other_line(s))
    lines += ["Note: %s" % note(n) for n in s.notes]
    for a in map(words, s.advice):
        lines.append("Advice: %s Evidence: %s." % (a.text, a.evidence))
    if not s.advice:
        lines.append("Advice: none of nnprofile's rules fired for this step.")
    return lines


def trains(s: Summary) -> bool:
    """Whether the step trains (a backward or an update among its parts): else it is a step of inference, and its
    layers' time is their forward alone."""
    return any(p.startswith(("backward", "update")) for p, _ in s.parts)


def top_heading(s: Summary) -> str:
    """What a step's top layers' figure is: forward and backward a step, or (a step that trains nothing) its
    forward alone."""
    return "forward + backward" if trains(s) else "forward"


def summary_rows(s: Summary) -> List[List[object]]:
    """Rows of summary.csv and the Summary sheet: section, item, name, ms, percent, detail."""
    step = s.step_ms
    training = trains(s)  # else a step of inference
    rows: List[List[object]] = [[s.section, "step", "training step" if training else "step", round(step, 6), 100.0, ""]]
    for p, ms in s.parts:
        rows.append([s.section, "part", p, ms, round(100 * ms / step, 2) if step > 0 else 0.0, ""])
    if s.functions:
        rows.append(
            [
                s.section,
                "half_precision",
                "functions in half precision",
                s.half_functions,
                round(100.0 * s.half_functions / s.functions, 2),
                "%d of %d" % (s.half_functions, s.functions),
            ]
        )
    for l in s.top_layers:
        rows.append(
            [
                s.section,
                "top_layer",
                l.layer,
                round(l.step_ms, 6),
                round(100 * l.step_ms / step, 2) if step > 0 else 0.0,
                "forward %.6f ms%s%s"
                % (
                    l.forward_ms,
                    ", backward %.6f ms" % l.backward_ms if training else "",
                    ", %d unrolled copies summed" % l.copies if l.copies > 1 else "",
                ),
            ]
        )
    for o in s.own_lines:  # what other holds, by the program's own line (its share of other's samples)
        rows.append(
            [
                s.section,
                "other_line",
                "%s in %s" % (o.where, o.function),
                round(o.ms, 6),
                round(100 * o.ms / step, 2) if step > 0 else 0.0,
                "%s (%s%s)"
                % (
                    o.text,
                    counted(o.samples, "sample"),
                    ", %s to %s of other" % (pct(o.share_low), pct(o.share_high))
                    if s.own_samples >= MIN_SHARE_SAMPLES
                    else "",
                ),
            ]
        )
    for a in map(words, s.advice):
        rows.append([s.section, "advice", a.rule, "", "", "%s Evidence: %s." % (a.text, a.evidence)])
    return rows


def other_line(s: Summary) -> str:
    """``Other: 0.365 ms a step is the program's own Python ...: train.py:46 in main (12 samples, 52.0% [..])``."""
    other = dict(s.parts).get("other", 0.0)
    few = s.own_samples < MIN_SHARE_SAMPLES
    if other <= 0:  # the parts came to the whole step: no time is left for a line to be named by
        return (
            "Other: 0.000 ms a step: the step's parts come to the whole of it, so no line of %s is named (%s at %s)"
            % (
                OTHER,
                sampled(s.own_samples, s.own_clock),
                ", ".join(l.where for l in s.own_lines),
            )
        )
    return "Other: %.3f ms a step is %s (%s%s): %s" % (
        other,
        OTHER,
        sampled(s.own_samples, s.own_clock),
        ", too few for a share" if few else "",
        "; ".join(
            "%s in %s%s (%s%s)"
            % (
                l.where,
                l.function,
                " `%s`" % l.text if l.text else "",
                "%d of %s" % (l.samples, counted(s.own_samples, "sample"))
                if few
                else "%s, %s [%s, %s]"
                % (counted(l.samples, "sample"), pct(l.share), pct(l.share_low), pct(l.share_high)),
                ", of it %.3f ms waiting" % l.waited_ms if l.waited_ms > 0 else "",
            )
            for l in s.own_lines[:5]
        ),
    )
