"""profile.csv (NNC's layout), profile_detail.csv (every statistic) and summary.csv (the step).

Text taken from projects (layer names, sections) is neutralised against
formula injection (``nnprofile.render.safe``).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from ..analysis import Analysis, analyze
from ..analysis.breakdown import summary_rows as advice_rows
from ..analysis.ranks import RANK_COLUMNS, STEP_COLUMNS, advice_rows as rank_advice_rows, rank_rows, step_rows
from ..analysis.windows import window_columns, window_rows
from ..result import Entry, Profile, format_ms, ms
from .base import Contents
from .safe import csv_document, csv_text

NAME = "csv"

PROFILE = "profile.csv"
DETAIL = "profile_detail.csv"
DETAIL_COLUMNS = ["section", "label", "phase", "layer", "layer_type", "class", "in_place",
                  "mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "runs", "rse",
                  "calls_per_sample", "overhead_ns", "output_shape", "params", "flops", "bytes_read",
                  "bytes_written", "gflops_per_s", "flop_per_byte", "coverage", "section_complete", "layer_id", "rounds",
                  "entry_complete", "run_cv", "output_bytes", "parameter_bytes", "gradient_bytes",
                  "input_gradient_bytes", "source", "rank_cv", "disturbed"]


def profile_rows(profile: Profile) -> List[List[str]]:
    """NNC's table: first cell 'time in ms', a column per section, a row per label.

    Rows are keyed by label within a section (labels are unique there); across
    sections, a label shared by two sections (load_dataset, a layer present in
    both networks) shares a row, as NNC merges them.
    """
    header = ["time in ms"] + [csv_text(s.title + ("" if s.complete else " (incomplete)"))
                               for s in profile.sections]
    order: List[str] = []
    cells = {}
    for col, section in enumerate(profile.sections):
        for entry in section.entries:
            if entry.label not in cells:
                order.append(entry.label)
                cells[entry.label] = [""] * len(profile.sections)
            cells[entry.label][col] = format_ms(entry.mean_ms)
    return [header] + [[csv_text(label)] + cells[label] for label in order]


def work_cells(e: Entry, rate: Callable[[float], object] = lambda x: "%.3f" % x) -> List[object]:
    """output_shape, params, flops, bytes_read, bytes_written, GFLOP/s, FLOP/byte of one entry.

    ``rate`` renders GFLOP/s and FLOP/byte: text with three decimals for the CSV,
    the number itself for the workbook. "unknown" where no FLOP formula exists.
    """
    if e.layer is None:
        return [""] * 7
    if not e.is_layer_work:
        return [csv_text(e.output_shape or ""), e.params if e.params is not None else ""] + [""] * 5
    unknown = "unknown"
    gflops, intensity = e.gflops_per_s, e.arithmetic_intensity
    return [csv_text(e.output_shape or ""), e.params if e.params is not None else "",
            e.flops if e.flops is not None else unknown,
            e.bytes_read if e.bytes_read is not None else "",
            e.bytes_written if e.bytes_written is not None else "",
            rate(gflops) if gflops is not None else unknown,
            rate(intensity) if intensity is not None else unknown]


def detail_rows(profile: Profile, analysis: Optional[Analysis] = None) -> List[List[object]]:
    analysis = analysis or analyze(profile)
    rows: List[List[object]] = [list(DETAIL_COLUMNS)]
    for section in profile.sections:
        coverage = analysis.of(section).coverage_by_whole_phase
        for e in section.entries:
            s = e.stats
            rows.append([csv_text(section.title), csv_text(e.label), e.phase, csv_text(e.layer or ""),
                         csv_text(e.layer_type or ""), csv_text(e.impl_class or ""), int(e.in_place),
                         format_ms(e.mean_ms), format_ms(ms(s.median)), format_ms(ms(s.std)),
                         format_ms(ms(s.min)), format_ms(ms(s.max)), format_ms(ms(s.p90)), s.n,
                         "%.4f" % s.rse if s.rse_known else "", e.calls_per_sample, "%.1f" % e.overhead_ns]
                        + work_cells(e)
                        + ["%.4f" % coverage[e.phase] if e.phase in coverage else "", int(section.complete),
                           "" if e.layer_id is None else e.layer_id, s.rounds, int(e.complete),
                           "" if e.run_cv is None else "%.4f" % e.run_cv]
                        + ["" if v is None else v for v in (e.output_bytes, e.parameter_bytes, e.gradient_bytes,
                                                            e.input_gradient_bytes)]
                        + [csv_text(e.source or ""), "" if e.rank_cv is None else "%.4f" % e.rank_cv,
                           len(e.disturbed)])
    return rows


def _csv(rows: Sequence[Sequence[object]]) -> str:
    return csv_document(rows)


SUMMARY = "summary.csv"
SUMMARY_COLUMNS = ["section", "item", "name", "ms", "percent", "detail", "bytes"]


def summary_rows(profile: Profile, analysis: Optional[Analysis] = None) -> List[List[object]]:
    """The step breakdown, top layers and advice of every complete training section."""
    analysis = analysis or analyze(profile)
    rows: List[List[object]] = [list(SUMMARY_COLUMNS)]
    if analysis.ranks is not None:
        rows.extend([csv_text(cell) for cell in row] + [""] for row in rank_advice_rows(analysis.ranks))
    for a in analysis.sections:
        if a.step is not None:
            rows.extend([csv_text(cell) for cell in row] + [""] for row in advice_rows(a.step))
        rows.extend([csv_text(cell) for cell in row] for row in a.memory_rows)
    return rows


RANKS = "ranks.csv"
RANK_STEPS = "rank_steps.csv"
WINDOWS = "windows.csv"


def _cell(x: object) -> object:
    if x is None:
        return ""
    if isinstance(x, bool):
        return int(x)
    return csv_text(x) if isinstance(x, str) else x


def files(profile: Profile, analysis: Analysis) -> Contents:
    out: Contents = {PROFILE: _csv(profile_rows(profile)), DETAIL: _csv(detail_rows(profile, analysis)),
           SUMMARY: _csv(summary_rows(profile, analysis))}
    if analysis.ranks is not None:  # a merged view: a row per rank, and per step and rank
        r = analysis.ranks
        out[RANKS] = _csv([RANK_COLUMNS] + [[_cell(x) for x in row] for row in rank_rows(r)])
        head: List[object] = [*STEP_COLUMNS, "rank", "busy_ms", "wait_ms"]
        steps: List[List[object]] = [head]
        for s, row in zip(r.steps, step_rows(r)):
            for rank, busy, wait in zip(r.ranks, s.busy_ms, s.wait_ms):
                steps.append([_cell(x) for x in row] + [rank.rank, round(busy, 6), round(wait, 6)])
        out[RANK_STEPS] = _csv(steps)
    if analysis.windows is not None:  # a long training's windows: a row each
        w = analysis.windows
        out[WINDOWS] = _csv([window_columns(w)] + [[_cell(x) for x in row] for row in window_rows(w)])
    return out
