"""profile.csv (NNC's layout), profile_detail.csv (every statistic) and summary.csv (the step).

Text taken from projects (layer names, sections) is neutralised against
formula injection (``nnprofile.render.safe``).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from ..analysis import Analysis, analyze
from . import memory
from .step import summary_rows as advice_rows
from ..analysis.ranks import RANK_COLUMNS, STEP_COLUMNS, rank_rows, step_rows
from .ranks import advice_rows as rank_advice_rows
from .windows import columns as window_columns, rows as window_rows
from ..result import Profile, format_ms
from ..result.columns import FLAG, IN_DETAIL, Column, Row, columns, is_unknown
from .base import Contents
from .safe import csv_document, csv_text

NAME = "csv"

PROFILE = "profile.csv"
DETAIL = "profile_detail.csv"


def profile_rows(profile: Profile) -> List[List[str]]:
    """NNC's table: first cell 'time in ms', a column per section, a row per label.

    Rows are keyed by label within a section (labels are unique there); across
    sections, a label shared by two sections (load_dataset, a layer present in
    both networks) shares a row, as NNC merges them.
    """
    header = ["time in ms"] + [csv_text(s.title + ("" if s.complete else " (incomplete)")) for s in profile.sections]
    order: List[str] = []
    cells = {}
    for col, section in enumerate(profile.sections):
        for entry in section.entries:
            if entry.label not in cells:
                order.append(entry.label)
                cells[entry.label] = [""] * len(profile.sections)
            cells[entry.label][col] = format_ms(entry.mean_ms)
    return [header] + [[csv_text(label)] + cells[label] for label in order]


def cell(column: Column, row: Row) -> object:
    """A column's cell in a CSV file: its text (``Column.text``), a project's or program's text neutralised, a flag
    as 0 or 1, empty where not known (``unknown`` where no formula gives a layer's figure)."""
    value = column.get(row)
    if value is None:
        return "unknown" if is_unknown(column, row, value) else ""
    if column.kind == FLAG:
        return int(value)
    if column.from_user:
        return csv_text(value)
    return column.text % value if column.text else value


def detail_rows(profile: Profile, analysis: Optional[Analysis] = None) -> List[List[object]]:
    analysis = analysis or analyze(profile)
    chosen = columns(IN_DETAIL)
    rows: List[List[object]] = [list(IN_DETAIL)]
    for section in profile.sections:
        coverage = analysis.of(section).coverage_by_whole_phase
        rows += [[cell(c, Row(section, e, coverage)) for c in chosen] for e in section.entries]
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
        rows.extend([csv_text(cell) for cell in row] for row in memory.rows(a))
    return rows


RANKS = "ranks.csv"
RANK_STEPS = "rank_steps.csv"
WINDOWS = "windows.csv"
WHAT = "the CSV files"
WRITES = (PROFILE, DETAIL, SUMMARY, RANKS, RANK_STEPS, WINDOWS)  # (the last three: a merged view's, a long run's)


def _cell(x: object) -> object:
    if x is None:
        return ""
    if isinstance(x, bool):
        return int(x)
    return csv_text(x) if isinstance(x, str) else x


def files(profile: Profile, analysis: Analysis) -> Contents:
    out: Contents = {
        PROFILE: _csv(profile_rows(profile)),
        DETAIL: _csv(detail_rows(profile, analysis)),
        SUMMARY: _csv(summary_rows(profile, analysis)),
    }
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
