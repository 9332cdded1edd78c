"""profile.csv (NNC's layout) and profile_detail.csv (every statistic)."""
from __future__ import annotations

import csv
import os
from typing import List

from ..result import Profile, format_ms, ms

PROFILE = "profile.csv"
DETAIL = "profile_detail.csv"
DETAIL_COLUMNS = ["section", "label", "phase", "layer", "layer_type", "class", "in_place",
                  "mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "runs", "rse"]


def profile_rows(profile: Profile) -> List[List[str]]:
    """NNC's table: first cell 'time in ms', a column per section, a row per label.

    Rows are keyed by label within a section (labels are unique there); across
    sections, a label shared by two sections (load_dataset, a layer present in
    both networks) shares a row, as NNC merges them.
    """
    header = ["time in ms"] + [s.title for s in profile.sections]
    order: List[str] = []
    cells = {}
    for col, section in enumerate(profile.sections):
        for entry in section.entries:
            if entry.label not in cells:
                order.append(entry.label)
                cells[entry.label] = [""] * len(profile.sections)
            cells[entry.label][col] = format_ms(entry.mean_ms)
    return [header] + [[label] + cells[label] for label in order]


def detail_rows(profile: Profile) -> List[List[object]]:
    rows: List[List[object]] = [DETAIL_COLUMNS]
    for section in profile.sections:
        for e in section.entries:
            s = e.stats
            rows.append([section.title, e.label, e.phase, e.layer or "", e.layer_type or "",
                         e.impl_class or "", int(e.in_place), format_ms(e.mean_ms),
                         format_ms(ms(s.median)), format_ms(ms(s.std)), format_ms(ms(s.min)),
                         format_ms(ms(s.max)), format_ms(ms(s.p90)), s.n, "%.4f" % s.rse])
    return rows


def _write(path: str, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def write(profile: Profile, outdir: str) -> List[str]:
    paths = [os.path.join(outdir, PROFILE), os.path.join(outdir, DETAIL)]
    _write(paths[0], profile_rows(profile))
    _write(paths[1], detail_rows(profile))
    return paths
