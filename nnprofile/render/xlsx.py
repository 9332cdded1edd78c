"""profile.xlsx: the tutorial's spreadsheet, made for the user.

One sheet per section with the entries as numbers (and, first, a Ranks sheet
in a merged view of a distributed run), a colour scale over the
forward and backward rows (what the NNC tutorial applies by hand), and a bar
chart of forward and backward time per layer; an Info sheet says how the
figures were taken. Written with XlsxWriter (twice as fast as openpyxl at
this, which matters for networks of thousands of entries); every text cell is
a string, never a formula.
"""

from __future__ import annotations

import datetime
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .notes import said, texts
from ..analysis import Analysis, SectionAnalysis, analyze, charted_layers
from . import memory
from .step import chart_note, summary_rows as advice_rows
from .words import drift_words
from .sampling import load_line
from ..base.choices import LAYER_PHASES
from ..result import Profile, Section
from ..result.columns import IN_SHEET, MS_FORMAT, Column, Row, columns, is_unknown
from . import interference
from .colours import BACKWARD, FORWARD, part_colour
from .base import Contents
from .safe import cell_text, sheet_name
from .csv_files import SUMMARY_COLUMNS
from .xlsx_book import COLOUR_SCALE, Book, write_row
from .xlsx_runs import ranks_sheet, windows_sheet

NAME = "xlsx"
FILENAME = "profile.xlsx"
WHAT = "the workbook"
WRITES = (FILENAME,)
# The section sheets' columns (``nnprofile.result.columns.IN_SHEET``).
SHEET_COLUMNS = columns(IN_SHEET)
COLUMNS = [c.header for c in SHEET_COLUMNS]
TIME_COLUMN = "B"
PRINTED = COLUMNS.index("rel. std. error") + 1  # the columns a printed page holds: entry to relative error
CHART_DATA = "Chart data"  # the per-layer tables the charts draw, a block of columns per section
# Excel's own green-yellow-red scale: slow cells stand out in red.


def sheet_names(profile: Profile) -> List[str]:
    """Each section's sheet: its name made one Excel takes (``safe.sheet_name``), distinct from the others'."""
    names: List[str] = []
    for s in profile.sections:
        base = " ".join(part for part in (s.name, s.network) if part)
        names.append(
            sheet_name(base, names + ["Info", "Summary", "Ranks", "Windows", "Chart data"], fallback="Section")
        )
    return names


def colour_scale_rows(section: Section) -> Tuple[int, int]:
    """Sheet rows (1-based, header in row 1) from the first forward to the last backward entry."""
    rows = [i + 2 for i, e in enumerate(section.entries) if e.phase in LAYER_PHASES]
    return (rows[0], rows[-1]) if rows else (0, 0)


def chart_layers(a: SectionAnalysis) -> Tuple[List[Tuple[str, float, float]], str]:
    """What the bar chart shows (see ``nnprofile.analysis.charted_layers``), and a note when it is not
    every layer."""
    layers, shown = charted_layers(a)
    return [(l.layer, l.forward_ms, l.backward_ms) for l in layers], chart_note(shown)


def _cell(column: Column, row: Row) -> Any:
    """A column's cell in a section sheet: the number itself, text as text, ``unknown`` where no formula gives a
    layer's figure, None (left empty) where not known."""
    value = column.get(row)
    return "unknown" if is_unknown(column, row, value) else value


SECTION_FORMATS = {i: c.number_format for i, c in enumerate(SHEET_COLUMNS) if c.number_format}
LAYER_FORMATS = {1: MS_FORMAT, 2: MS_FORMAT}


def _section_sheet(
    book: Book, ws: Any, a: SectionAnalysis, failure: Optional[str], data: Any, block: int
) -> Optional[Any]:
    """One section: its entries; the bar chart of its layers (returned, for a sheet of its own), its data on the
    Chart data sheet (``data``), in its own block of columns (``block``). It prints one page wide, its header on
    every page, the narrow set of columns (PRINTED: the rest are on screen and in profile_detail.csv)."""
    section = a.section
    layers, chart_note = chart_layers(a)
    _entry_rows(book, ws, section, failure, chart_note)
    if not layers or data is None:
        return None
    return _layer_chart(book, data, section, layers, block)


def _entry_rows(book: Book, ws: Any, section: Section, failure: Optional[str], chart_note: Optional[str]) -> None:
    """A section's sheet: its entries, a row each, what stopped it and what its chart leaves out, set up to print."""
    ws.freeze_panes(1, 1)  # B2
    ws.set_column(0, 0, min(80, max([len(COLUMNS[0])] + [len(e.label) for e in section.entries]) + 2))
    for col, column in enumerate(SHEET_COLUMNS[1:], start=1):
        ws.set_column(col, col, column.width)

    ws.write_row(0, 0, COLUMNS, book.bold)
    for i, e in enumerate(section.entries, start=1):
        row = Row(section, e)
        write_row(book, ws, i, [_cell(c, row) for c in SHEET_COLUMNS], SECTION_FORMATS)
    last = len(section.entries)
    if failure is not None:
        last += 2
        ws.write_string(last, 0, cell_text("INCOMPLETE: %s" % failure))
    if chart_note:
        last += 2
        ws.write_string(last, 0, cell_text("Note: %s." % chart_note))
    # Printed: landscape, one page wide, the header row on every page, the narrow set of columns (25 on a page are
    # unreadable); the chart has a sheet of its own.
    ws.set_landscape()
    ws.fit_to_pages(1, 0)
    ws.repeat_rows(0)
    ws.print_area(0, 0, max(last, 1), PRINTED - 1)

    first, end = colour_scale_rows(section)
    if first:
        ws.conditional_format("%s%d:%s%d" % (TIME_COLUMN, first, TIME_COLUMN, end), dict(COLOUR_SCALE))


def _layer_chart(book: Book, data: Any, section: Section, layers: Sequence[Any], block: int) -> Any:
    """The bar chart of a section's layers, forward and backward, over its data on the Chart data sheet."""
    has_backward = any(e.phase == "backward_function" for e in section.entries)
    c0 = block * 4  # 0-based, on the Chart data sheet
    head = ["layer", "forward (ms)"] + (["backward (ms)"] if has_backward else [])
    data.set_column(c0, c0, min(80, max(len(l[0]) for l in layers) + 2))
    data.set_column(c0 + 1, c0 + 2, 14)
    data.write_string(0, c0, cell_text(section.title[:200]), book.bold)
    data.write_row(1, c0, head, book.bold)
    for i, layer in enumerate(layers, start=2):
        write_row(book, data, i, [layer[0], layer[1]] + ([layer[2]] if has_backward else []), LAYER_FORMATS, c0)
    n = len(layers)
    chart = book.wb.add_chart({"type": "bar"})
    for j in range(1, len(head)):
        chart.add_series(
            {
                "name": [data.name, 1, c0 + j],
                "categories": [data.name, 2, c0, n + 1, c0],
                "values": [data.name, 2, c0 + j, n + 1, c0 + j],
                "fill": {"color": FORWARD if j == 1 else BACKWARD},
            }
        )
    chart.set_x_axis({"name": "ms per call", "num_format": "0.0##"})
    # The first layer at the top, as in the log; the value axis below the last layer.
    chart.set_y_axis({"name": "layer", "reverse": True, "crossing": "max", "interval_unit": 1})
    chart.set_legend({"position": "bottom"})
    chart.set_style(10)
    chart.set_title({"name": "Time per layer (ms): %s" % cell_text(section.title[:120])})
    return chart


SUMMARY_FORMATS = {3: MS_FORMAT, 6: "#,##0"}


def _summary_sheet(book: Book, ws: Any, rows: List[List[object]]) -> None:
    for col, width in enumerate((44, 16, 30, 13, 9, 110, 14)):
        ws.set_column(col, col, width)
    ws.freeze_panes(1, 0)  # A2
    ws.write_row(0, 0, rows[0], book.bold)
    for i, row in enumerate(rows[1:], start=1):
        values = list(row)
        detail = values[5] if len(values) > 5 else None
        if len(values) > 5:
            values[5] = None
        write_row(book, ws, i, values, SUMMARY_FORMATS)
        if detail not in (None, ""):
            ws.write_string(i, 5, cell_text(str(detail)), book.wrap)
        # Readers that do not measure wrapped text themselves (LibreOffice) need the height.
        lines = max(1, -(-len(str(detail or "")) // 105))
        if lines > 1:
            ws.set_row(i, 15 * lines)
    # Printed: landscape, one page wide, its header on every page, the table (the pie is on screen).
    ws.set_landscape()
    ws.fit_to_pages(1, 0)
    ws.repeat_rows(0)
    ws.print_area(0, 0, max(1, len(rows) - 1), len(rows[0]) - 1)
    parts = [i for i, r in enumerate(rows) if r[1] == "part"]
    if parts:  # the first training section's step, as a pie
        first = parts[0]
        last = first
        while last + 1 < len(rows) and rows[last + 1][1] == "part" and rows[last + 1][0] == rows[first][0]:
            last += 1
        pie = book.wb.add_chart({"type": "pie"})
        pie.add_series(
            {
                "categories": [ws.name, first, 2, last, 2],
                "values": [ws.name, first, 3, last, 3],
                "points": [{"fill": {"color": part_colour(str(rows[i][2]))}} for i in range(first, last + 1)],
            }
        )
        pie.set_title({"name": "One training step"})
        pie.set_size({"width": 454, "height": 340})
        ws.insert_chart(1, 8, pie)


RULE = (
    "each entry is sampled in rounds over the whole section; the time shown is the mean of its round "
    "means, leaving out the rounds in which the machine ran more than the drift threshold slower than "
    "its usual speed (the lower quartile of the rounds); median, std, min, max and p90 are over all "
    "samples; the relative standard error comes from the spread of the kept round means"
)


def _info_sheet(book: Book, ws: Any, profile: Profile, analysis: Analysis) -> None:
    ws.set_column(0, 0, 20)
    ws.set_column(1, 1, 100)
    ws.write_row(0, 0, ["nnprofile", "value"], book.bold)
    status = "complete" if profile.complete else "INCOMPLETE: %s" % (profile.failure or "stopped")
    rows: List[List[object]] = [["status", status], ["rule", RULE]]
    rows += [[key, "" if value is None else str(said(value))] for key, value in profile.header.items()]
    busy = interference.sentence(profile)
    if busy:
        rows.append(["interference", busy])
    rows += [["note", note] for note in texts(profile.notes)]
    rows += [
        ["drift", "%s: %s" % (a.section.title, drift_words(a.drift))] for a in analysis.sections if drift_words(a.drift)
    ]
    rows += [
        ["input", "%s: %s" % (a.section.title, load_line(a.section))] for a in analysis.sections if load_line(a.section)
    ]
    for i, row in enumerate(rows, start=1):
        write_row(book, ws, i, row, {})


def _profile_time(profile: Profile) -> datetime.datetime:
    """When the profile was taken (UTC, naive); a fixed date if unknown."""
    try:
        when = datetime.datetime.fromisoformat(profile.header.date)
        if when.tzinfo is not None:
            when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return when
    except ValueError:
        return datetime.datetime(1980, 1, 1)


def workbook_bytes(profile: Profile, analysis: Optional[Analysis] = None) -> bytes:
    """The workbook's bytes; they depend only on the profile (so `report` reproduces them).

    Written with XlsxWriter in memory (fixed dates inside the zip, no temporary files), row by
    row: linear in the entries.
    """
    analysis = analysis or analyze(profile)
    buffer = io.BytesIO()
    book = Book(buffer, _profile_time(profile))
    if analysis.windows is not None:  # a long training's windows: how the step moved over the run, first
        windows_sheet(book, book.wb.add_worksheet("Windows"), analysis.windows)
    if analysis.ranks is not None:  # a merged view of ranks: who is slow comes first
        ranks_sheet(book, book.wb.add_worksheet("Ranks"), analysis.ranks)
    summary: List[List[object]] = [list(SUMMARY_COLUMNS)]
    for a in analysis.sections:
        if a.step is not None:
            summary += [row + [""] for row in advice_rows(a.step)]
        summary += memory.rows(a)
    # The step's summary (its parts, top layers, other's lines, advice) first: what the workbook opens on; then each
    # section's chart of its layers on a sheet of its own.
    summary_sheet = book.wb.add_worksheet("Summary") if len(summary) > 1 else None  # a complete training section
    if summary_sheet is not None and analysis.windows is None and analysis.ranks is None:
        summary_sheet.activate()
    names = sheet_names(profile)
    taken = names + ["Info", "Summary", "Ranks", "Windows", CHART_DATA]
    charts: Dict[int, Any] = {}
    for i, section in enumerate(profile.sections):
        if chart_layers(analysis.of(section))[0]:
            name = sheet_name("Chart %s" % names[i], taken, fallback="Chart")
            taken.append(name)
            charts[i] = book.wb.add_chartsheet(name)
    if charts and summary_sheet is None and analysis.windows is None and analysis.ranks is None:
        charts[min(charts)].activate()
    sheets = [book.wb.add_worksheet(name) for name in names]
    info = book.wb.add_worksheet("Info")
    data = book.wb.add_worksheet(CHART_DATA) if any(a.layers for a in analysis.sections) else None
    for block, (ws, section) in enumerate(zip(sheets, profile.sections)):
        if not section.complete:
            ws.set_tab_color("#F8696B")
        chart = _section_sheet(
            book, ws, analysis.of(section), None if section.complete else (profile.failure or "stopped"), data, block
        )
        if chart is not None and block in charts:
            charts[block].set_chart(chart)
    if summary_sheet is not None:
        _summary_sheet(book, summary_sheet, summary)
    _info_sheet(book, info, profile, analysis)
    book.wb.close()
    return buffer.getvalue()


def files(profile: Profile, analysis: Analysis) -> Contents:
    return {FILENAME: workbook_bytes(profile, analysis)}
