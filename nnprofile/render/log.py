"""The text log, line for line in NNC's Profile format."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .notes import text, texts
from ..result.notes import Note
from ..analysis import SPREAD_FLOOR_MS, Analysis, Coverage, SectionAnalysis, analyze
from .words import drift_words, purpose
from . import memory
from .step import summary_lines
from .sampling import listed, load_line, passes_line, sampling_line
from .ranks import summary_lines as ranks_lines
from ..result import Entry, Profile, Section, format_ms
from ..base.choices import GRAPH, OUTSIDE
from ..base.places import short
from . import answer, interference
from .windows import lines as window_lines, run_lines
from ..result.details import SectionInfo
from ..result.header import Header, ProgramHeader, ProjectHeader
from .base import Contents
from .safe import safe_text

NAME = "log"
FILENAME = "profile.log"
WHAT = "the text log"
WRITES = (FILENAME,)
ENTRY_LINE = re.compile(r"^(?P<label>.*) (?P<ms>-?\d+\.\d{6})\(ms\)$")


def title_lines(profile: Profile) -> List[str]:
    """What was profiled, where, and (a program's) what its step is."""
    h = profile.header
    lines = ["nnprofile %s (nnabla %s): %s" % (h.nnprofile, h.nnabla, h.project), "Context: %s" % h.context]
    if isinstance(h, ProgramHeader) and text(h.steps):
        lines.append("Steps: %s" % text(h.steps))
    return lines


def header_lines(profile: Profile) -> List[str]:
    """The title, the notes and the method: what ``log.render`` shows around the answer and the sections."""
    return title_lines(profile) + ["Note: %s" % note for note in texts(profile.notes)] + method_lines(profile)


def _one_window(schedule: Note) -> bool:
    """The default schedule, one window from the start, as the Timing line says it (an earlier file: its words)."""
    if schedule.kind == "schedule":
        return schedule.figures.get("wait") == 0 and schedule.figures.get("repeat") == 1
    words = text(schedule)
    return words.startswith("wait 0,") and words.endswith("repeat 1 (1 window)")


def method_lines(profile: Profile) -> List[str]:
    """How it was measured (the "About this run" block at the log's end): timing, schedule, clock, hooks."""
    h = profile.header
    how = {
        "isolated": "each function re-run on its own",
        "graph": "each function timed inside whole forward and backward passes",
        "record": "every call of the program's own run, between NNabla's hooks",
    }.get(h.mode, h.mode)
    lines = ["Timing: %s mode (%s); %s" % (h.mode, how, text(h.sampling))]
    program = h if isinstance(h, ProgramHeader) else None
    if program is not None and text(program.schedule) and not _one_window(program.schedule):
        lines.append("Schedule: %s" % text(program.schedule))
    if isinstance(h, ProjectHeader) and h.clock:
        overhead = h.timing_overhead_ns or 0.0
        lines.append(
            "Clock: %s, smallest step %s ns; timing one sample costs %s ns, taken off every figure; "
            "calls under %s are timed in batches"
            % (h.clock, _num(h.clock_resolution_ns), _num(overhead), _duration(overhead * 100))
        )
    if h.hook_overhead_ns is not None:
        lines += _hook_lines(h, program)
    if program is not None and program.own_cost:
        lines.append(own_cost_line(program.own_cost))
    dynamic = any(s.info.dynamic for s in profile.sections) or any(
        e.phase == "eager" for s in profile.sections for e in s.entries
    )
    if program is not None and program.call_overhead_ns is not None and dynamic:  # only where such calls ran
        lines.append(
            "Calls: timing a function called under auto_forward adds %s per call, %s of it inside "
            "its own time; taken off likewise"
            % (_duration(max(0.0, program.call_overhead_ns)), _duration(max(0.0, program.call_inside_ns or 0.0)))
        )
    return lines


def _hook_lines(h: Header, program: Optional[ProgramHeader]) -> List[str]:
    """What the hooks cost, as measured on a chain (and, in a result of an earlier nnprofile, on replicas of the
    program's functions), and as fitted to the program's own passes and steps."""
    lines: List[str] = []
    total = max(0.0, h.hook_overhead_ns or 0.0)
    inside = max(0.0, h.hook_inside_ns or 0.0)
    measured = program.hooks_in_program if program is not None else None
    replicas = int((measured or {}).get("signatures", 0))
    lines.append(
        "Hooks: NNabla's function hooks add %s per function to a pass, %s of it inside the function's "
        "own time; measured on a chain of 200 tiny functions%s and taken off every function%s"
        % (
            _duration(total),
            _duration(inside),
            " (and, for the program's own functions, on replicas of each: %d kinds by type, shapes and "
            "arguments, forward and backward)" % replicas
            if replicas
            else "",
            ", pass and step" if h.mode == "record" else "",
        )
    )
    if measured:
        lines += _fitted_lines(measured)
    return lines


def _fitted_lines(measured: Dict[str, Any]) -> List[str]:
    """The hooks' cost fitted to the program: the scale its passes' gaps set, what its steps without them show."""
    lines: List[str] = []
    if "forward_scale" in measured:
        text = (
            "Hooks in this program: the gaps between the functions of its passes hold %.2fx (forward) and "
            "%.2fx (backward) the hooks' cost measured there, so their code runs that much longer here "
            "(the program's work leaves its caches cold); every cost is scaled so, over its passes together "
            "(a graph whose passes alone set the scale then reads a coverage of 100%% by this fit)"
            % (float(measured["forward_scale"]), float(measured["backward_scale"]))
        )
        if "pairs" in measured:
            text += (
                "; %d of its steps ran without the hooks, each against the step with them after it (median "
                "%.3f ms against %.3f ms as timed, before anything is taken off as it is from the Step line's "
                "figures; the hooks' cost %.3f ms of it): the rest, %+.3f ms a step, and "
                "%+.3f ms more in a step after one with the hooks (the program's own code slowed by what "
                "the hooks leave in the caches; zero where the pairs' spread could make it), is taken off "
                "each step too"
                % (
                    measured["pairs"],
                    measured.get("plain_ms", 0),
                    measured.get("hooked_ms", 0),
                    measured.get("hooks_ms", 0),
                    measured.get("outside_ms", 0),
                    measured.get("carry_ms", 0),
                )
            )
        lines.append(text)
    elif "plain_steps" in measured:  # a result of version 6 or earlier
        lines.append(
            "Hooks in this program: %d of its steps ran without them (median %.3f ms) against %d "
            "with them (%.3f ms): beyond the chain's cost, they slow each function by %.1f%% of its "
            "own time (the Python they run evicts the caches), taken off too"
            % (
                measured.get("plain_steps", 0),
                measured.get("plain_ms", 0),
                measured.get("hooked_steps", 0),
                measured.get("hooked_ms", 0),
                100 * float(measured.get("eviction", 0)),
            )
        )
    return lines


OWN_COSTS = {  # each kind of nnprofile's own work, in the order said
    "calibration": "measuring the hooks' cost on a chain of tiny functions",
    "replicas": "on replicas of the program's functions",  # (an earlier nnprofile's result)
    "machine": "the machine's rates",
    "windows": "earlier windows' files",
}


def own_cost_line(cost: Dict[str, float]) -> str:
    """``Own work: nnprofile took 0.912 s outside the program's calls ...``: what the run cost beyond the
    program, by kind (the hooks' time inside the kept steps is the Hooks line's, and not in it)."""
    return (
        "Own work: nnprofile took %.3f s outside the program's calls before writing these files (%s); the hooks' "
        "time inside the kept steps is the Hooks line's, taken off every figure"
        % (
            sum(cost.values()),
            ", ".join(
                "%s %.3f s" % (OWN_COSTS.get(k, k), cost[k])
                for k in [k for k in OWN_COSTS if k in cost] + [k for k in cost if k not in OWN_COSTS]
            ),
        )
    )


def _num(x: Optional[float]) -> str:
    return "%g" % round(float(x or 0), 1)


def _duration(ns: float) -> str:
    return "%.3g ms" % (ns / 1e6) if ns >= 1e6 else "%.3g us" % (ns / 1e3)


def coverage_line(c: Coverage) -> str:
    """How much of a pass its layers add up to, and the engine's rest between them."""
    share = "%.1f%%" % (c.share * 100) if c.share is not None else "n/a"
    engine = (
        "; the graph engine between them %s ms: %.1f%% named" % (format_ms(c.engine_ms), 100 * c.named_share)
        if c.engine_ms and c.named_share is not None
        else ""
    )
    often = ", each as often as it ran in a pass," if c.per_pass else ""
    kept = (
        " (%s ms of it the timing's own cost left in %d layer%s at the timing's resolution, not counted)"
        % (format_ms(c.kept_cost_ms), c.kept_in, "" if c.kept_in == 1 else "s")
        if c.kept_cost_ms
        else ""
    )
    return "Coverage: the %s entries%s add up to %s ms%s, %s of %s (%s ms)%s" % (
        c.layer_phase,
        often,
        format_ms(c.layers_ms),
        kept,
        share,
        c.whole_phase,
        format_ms(c.whole_ms),
        engine,
    )


def section_footer(profile: Profile, a: SectionAnalysis) -> List[str]:
    """After a section: coverage, entries short of the target, drift, FLOP gaps, the step."""
    lines = [coverage_line(c) for c in a.coverage]
    lines += inside_lines(a.section)
    passes = passes_line(a.section)
    if passes:
        lines.append(passes)
    p = a.precision
    if p is not None and a.section.sampling:
        lines.append(sampling_line(p))
    load = load_line(a.section)
    if load:
        lines.append("Input: %s" % load)
    target = profile.header.target_rse
    thin = {id(e) for e in p.thin} if p is not None else set()
    missed = [e for e in a.missed_target if id(e) not in thin]
    if missed and target:
        lines.append(
            "Missed the %g%% target (time budget spent): %s. Their figures are less sure than the "
            "rest (the relative error in brackets); for tighter ones give the section more time "
            "(--max-seconds 5) or profile in fresh processes (--repeat 3)"
            % (
                target * 100,
                listed(missed, lambda e: "%s (%.1f%%)" % (e.label, e.stats.rse * 100), len(a.section.entries)),
            )
        )
    if p is not None and p.thin:
        lines.append(
            "Too few samples for a relative error (one sample, or all in one round): %s"
            % listed(p.thin, lambda e: e.label, len(a.section.entries), worst_first=False)
        )
    if drift_words(a.drift):
        lines.append("Drift: %s." % drift_words(a.drift))
    if a.run_spread is not None:
        r = a.run_spread
        lines.append(
            "Repeat: %d fresh processes; run-to-run coefficient of variation of the entry means "
            "over %g ms: %.3f (median), %.3f at worst (%s)"
            % (r.runs, SPREAD_FLOOR_MS, r.median_cv, r.worst_cv, r.worst)
        )
    if a.incomplete:
        lines.append(incomplete_line(a))
    if a.unknown_flops:
        lines.append("FLOPs not counted (no formula for): %s" % ", ".join(a.unknown_flops))
    if a.step is not None:
        lines.extend(summary_lines(a.step))
    lines.extend(memory.lines(a))
    return lines


MAX_INSIDE = 12  # entries whose calls inside are listed in the log (the report and result.json hold all)


def inside_lines(section: Section) -> List[str]:
    """``Inside: <entry> ran <child> <calls> call(s) of <ms> ms, ...``: what ran inside each call that ran others."""
    lines = []
    for e in [e for e in section.entries if e.children][:MAX_INSIDE]:
        lines.append(
            "Inside: %s ran %s (their time is inside its own)"
            % (
                e.label,
                "; ".join(
                    "%s %g call%s of %s ms"
                    % (c.label, c.calls, "" if c.calls == 1 else "s", format_ms(float(c.mean_ms)))
                    for c in e.children
                ),
            )
        )
    return lines


def incomplete_line(a: SectionAnalysis) -> str:
    return "Incomplete entries (measuring stopped before their sampling rule held): %s" % ", ".join(
        e.label for e in a.incomplete
    )


def section_line(section: Section) -> str:
    """A section's header, as NNC prints ``Profiling optimizer ...``; a program's graph says whether a
    solver trains it and how often it runs per step."""
    info = section.info
    if section.kind == OUTSIDE:
        return "Profiling %s (%s: in no step) ..." % (section.title, info.outside or "outside")
    if section.kind != GRAPH or not info:
        return "Profiling %s ..." % section.title
    what = purpose(info)
    if info.outside:  # a graph that ran only outside the kept steps: its passes there, in no step
        passes = dict(info.passes or {})
        ran = " and ".join("%d %s pass%s" % (n, phase, "" if n == 1 else "es") for phase, n in passes.items() if n)
        scale = dict(info.hook_scale or {})
        own = (
            (
                "; the hooks' cost scaled to these passes: %s"
                % ", ".join("%.2fx %s" % (float(x), phase) for phase, x in scale.items())
            )
            if scale
            else ""
        )
        return "Profiling %s (%s; %s %s, in no step%s%s) ..." % (
            section.title,
            what,
            ran or "no pass",
            info.outside,
            _dynamic(info),
            own,
        )

    def rate(phase: str) -> object:  # passes per step over the steps every part counts (as the breakdown)
        whole = section.entries_of("%s_all" % phase)
        return (
            whole[0].calls_per_round()
            if whole
            else (info.forward_per_step if phase == "forward" else info.backward_per_step)
        )

    runs = [_per_step(rate("forward"), "forward"), _per_step(rate("backward"), "backward")]
    return "Profiling %s (%s; %s per step%s) ..." % (
        section.title,
        what,
        " and ".join(r for r in runs if r),
        _dynamic(info),
    )


def _dynamic(info: SectionInfo) -> str:
    """A graph made under auto_forward says so, and where the program built it."""
    if not info.dynamic:
        return ""
    built = list(info.built_at or [])
    return "; auto_forward, built at %s" % short(built[-1]) if built else "; auto_forward"


def _per_step(n: object, what: str) -> str:
    if not n:
        return ""
    value = float(n)  # type: ignore[arg-type]
    figure = "%d" % value if value == int(value) else "%.2f" % value
    return "%s %s pass%s" % (figure, what, "" if value == 1 else "es")


def entry_line(entry: Entry) -> str:
    return "%s %s(ms)" % (entry.label, format_ms(entry.mean_ms))


def footer_lines(profile: Profile) -> List[str]:
    """What other work on the machine took (known once measuring ends), then how the profile ended."""
    busy = interference.sentence(profile)
    lines = ["Interference: %s" % busy] if busy is not None else []
    if profile.complete:
        return lines + ["Profile Completed."]
    return lines + ["Profile incomplete: %s." % (profile.failure or "stopped")]


def render(profile: Profile, analysis: Optional[Analysis] = None, view: answer.View = answer.DEFAULT) -> str:
    """The log: the answer first (each step, its top layers and layer types: ``view``), the notes, every section
    as NNC's Profile command logs it, then how it was measured ("About this run")."""
    analysis = analysis or analyze(profile)
    lines = title_lines(profile)
    if analysis.windows is not None:  # a long run leads with the run, then the window its figures are
        lines.extend(run_lines(analysis.windows, getattr(profile.header, "window", 0)))
    lines.extend(answer.lines(analysis, view))
    lines.extend("Note: %s" % note for note in texts(profile.notes))
    if analysis.windows is not None:
        lines.extend(window_lines(analysis.windows))
    if analysis.ranks is not None:
        lines.extend(ranks_lines(analysis.ranks))
    for section in profile.sections:
        lines.append(section_line(section))
        lines.extend(entry_line(e) for e in section.entries)
        a = analysis.of(section)
        if section.complete:
            lines.extend(section_footer(profile, a))
        elif a.incomplete:
            lines.append(incomplete_line(a))
    lines.append("About this run:")
    lines.extend(method_lines(profile))
    lines.extend(footer_lines(profile))
    # Names are data: a name holding a line break or an escape sequence stays inside its own line. A line of
    # nnprofile's own words is at most WIDTH characters (NNC's entry lines stay whole).
    return "\n".join(part for line in lines for part in wrap(safe_text(line))) + "\n"


WIDTH = 200
CONTINUED = "  "  # a wrapped line's continuation starts so: it reads as part of the line above


def wrap(line: str, width: int = WIDTH) -> List[str]:
    """A line of at most ``width`` characters, or its items on lines that are: cut between a step's parts (" + "),
    then at "; ", ", ", then a space that is no part of a figure (never between a name, its figure, its unit and
    its share: "other 0.000 ms (0.0%)" stays whole), the separator kept at the end of the line it ends; an entry line
    (``label  0.123456(ms)``) stays whole."""
    if len(line) <= width or ENTRY_LINE.match(line):
        return [line]
    out: List[str] = []
    rest = line
    while len(rest) > width:
        cut = _cut_at(rest, width)
        out.append(rest[:cut].rstrip())
        rest = CONTINUED + rest[cut:].lstrip()
    out.append(rest)
    return out


def _cut_at(rest: str, width: int) -> int:
    """Where a line too long is cut: the last separator within ``width`` beyond a third of it, the best first."""
    for separator in (" + ", "; ", ", "):
        cut = rest.rfind(separator, 0, width - len(separator) + 1)
        if cut > width // 3:
            return cut + len(separator)
    for cut in range(min(width, len(rest) - 1), width // 3, -1):
        if rest[cut] == " " and _between_figures(rest, cut):
            return cut + 1
    return width


def _between_figures(text: str, at: int) -> bool:
    """Whether the space at ``at`` parts two items, not a name from its figure or a figure from its unit or share."""
    before, after = text[at - 1 : at], text[at + 1 : at + 2]
    if before.isdigit() or after.isdigit() or after == "(" or before == "%":
        return False
    nxt = text[at + 1 :].split(" ", 1)[0]
    return not (nxt in ("ms", "us", "s", "MB", "GB", "KiB", "MiB", "GiB") or nxt.startswith(("ms", "(")))


def files(profile: Profile, analysis: Analysis) -> Contents:
    return {FILENAME: render(profile, analysis)}
