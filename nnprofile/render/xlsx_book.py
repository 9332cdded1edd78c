"""The workbook being written (XlsxWriter, in memory), and what its sheets share: a row of values as numbers and
text, a table coloured from green (lowest) to red."""

from __future__ import annotations

import datetime
import io
from typing import Any, Dict, List

from .safe import cell_text

COLOUR_LOW, COLOUR_MID, COLOUR_HIGH = "63BE7B", "FFEB84", "F8696B"
# The tutorial's colour scale: green (lowest) through yellow (the median) to red, as every coloured range has it.
COLOUR_SCALE = {
    "type": "3_color_scale",
    "min_color": "#" + COLOUR_LOW,
    "mid_color": "#" + COLOUR_MID,
    "max_color": "#" + COLOUR_HIGH,
    "mid_type": "percentile",
    "mid_value": 50,
}


class Book:
    """The workbook being written (XlsxWriter, in memory): its formats, made once."""

    def __init__(self, buffer: io.BytesIO, created: datetime.datetime):
        import xlsxwriter

        # Text is text: no formulas, numbers or links are read into strings from projects.
        self.wb = xlsxwriter.Workbook(
            buffer,
            {"in_memory": True, "strings_to_formulas": False, "strings_to_numbers": False, "strings_to_urls": False},
        )
        self.wb.set_properties({"created": created})
        self.bold = self.wb.add_format({"bold": True})
        self.wrap = self.wb.add_format({"text_wrap": True, "valign": "top"})
        self._formats: Dict[str, Any] = {}

    def number(self, number_format: str) -> Any:
        if number_format not in self._formats:
            self._formats[number_format] = self.wb.add_format({"num_format": number_format})
        return self._formats[number_format]


def write_row(book: Book, ws: Any, row: int, values: list, formats: Dict[int, str], first_col: int = 0) -> None:
    """One row of values: empty ones left out, text as text, numbers formatted by column (0-based)."""
    for col, value in enumerate(values):
        if value is None or value == "":
            continue
        if isinstance(value, str):
            ws.write_string(row, first_col + col, cell_text(value))
        elif isinstance(value, bool):
            ws.write_boolean(row, first_col + col, value)
        elif col in formats:
            ws.write_number(row, first_col + col, value, book.number(formats[col]))
        else:
            ws.write_number(row, first_col + col, value)


def coloured_table(
    book: Book,
    ws: Any,
    columns: List[str],
    rows: List[List[object]],
    formats: Dict[int, str],
    coloured: int,
    lines: List[str],
) -> int:
    """A header row and the rows (the column ``coloured`` from green, lowest, to red), then the lines below;
    returns the next free row."""
    ws.freeze_panes(1, 1)
    ws.write_row(0, 0, columns, book.bold)
    for i, row in enumerate(rows, start=1):
        write_row(book, ws, i, row, formats)
    n = len(rows)
    ws.conditional_format(1, coloured, n, coloured, dict(COLOUR_SCALE))
    at = n + 2
    for line in lines:
        ws.write_string(at, 0, cell_text(line))
        at += 1
    return at
