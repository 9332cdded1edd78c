"""profile.xlsx: the tutorial's spreadsheet, made for the user.

One sheet per section with the entries as numbers, a colour scale over the
forward and backward rows (what the NNC tutorial applies by hand), and a bar
chart of forward and backward time per layer; an Info sheet says how the
figures were taken.
"""
from __future__ import annotations

import datetime
import os
import zipfile
from typing import Dict, List, Tuple

from ..result import Profile, Section, ms
from ..advice import PARTS
from .csv_files import summary_rows, work_cells

FILENAME = "profile.xlsx"
COLUMNS = ["entry", "time (ms)", "median (ms)", "std (ms)", "min (ms)", "max (ms)",
           "p90 (ms)", "runs", "rel. std. error", "calls/sample", "phase", "layer", "class",
           "output shape", "params", "FLOPs", "bytes read", "bytes written", "GFLOP/s", "FLOP/byte"]
TIME_COLUMN = "B"
MS_FORMAT = "0.000000"
LAYER_TABLE_COL = len(COLUMNS) + 2  # the per-layer table that feeds the chart, after a gap
# Excel's own green-yellow-red scale: slow cells stand out in red.
COLOUR_LOW, COLOUR_MID, COLOUR_HIGH = "63BE7B", "FFEB84", "F8696B"


def sheet_names(profile: Profile) -> List[str]:
    names: List[str] = []
    for s in profile.sections:
        base = ("%s %s" % (s.name, s.network))[:28]
        for ch in '[]:*?/\\':
            base = base.replace(ch, "_")
        name, n = base, 2
        while name in names or name in ("Info", "Summary"):
            name = "%s~%d" % (base[:26], n)
            n += 1
        names.append(name)
    return names


def colour_scale_rows(section: Section) -> Tuple[int, int]:
    """Sheet rows (1-based, header in row 1) from the first forward to the last backward entry."""
    rows = [i + 2 for i, e in enumerate(section.entries)
            if e.phase in ("forward_function", "backward_function")]
    return (rows[0], rows[-1]) if rows else (0, 0)


def per_layer_times(section: Section) -> List[Tuple[str, float, float]]:
    """(layer, forward ms, backward ms) in forward order."""
    order: List[str] = []
    fwd: Dict[str, float] = {}
    bwd: Dict[str, float] = {}
    for e in section.entries:
        if e.phase == "forward_function":
            order.append(e.layer)
            fwd[e.layer] = e.mean_ms
        elif e.phase == "backward_function":
            bwd[e.layer] = e.mean_ms
    return [(layer, fwd[layer], bwd.get(layer, 0.0)) for layer in order]


def _section_sheet(ws, section: Section) -> None:
    from openpyxl.chart import BarChart, Reference
    from openpyxl.formatting.rule import ColorScaleRule
    from openpyxl.styles import Font

    ws.append(COLUMNS)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for e in section.entries:
        s = e.stats
        work = work_cells(e, rate=float)
        ws.append([e.label, e.mean_ms, ms(s.median), ms(s.std), ms(s.min), ms(s.max), ms(s.p90),
                   s.n, round(s.rse, 4), e.calls_per_sample, e.phase, e.layer or "", e.impl_class or ""]
                  + work)
    last = len(section.entries) + 1
    for col in "BCDEFG":
        for row in range(2, last + 1):
            ws["%s%d" % (col, row)].number_format = MS_FORMAT
    for row in range(2, last + 1):
        ws["I%d" % row].number_format = "0.00%"
        ws["S%d" % row].number_format = "0.000"
        ws["T%d" % row].number_format = "0.000"
    ws.freeze_panes = "B2"
    widths = {"A": max([len(COLUMNS[0])] + [len(e.label) for e in section.entries]) + 2}
    widths.update({c: 13 for c in "BCDEFGHIJ"})
    widths.update({"K": 26, "L": 24, "M": 26, "N": 16, "O": 10, "P": 14, "Q": 13, "R": 13, "S": 10, "T": 10})
    for col, width in widths.items():
        ws.column_dimensions[col].width = min(width, 80)

    first, end = colour_scale_rows(section)
    if first:
        ws.conditional_formatting.add(
            "%s%d:%s%d" % (TIME_COLUMN, first, TIME_COLUMN, end),
            ColorScaleRule(start_type="min", start_color=COLOUR_LOW,
                           mid_type="percentile", mid_value=50, mid_color=COLOUR_MID,
                           end_type="max", end_color=COLOUR_HIGH))

    layers = per_layer_times(section)
    if not layers:
        return
    has_backward = any(e.phase == "backward_function" for e in section.entries)
    c0 = LAYER_TABLE_COL
    head = ["layer", "forward (ms)"] + (["backward (ms)"] if has_backward else [])
    for j, text in enumerate(head):
        ws.cell(row=1, column=c0 + j, value=text).font = Font(bold=True)
    for i, (layer, f, b) in enumerate(layers, start=2):
        ws.cell(row=i, column=c0, value=layer)
        ws.cell(row=i, column=c0 + 1, value=f).number_format = MS_FORMAT
        if has_backward:
            ws.cell(row=i, column=c0 + 2, value=b).number_format = MS_FORMAT
    from openpyxl.utils import get_column_letter
    ws.column_dimensions[get_column_letter(c0)].width = max(len(l[0]) for l in layers) + 2
    ws.column_dimensions[get_column_letter(c0 + 1)].width = 14
    ws.column_dimensions[get_column_letter(c0 + 2)].width = 14

    chart = BarChart()
    chart.type = "bar"
    chart.style = 10
    chart.title = "Time per layer (ms)"
    chart.y_axis.title = "ms"
    chart.x_axis.title = "layer"
    chart.x_axis.scaling.orientation = "maxMin"  # first layer at the top, as in the log
    n = len(layers)
    data = Reference(ws, min_col=c0 + 1, max_col=c0 + len(head) - 1, min_row=1, max_row=n + 1)
    cats = Reference(ws, min_col=c0, min_row=2, max_row=n + 1)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(cats)
    # openpyxl 3.1 marks axes as deleted unless told otherwise; Excel then hides them.
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.x_axis.tickLblSkip = 1  # a label for every layer
    chart.y_axis.number_format = "0.0##"
    chart.y_axis.crosses = "max"  # value axis below the last layer
    chart.legend.position = "b"
    chart.height = max(7.5, 0.7 * n + 4)
    chart.width = 20
    ws.add_chart(chart, "%s2" % get_column_letter(c0 + len(head) + 1))


def _summary_sheet(ws, rows: List[List[object]]) -> None:
    from openpyxl.chart import PieChart, Reference
    from openpyxl.styles import Alignment, Font
    for row in rows:
        ws.append(row)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for row in ws.iter_rows(min_row=2):
        row[3].number_format = MS_FORMAT
        row[5].alignment = Alignment(wrap_text=True, vertical="top")
    for col, width in zip("ABCDEF", (44, 16, 30, 13, 9, 110)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A2"
    parts = [i for i, r in enumerate(rows) if r[1] == "part"]
    if parts:  # the first training section's step, as a pie
        first, last = parts[0] + 1, parts[0] + len(PARTS)
        pie = PieChart()
        pie.title = "One training step"
        pie.add_data(Reference(ws, min_col=4, min_row=first, max_row=last))
        pie.set_categories(Reference(ws, min_col=3, min_row=first, max_row=last))
        pie.height, pie.width = 9, 12
        ws.add_chart(pie, "H2")


def _info_sheet(ws, profile: Profile) -> None:
    from openpyxl.styles import Font
    ws.append(["nnprofile", "value"])
    for cell in ws[1]:
        cell.font = Font(bold=True)
    status = "complete" if profile.complete else "INCOMPLETE: %s" % (profile.failure or "stopped")
    ws.append(["status", status])
    for key, value in profile.header.items():
        ws.append([key, "" if value is None else str(value)])
    for note in profile.notes:
        ws.append(["note", note])
    ws.column_dimensions["A"].width = 20
    ws.column_dimensions["B"].width = 100


def build(profile: Profile):
    from openpyxl import Workbook
    wb = Workbook()
    first = wb.active
    for name, section in zip(sheet_names(profile), profile.sections):
        ws = wb.create_sheet(title=name)
        _section_sheet(ws, section)
        if not section.complete:
            ws.sheet_properties.tabColor = "F8696B"
            ws.cell(row=len(section.entries) + 3, column=1,
                    value="INCOMPLETE: %s" % (profile.failure or "stopped"))
    n_sheets = len(profile.sections)
    summary = summary_rows(profile)
    if len(summary) > 1:  # more than the header: a complete training section
        _summary_sheet(wb.create_sheet(title="Summary"), summary)
        n_sheets += 1
    _info_sheet(first, profile)
    first.title = "Info"
    # Sections first: the workbook opens on the training profile.
    wb.move_sheet(first, offset=n_sheets)
    wb.active = 0
    return wb


class _StampedZip(zipfile.ZipFile):
    """A zip whose members all carry one date: the same workbook gives the same bytes."""

    stamp = (1980, 1, 1, 0, 0, 0)

    def writestr(self, zinfo_or_arcname, data, compress_type=None, compresslevel=None):
        if not isinstance(zinfo_or_arcname, zipfile.ZipInfo):
            zinfo = zipfile.ZipInfo(zinfo_or_arcname, date_time=self.stamp)
            zinfo.compress_type = self.compression
            zinfo.external_attr = 0o600 << 16
            zinfo_or_arcname = zinfo
        super().writestr(zinfo_or_arcname, data, compress_type, compresslevel)

    def write(self, filename, arcname=None, compress_type=None, compresslevel=None):
        with open(filename, "rb") as f:
            self.writestr(arcname or os.path.basename(filename), f.read(), compress_type, compresslevel)


def _profile_time(profile: Profile) -> datetime.datetime:
    """When the profile was taken (UTC, naive, as openpyxl stores it); a fixed date if unknown."""
    try:
        when = datetime.datetime.fromisoformat(str(profile.header.get("date")))
        if when.tzinfo is not None:
            when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return when
    except ValueError:
        return datetime.datetime(1980, 1, 1)


def write(profile: Profile, outdir: str) -> List[str]:
    """Save the workbook; its bytes depend only on the profile (so `report` reproduces it)."""
    from openpyxl.writer.excel import ExcelWriter
    path = os.path.join(outdir, FILENAME)
    wb = build(profile)
    wb.properties.created = wb.properties.modified = _profile_time(profile)
    with _StampedZip(path, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        ExcelWriter(wb, archive).save()
    return [path]
