"""Names are data: text from projects and programs, written so that no reader runs it or reads structure into it.

Layer, scope, optimizer, dataset and iterator names come from files people share and from programs
nnprofile never saw. Each output keeps them as data:

- the log and the terminal (``safe_text``): one entry is one line, whatever a name holds. Control
  characters (CR, LF, ESC and the rest of C0 and C1, DEL), format characters (bidi overrides such as U+202E,
  zero-width ones such as U+200B) and Unicode's line and paragraph separators are written as escapes
  (``\\r``, ``\\n``, ``\\x1b``, ``\\u202e``, ``\\u2028``), so no name forges a line, moves the terminal's
  cursor or reorders the figures beside it;
- CSV (``csv_text``): a spreadsheet evaluates a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab, CR
  or LF as a formula (OWASP's CSV-injection list); such a cell, also after leading whitespace or control
  characters, is prefixed with a single quote. A cell holding a control character is quoted by the
  writer (``csv.QUOTE_NONNUMERIC``/``QUOTE_MINIMAL`` with the characters that need it), and NUL, which
  no CSV reader takes, is escaped;
- the workbook (``xlsx_text``, ``sheet_name``): names are string cells, never formulas; characters XML
  cannot hold are escaped; a sheet's name loses what Excel forbids (``[]:*?/\\``, an apostrophe at either
  end) and is cut to 31 characters, made unique;
- Markdown (``markdown_text``) and XML (``xml_attribute``): what the log escapes, escaped first
  (``safe_text``: every text format starts from it), then what the format reads as structure (Markdown's
  emphasis, links, code, tables and HTML; XML's markup).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
# C0 and C1 control characters and DEL, and the line and paragraph separators some readers break lines at.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u0085]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# What XML 1.0 (a workbook's cells) cannot hold.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_SHEET_BAD = re.compile(r"[\[\]:*?/\\\x00-\x1f]")


def _escape(match: "re.Match[str]") -> str:
    return _escaped(match.group(0))


# Unicode's categories a name shows as data only escaped: controls, format characters (bidi overrides and
# isolates, zero-width ones: a name would reverse or hide its line's figures), line and paragraph separators, and
# lone surrogates (no file can hold them).
_ESCAPED_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def _escaped(c: str) -> str:
    if c in _NAMED:
        return _NAMED[c]
    code = ord(c)
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def safe_text(value: Any) -> str:
    """Text for the log or the terminal: every control and format character (categories Cc, Cf, Zl, Zp) escaped:
    one line, no escape sequence, no reordering or hidden character."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():  # the usual name: nothing to look at
        return text
    return "".join(_escaped(c) if unicodedata.category(c) in _ESCAPED_CATEGORIES else c for c in text)


_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~#!])")


def markdown_text(value: Any) -> str:
    """Text for Markdown (a pull request's comment): ``safe_text``, then every character Markdown reads as markup
    (emphasis, code, links, images, tables, headings, HTML) escaped with a backslash."""
    return _MARKDOWN.sub(r"\\\1", safe_text(value))


def xml_attribute(value: Any) -> str:
    """An XML attribute's value, quoted: ``safe_text``, then what an attribute cannot hold."""
    from xml.sax.saxutils import quoteattr

    return quoteattr(safe_text(value))


def csv_text(value: Any) -> Any:
    """A CSV cell of text: NUL escaped, and neutralised if a spreadsheet would read it as a formula (also after
    leading whitespace or control characters)."""
    if not isinstance(value, str):
        return value
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    stripped = value.lstrip(
        " \x0b\x0c\x1c\x1d\x1e\x1f\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14"
        "\x15\x16\x17\x18\x19\x1a\x1b\x7f"
    )
    if value.startswith(FORMULA_STARTS) or stripped.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def cell_text(value: Any) -> Any:
    """Text a workbook's cell can hold: characters XML forbids escaped."""
    if isinstance(value, str) and _NOT_XML.search(value):
        return _NOT_XML.sub(_escape, value)
    return value


def xlsx_text(cell: Any, value: Any) -> Any:
    """Put ``value`` in an openpyxl cell; text stays text, whatever it begins with."""
    cell.value = cell_text(value)
    if isinstance(value, str) and cell.data_type == "f":
        cell.data_type = "s"
    return cell


def sheet_name(name: str, taken: Iterable[str] = (), fallback: str = "Sheet") -> str:
    """A worksheet's name Excel takes: no ``[]:*?/\\`` or control character, no apostrophe at either end, at most
    31 characters, not empty, and none of ``taken`` (compared as Excel does, ignoring case)."""
    clean = _NOT_XML.sub("_", _CONTROL.sub("_", _SHEET_BAD.sub("_", str(name)))).strip("'").strip() or fallback
    clean = _cut(clean, 31).rstrip("'") or fallback
    used = {t.lower() for t in taken}
    if clean.lower() not in used and clean.lower() != "history":
        return clean
    for n in range(2, 10_000):
        suffix = " (%d)" % n
        candidate = _cut(clean, 31 - len(suffix)).rstrip("'") + suffix
        if candidate.lower() not in used:
            return candidate
    return clean


def _cut(text: str, units: int) -> str:
    """At most ``units`` UTF-16 code units (what Excel counts a sheet name's length in)."""
    while len(text.encode("utf-16-le")) // 2 > units:
        text = text[:-1]
    return text


def csv_cell(value: Any) -> str:
    """One CSV cell: text neutralised (``csv_text``) and quoted where it holds a comma, a quote or any control
    character (Python's csv module quotes only what its line terminator holds: a lone CR would start a row)."""
    if value is None:
        return ""
    text = csv_text(value) if isinstance(value, str) else str(value)
    if '"' in text or "," in text or _CONTROL.search(text):
        return '"%s"' % text.replace('"', '""')
    return text


def csv_document(rows: Iterable[Iterable[Any]]) -> str:
    """Rows as CSV text, one line a row whatever the cells hold."""
    return "".join(",".join(csv_cell(v) for v in row) + "\n" for row in rows)
