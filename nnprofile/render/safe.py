"""Text from projects and scripts, written so that no spreadsheet runs it.

Layer names come from project files that people share. A spreadsheet that
opens a CSV file evaluates a cell that begins with ``=``, ``+``, ``-`` or
``@`` (and, in some, a tab or carriage return) as a formula; OWASP's advice
against such CSV injection is to prefix those cells with a single quote,
which shows the text as it is. In the workbook, names are written as string
cells, never as formulas.
"""
from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: Any) -> Any:
    """A CSV cell of text: neutralised if a spreadsheet would read it as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def xlsx_text(cell: Any, value: Any) -> Any:
    """Put ``value`` in an openpyxl cell; text stays text, whatever it begins with."""
    cell.value = value
    if isinstance(value, str) and cell.data_type == "f":
        cell.data_type = "s"
    return cell
