"""profile.xlsx's sheets over a run rather than one section: a merged view's ranks and a long training's windows."""

from __future__ import annotations

from typing import Any

from ..analysis.ranks import RANK_COLUMNS, STEP_COLUMNS, RanksAnalysis, rank_rows, step_rows
from ..analysis.windows import WindowsAnalysis
from ..result.columns import MS_FORMAT
from .colours import part_colour
from .ranks import summary_lines as ranks_lines
from .windows import columns as window_columns, rows as window_rows, summary_lines as window_findings
from .xlsx_book import Book, coloured_table, write_row

RANK_FORMATS = {**{c: MS_FORMAT for c in range(3, 14)}, 14: "0.00"}
# The parts a rank's bar stacks (columns of RANK_COLUMNS): its step, communication (waiting included) last.
RANK_BAR_PARTS = ("input_ms", "forward_ms", "backward_ms", "update_ms", "monitor_ms", "other_ms", "communication_ms")


def ranks_sheet(book: Book, ws: Any, r: RanksAnalysis) -> None:
    """A merged view's ranks: a row per rank (busy time coloured), a bar of each rank's step by part, what
    the analysis found, and the steps."""
    for col, width in enumerate([13, 16, 18, 24] + [15] * 10 + [11, 10, 10]):
        ws.set_column(col, col, width)
    rows = rank_rows(r)
    n = len(rows)
    at = coloured_table(book, ws, RANK_COLUMNS, rows, RANK_FORMATS, RANK_COLUMNS.index("busy_ms"), ranks_lines(r))
    at += 1
    ws.write_row(at, 0, STEP_COLUMNS, book.bold)
    for i, row in enumerate(step_rows(r), start=at + 1):
        write_row(book, ws, i, row, {2: MS_FORMAT})
    chart = book.wb.add_chart({"type": "bar", "subtype": "stacked"})
    for part in RANK_BAR_PARTS:
        col = RANK_COLUMNS.index(part)
        chart.add_series(
            {
                "name": [ws.name, 0, col],
                "categories": [ws.name, 1, 0, n, 0],
                "values": [ws.name, 1, col, n, col],
                "fill": {"color": part_colour(part[: -len("_ms")])},
            }
        )
    chart.set_title({"name": "Each rank's step (ms)"})
    chart.set_x_axis({"name": "ms"})
    chart.set_y_axis({"name": "rank", "reverse": True, "crossing": "max", "interval_unit": 1})
    chart.set_legend({"position": "bottom"})
    chart.set_size({"width": 760, "height": int(max(7.5, 0.6 * n + 4) * 37.8)})
    ws.insert_chart(0, len(RANK_COLUMNS) + 1, chart)


def windows_sheet(book: Book, ws: Any, w: WindowsAnalysis) -> None:
    """A long training's windows: a row each (the step coloured from fastest to slowest), what the view
    found, and a column per window of its step by part."""
    columns = window_columns(w)
    for col in range(len(columns)):
        ws.set_column(col, col, 14)
    rows = window_rows(w)
    n = len(rows)
    step = columns.index("step_ms")
    at = coloured_table(
        book,
        ws,
        columns,
        rows,
        {c: MS_FORMAT for c, name in enumerate(columns) if name.endswith("_ms")},
        step,
        window_findings(w),
    )
    chart = book.wb.add_chart({"type": "column", "subtype": "stacked"})
    for col, name in enumerate(columns):
        if col > step + 1 and name.endswith("_ms"):
            chart.add_series(
                {"name": [ws.name, 0, col], "categories": [ws.name, 1, 0, n, 0], "values": [ws.name, 1, col, n, col]}
            )
    chart.set_title({"name": "The step by part, window by window (ms)"})
    chart.set_x_axis({"name": "window"})
    chart.set_y_axis({"name": "ms per step"})
    chart.set_legend({"position": "bottom"})
    ws.insert_chart(at + 1, 0, chart)
