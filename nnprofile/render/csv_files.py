"""profile.csv (NNC's layout) and profile_detail.csv (every statistic)."""
from __future__ import annotations

import csv
import os
from typing import Callable, Dict, List

from ..advice import summarize_section, summary_rows as advice_rows
from ..result import Entry, Profile, Section, format_ms, ms

PROFILE = "profile.csv"
DETAIL = "profile_detail.csv"
DETAIL_COLUMNS = ["section", "label", "phase", "layer", "layer_type", "class", "in_place",
                  "mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "runs", "rse",
                  "calls_per_sample", "overhead_ns", "output_shape", "params", "flops", "bytes_read",
                  "bytes_written", "gflops_per_s", "flop_per_byte", "coverage", "section_complete"]


def profile_rows(profile: Profile) -> List[List[str]]:
    """NNC's table: first cell 'time in ms', a column per section, a row per label.

    Rows are keyed by label within a section (labels are unique there); across
    sections, a label shared by two sections (load_dataset, a layer present in
    both networks) shares a row, as NNC merges them.
    """
    header = ["time in ms"] + [s.title + ("" if s.complete else " (incomplete)")
                               for s in profile.sections]
    order: List[str] = []
    cells = {}
    for col, section in enumerate(profile.sections):
        for entry in section.entries:
            if entry.label not in cells:
                order.append(entry.label)
                cells[entry.label] = [""] * len(profile.sections)
            cells[entry.label][col] = format_ms(entry.mean_ms)
    return [header] + [[label] + cells[label] for label in order]


def work_cells(e: Entry, rate: Callable[[float], object] = lambda x: "%.3f" % x) -> List[object]:
    """output_shape, params, flops, bytes_read, bytes_written, GFLOP/s, FLOP/byte of one entry.

    ``rate`` renders GFLOP/s and FLOP/byte: text with three decimals for the CSV,
    the number itself for the workbook. "unknown" where no FLOP formula exists.
    """
    if e.layer is None:
        return [""] * 7
    if not e.is_layer_work:
        return [e.output_shape or "", e.params if e.params is not None else ""] + [""] * 5
    unknown = "unknown"
    gflops, intensity = e.gflops_per_s, e.arithmetic_intensity
    return [e.output_shape or "", e.params if e.params is not None else "",
            e.flops if e.flops is not None else unknown,
            e.bytes_read if e.bytes_read is not None else "",
            e.bytes_written if e.bytes_written is not None else "",
            rate(gflops) if gflops is not None else unknown,
            rate(intensity) if intensity is not None else unknown]


def coverage_cells(section: Section) -> Dict[str, str]:
    """Phase of a whole pass (forward_all, backward_all) -> the share its layers add up to."""
    return {c.whole_phase: "%.4f" % c.share for c in section.coverage() if c.share is not None}


def detail_rows(profile: Profile) -> List[List[object]]:
    rows: List[List[object]] = [DETAIL_COLUMNS]
    for section in profile.sections:
        coverage = coverage_cells(section)
        for e in section.entries:
            s = e.stats
            rows.append([section.title, e.label, e.phase, e.layer or "", e.layer_type or "",
                         e.impl_class or "", int(e.in_place), format_ms(e.mean_ms),
                         format_ms(ms(s.median)), format_ms(ms(s.std)), format_ms(ms(s.min)),
                         format_ms(ms(s.max)), format_ms(ms(s.p90)), s.n, "%.4f" % s.rse,
                         e.calls_per_sample, "%.1f" % e.overhead_ns]
                        + work_cells(e) + [coverage.get(e.phase, ""), int(section.complete)])
    return rows


def _write(path: str, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


SUMMARY = "summary.csv"
SUMMARY_COLUMNS = ["section", "item", "name", "ms", "percent", "detail"]


def summary_rows(profile: Profile) -> List[List[object]]:
    """The step breakdown, top layers and advice of every complete training section."""
    rows: List[List[object]] = [SUMMARY_COLUMNS]
    context = str(profile.header.get("context", "cpu:float"))
    for section in profile.sections:
        summary = summarize_section(section, context)
        if summary is not None:
            rows.extend(advice_rows(summary))
    return rows


def write(profile: Profile, outdir: str) -> List[str]:
    paths = [os.path.join(outdir, PROFILE), os.path.join(outdir, DETAIL), os.path.join(outdir, SUMMARY)]
    _write(paths[0], profile_rows(profile))
    _write(paths[1], detail_rows(profile))
    _write(paths[2], summary_rows(profile))
    return paths
