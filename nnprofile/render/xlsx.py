"""profile.xlsx: the tutorial's spreadsheet, made for the user.

One sheet per section with the entries as numbers, a colour scale over the
forward and backward rows (what the NNC tutorial applies by hand), and a bar
chart of forward and backward time per layer; an Info sheet says how the
figures were taken.
"""
from __future__ import annotations

import datetime
import io
import os
import zipfile
from typing import List, Optional, Tuple

from ..analysis import Analysis, SectionAnalysis, analyze
from ..analysis.advice import PARTS, summary_rows as advice_rows
from ..choices import LAYER_PHASES
from ..result import Profile, Section, ms
from .base import Contents
from .csv_files import SUMMARY_COLUMNS, work_cells
from .safe import xlsx_text

NAME = "xlsx"
FILENAME = "profile.xlsx"
COLUMNS = ["entry", "time (ms)", "median (ms)", "std (ms)", "min (ms)", "max (ms)",
           "p90 (ms)", "runs", "rel. std. error", "calls/sample", "phase", "layer", "class",
           "output shape", "params", "FLOPs", "bytes read", "bytes written", "GFLOP/s", "FLOP/byte",
           "output bytes", "parameter bytes", "gradient bytes", "input gradient bytes"]
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
    rows = [i + 2 for i, e in enumerate(section.entries) if e.phase in LAYER_PHASES]
    return (rows[0], rows[-1]) if rows else (0, 0)


def per_layer_times(a: SectionAnalysis) -> List[Tuple[str, float, float]]:
    """(layer, forward ms, backward ms) in forward order, paired by the layer's identity."""
    return [(lt.layer, lt.forward_ms, lt.backward_ms) for lt in a.layers]


def _append(ws, values: list) -> None:
    """A row whose text cells stay text (names from projects are never formulas)."""
    row = ws.max_row + 1 if ws.max_row > 1 or ws.cell(row=1, column=1).value is not None else 1
    for col, value in enumerate(values, start=1):
        xlsx_text(ws.cell(row=row, column=col), value)


def _section_sheet(ws, a: SectionAnalysis) -> None:
    from openpyxl.chart import BarChart, Reference
    from openpyxl.formatting.rule import ColorScaleRule
    from openpyxl.styles import Font

    section = a.section
    ws.append(COLUMNS)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for e in section.entries:
        s = e.stats
        work = work_cells(e, rate=float)
        _append(ws, [e.label, e.mean_ms, ms(s.median), ms(s.std), ms(s.min), ms(s.max), ms(s.p90),
                     s.n, round(s.rse, 4), e.calls_per_sample, e.phase, e.layer or "", e.impl_class or ""]
                + work + [v if v is not None else "" for v in (e.output_bytes, e.parameter_bytes,
                                                                e.gradient_bytes, e.input_gradient_bytes)])
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
    widths.update({"K": 26, "L": 24, "M": 26, "N": 16, "O": 10, "P": 14, "Q": 13, "R": 13, "S": 10, "T": 10,
                   "U": 14, "V": 15, "W": 14, "X": 19})
    for col, width in widths.items():
        ws.column_dimensions[col].width = min(width, 80)

    first, end = colour_scale_rows(section)
    if first:
        ws.conditional_formatting.add(
            "%s%d:%s%d" % (TIME_COLUMN, first, TIME_COLUMN, end),
            ColorScaleRule(start_type="min", start_color=COLOUR_LOW,
                           mid_type="percentile", mid_value=50, mid_color=COLOUR_MID,
                           end_type="max", end_color=COLOUR_HIGH))

    layers = per_layer_times(a)
    if not layers:
        return
    has_backward = any(e.phase == "backward_function" for e in section.entries)
    c0 = LAYER_TABLE_COL
    head = ["layer", "forward (ms)"] + (["backward (ms)"] if has_backward else [])
    for j, text in enumerate(head):
        ws.cell(row=1, column=c0 + j, value=text).font = Font(bold=True)
    for i, (layer, f, b) in enumerate(layers, start=2):
        xlsx_text(ws.cell(row=i, column=c0), layer)
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
        _append(ws, row)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for row in ws.iter_rows(min_row=2):
        row[3].number_format = MS_FORMAT
        row[5].alignment = Alignment(wrap_text=True, vertical="top")
        row[6].number_format = "#,##0"
        # Readers that do not measure wrapped text themselves (LibreOffice) need the height.
        lines = max(1, -(-len(str(row[5].value or "")) // 105))
        if lines > 1:
            ws.row_dimensions[row[0].row].height = 15 * lines
    for col, width in zip("ABCDEFG", (44, 16, 30, 13, 9, 110, 14)):
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
        ws.add_chart(pie, "I2")


RULE = ("each entry is sampled in rounds over the whole section; the time shown is the mean of its round "
        "means, leaving out the rounds in which the machine ran more than the drift threshold slower than "
        "its usual speed (the lower quartile of the rounds); median, std, min, max and p90 are over all "
        "samples; the relative standard error comes from the spread of the kept round means")


def _info_sheet(ws, profile: Profile, analysis: Analysis) -> None:
    from openpyxl.styles import Font
    ws.append(["nnprofile", "value"])
    for cell in ws[1]:
        cell.font = Font(bold=True)
    status = "complete" if profile.complete else "INCOMPLETE: %s" % (profile.failure or "stopped")
    _append(ws, ["status", status])
    _append(ws, ["rule", RULE])
    for key, value in profile.header.items():
        _append(ws, [key, "" if value is None else str(value)])
    for note in profile.notes:
        _append(ws, ["note", note])
    for a in analysis.sections:
        if a.drift.describe():
            _append(ws, ["drift", "%s: %s" % (a.section.title, a.drift.describe())])
    ws.column_dimensions["A"].width = 20
    ws.column_dimensions["B"].width = 100


def build(profile: Profile, analysis: Optional[Analysis] = None):
    from openpyxl import Workbook
    analysis = analysis or analyze(profile)
    wb = Workbook()
    first = wb.active
    for name, section in zip(sheet_names(profile), profile.sections):
        ws = wb.create_sheet(title=name)
        _section_sheet(ws, analysis.of(section))
        if not section.complete:
            ws.sheet_properties.tabColor = "F8696B"
            xlsx_text(ws.cell(row=len(section.entries) + 3, column=1),
                      "INCOMPLETE: %s" % (profile.failure or "stopped"))
    n_sheets = len(profile.sections)
    summary: List[List[object]] = [list(SUMMARY_COLUMNS)]
    for a in analysis.sections:
        if a.step is not None:
            summary += [row + [""] for row in advice_rows(a.step)]
        summary += a.memory_rows
    if len(summary) > 1:  # more than the header: a complete training section
        _summary_sheet(wb.create_sheet(title="Summary"), summary)
        n_sheets += 1
    _info_sheet(first, profile, analysis)
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


def workbook_bytes(profile: Profile, analysis: Optional[Analysis] = None) -> bytes:
    """The workbook's bytes; they depend only on the profile (so `report` reproduces them)."""
    from openpyxl.writer.excel import ExcelWriter
    wb = build(profile, analysis)
    wb.properties.created = wb.properties.modified = _profile_time(profile)
    buffer = io.BytesIO()
    with _StampedZip(buffer, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        ExcelWriter(wb, archive).save()
    return buffer.getvalue()


def files(profile: Profile, analysis: Analysis) -> Contents:
    return {FILENAME: workbook_bytes(profile, analysis)}
