"""The outputs of `nnprofile compare`: compare.csv, compare.xlsx, box plots, compare.log."""

from __future__ import annotations

import contextlib
import os
import sys
import re
from typing import Any, Callable, Iterator, List, Optional, Sequence

from ..compare import Comparison
from ..compare.metrics import ROW_COLUMNS, Metric, Row
from ..compare.saved import ENTRY_COLUMNS, EntryRow
from ..result import views
from ..base.outdir import prepare_outdir, write_whole
from .safe import csv_document, csv_text, safe_text, xlsx_text

LOG, CSV, ENTRIES, HTML, XLSX = "compare.log", "compare.csv", "compare_entries.csv", "compare.html", "compare.xlsx"
WRITES = (LOG, CSV, ENTRIES, HTML, XLSX)
PLOTS = "box_"  # and a box plot per metric: box_<metric>.png
MPLCACHE = ".matplotlib"  # matplotlib's font cache, when it is first imported here

GREEN, WHITE, RED = "63BE7B", "FFFFFF", "F8696B"


def _num(x: Optional[float], fmt: str = "%.6f") -> str:
    return "" if x is None else fmt % x


def _plain(text: str) -> str:
    return text


def row_cells(r: Row, text: Callable[[str], str] = csv_text) -> List[object]:
    """The cells of one row; ``text`` neutralises names for a CSV file (the workbook keeps them as text)."""
    d = r.stats
    return [
        r.metric,
        r.unit,
        text(r.config),
        d.n,
        _num(d.mean),
        _num(d.median),
        _num(d.std),
        _num(d.p90),
        _num(d.min),
        _num(d.max),
        _num(r.ratio, "%.4f"),
        _num(r.ci_low, "%.4f"),
        _num(r.ci_high, "%.4f"),
    ]


def entry_cells(r: EntryRow, text: Callable[[str], str] = csv_text) -> List[object]:
    return [
        text(r.section),
        text(r.label),
        text(r.config),
        "" if r.n is None else r.n,
        _num(r.mean_ms),
        _num(r.median_ms),
        _num(r.std_ms),
        _num(r.ratio, "%.4f"),
        _num(r.ci_low, "%.4f"),
        _num(r.ci_high, "%.4f"),
    ]


def table_lines(rows: Sequence[Row]) -> List[str]:
    """The printed table: one line per metric and configuration."""
    width = max([len(r.config) for r in rows] + [13])
    names = ["%s (%s)" % (r.metric, r.unit) for r in rows]
    mwidth = max([len(n) for n in names] + [6])
    lines = [
        "%-*s %-*s %3s %11s %11s %10s %11s %11s %11s  %s"
        % (
            mwidth,
            "metric",
            width,
            "configuration",
            "n",
            "mean",
            "median",
            "std",
            "p90",
            "min",
            "max",
            "ratio to first (95% CI)",
        )
    ]
    for r in rows:
        ratio = ""
        if r.ratio is not None:
            ratio = "%.3f" % r.ratio
            if r.ci_low is not None:
                ratio += " (%.3f to %.3f)" % (r.ci_low, r.ci_high or 0.0)
        d = r.stats
        lines.append(
            "%-*s %-*s %3d %11.4f %11.4f %10.4f %11.4f %11.4f %11.4f  %s"
            % (
                mwidth,
                "%s (%s)" % (r.metric, r.unit),
                width,
                r.config,
                d.n,
                d.mean,
                d.median,
                d.std,
                d.p90,
                d.min,
                d.max,
                ratio,
            )
        )
    return lines


@contextlib.contextmanager
def _config_in(outdir: str) -> Iterator[None]:
    """matplotlib caches its fonts in the user's home unless told otherwise: while it is first imported, it is told
    the output folder (``MPLCACHE``, a name guarded as the outputs are); the environment is put back after (a
    user's own MPLCONFIGDIR is left as it is)."""
    if "MPLCONFIGDIR" in os.environ:
        yield
        return
    os.environ["MPLCONFIGDIR"] = os.path.join(outdir, MPLCACHE)
    try:
        yield
    finally:
        os.environ.pop("MPLCONFIGDIR", None)


MIN_BOX_POINTS = 5  # runs of a configuration below which its box plot shows the runs as points only


def box_plots(metrics: Sequence[Metric], configs: Sequence[str], outdir: str, what: str) -> List[str]:
    """One PNG per metric: a box and whiskers per configuration, side by side, every run shown."""
    try:
        with _config_in(outdir):
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
    except ImportError:  # an extra: the tables stand without it
        print(
            "nnprofile: compare: the box plots need matplotlib (pip install 'nnprofile[plots]'); the tables are "
            "written without them",
            file=sys.stderr,
        )
        return []

    paths = []
    for m in metrics:
        names = [c for c in configs if m.values.get(c)]
        data = [m.values[c] for c in names]
        fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * len(names) + 2), 4.2), dpi=100)
        boxed = [i for i, values in enumerate(data, start=1) if len(values) >= MIN_BOX_POINTS]
        if boxed:  # a box of fewer points than MIN_BOX_POINTS would draw quartiles no one measured: points only
            ax.boxplot(
                [data[i - 1] for i in boxed],
                positions=boxed,
                showmeans=True,
                widths=0.5,
                meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black"},
            )
        for i, values in enumerate(data, start=1):
            offsets = [i + 0.12 * ((k % 5) - 2) / 2 for k in range(len(values))]
            ax.plot(offsets, values, "o", alpha=0.6, markersize=4, color="tab:blue")
        ax.set_xticks(range(1, len(names) + 1))
        ax.set_xticklabels(["%s\n(n=%d)" % (c, len(v)) for c, v in zip(names, data)])
        ax.set_xlabel("configuration")
        ax.set_ylabel("%s (%s)" % (m.name, m.unit))
        title = "%s: %s" % (m.name, what)
        lows = [min(v) for v in data]
        if min(lows) > 0 and max(max(v) for v in data) / min(lows) > 10:
            ax.set_yscale("log")  # configurations an order of magnitude apart stay readable
            title += " (log scale)"
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        stem = re.sub(r"[^a-z0-9]+", "_", m.name.lower()).strip("_")[:80] or "metric"
        stem, k = stem, 2
        while os.path.join(outdir, PLOTS + "%s.png" % stem) in paths:  # two names alike once made safe
            stem, k = "%s_%d" % (stem.rsplit("_", 1)[0] if k > 2 else stem, k), k + 1
        path = os.path.join(outdir, PLOTS + "%s.png" % stem)
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths


def _sheet(wb: Any, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], ratio_col: Optional[int]) -> Any:
    from openpyxl.formatting.rule import ColorScaleRule
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    ws = wb.create_sheet(title=title)
    ws.append(columns)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for i, row in enumerate(rows, start=2):
        for j, v in enumerate(row, start=1):
            # The first three columns name things (text, whatever they look like); the rest are figures.
            xlsx_text(ws.cell(row=i, column=j), _as_number(v) if j > 3 else v)
    ws.freeze_panes = "A2"
    for i, name in enumerate(columns, start=1):
        longest = max([len(str(name))] + [len(str(r[i - 1])) for r in rows])
        ws.column_dimensions[get_column_letter(i)].width = min(60, longest + 2)
    if ratio_col is not None and rows:
        letter = get_column_letter(ratio_col)
        # faster than the first configuration in green, slower in red, equal in white
        ws.conditional_formatting.add(
            "%s2:%s%d" % (letter, letter, len(rows) + 1),
            ColorScaleRule(
                start_type="min",
                start_color=GREEN,
                mid_type="num",
                mid_value=1,
                mid_color=WHITE,
                end_type="max",
                end_color=RED,
            ),
        )
    return ws


def _as_number(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v) if v else v
        except ValueError:
            return v
    return v


def _workbook(outdir: str, c: Comparison, plots: List[str]) -> str:
    """compare.xlsx: the headline ratios, per entry and per layer, the box plots, the Info sheet last."""
    from openpyxl import Workbook
    from openpyxl.drawing.image import Image

    header_lines, rows, findings, entry_rows, layer_rows = c.header, c.rows, c.findings, c.entry_rows, c.layer_rows
    wb = Workbook()
    info = wb.active
    info.title = "Info"
    for i, line in enumerate(list(header_lines) + list(findings), start=1):
        xlsx_text(info.cell(row=i, column=1), line)
    info.column_dimensions["A"].width = 140
    _sheet(wb, "Compare", ROW_COLUMNS, [row_cells(r, _plain) for r in rows], ratio_col=ROW_COLUMNS.index("ratio") + 1)
    if entry_rows:
        _sheet(
            wb,
            "Per entry",
            ENTRY_COLUMNS,
            [entry_cells(r, _plain) for r in entry_rows],
            ratio_col=ENTRY_COLUMNS.index("ratio") + 1,
        )
        _sheet(
            wb,
            "Per layer",
            ENTRY_COLUMNS,
            [entry_cells(r, _plain) for r in layer_rows],
            ratio_col=ENTRY_COLUMNS.index("ratio") + 1,
        )
    if plots:
        ws = wb.create_sheet(title="Box plots")
        for i, png in enumerate(plots):
            ws.add_image(Image(png), "A%d" % (1 + 22 * i))
    wb.move_sheet(info, offset=len(wb.sheetnames) - 1)
    wb.active = 0
    path = os.path.join(outdir, XLSX)
    wb.save(path)
    return path


def write(outdir: str, c: Comparison) -> List[str]:
    """Write every output of a comparison into outdir (made if need be); returns the paths."""
    prepare_outdir(outdir)
    c.location = outdir
    header_lines, rows, findings, metrics = c.header, c.rows, c.findings, c.metrics
    configs, what, entry_rows, layer_rows = c.names, c.what, c.entry_rows, c.layer_rows
    written = []
    text = "\n".join(safe_text(line) for line in list(header_lines) + table_lines(rows) + list(findings)) + "\n"
    written.append(write_whole(os.path.join(outdir, LOG), text))
    written.append(write_whole(os.path.join(outdir, CSV), csv_document([ROW_COLUMNS] + [row_cells(r) for r in rows])))
    if entry_rows:
        written.append(
            write_whole(
                os.path.join(outdir, ENTRIES),
                csv_document(
                    [ENTRY_COLUMNS] + [entry_cells(r) for r in entry_rows] + [entry_cells(r) for r in layer_rows]
                ),
            )
        )

    plots = box_plots(metrics, configs, outdir, what)
    written.extend(plots)

    written.append(write_html(outdir, c, plots))
    path = _workbook(outdir, c, plots)
    written.append(path)
    return written


def write_html(outdir: str, c: Comparison, plots: Sequence[str]) -> str:
    """compare.html: one file with the findings, the ratios and their intervals, and the box plots inline."""
    import base64
    from html import escape

    rows = []
    for r in c.rows:
        d = r.stats
        ratio = "" if r.ratio is None else "%.3f" % r.ratio
        if r.ci_low is not None and r.ci_high is not None:
            ratio += " (%.3f to %.3f)" % (r.ci_low, r.ci_high)
        rows.append(
            "<tr><td class=t>%s</td><td class=t>%s</td><td>%d</td><td>%.4f</td><td>%.4f</td><td>%.4f</td>"
            "<td>%s</td></tr>"
            % (escape("%s (%s)" % (r.metric, r.unit)), escape(r.config), d.n, d.mean, d.median, d.std, escape(ratio))
        )
    images = []
    for png in plots:
        with open(png, "rb") as image:
            images.append(
                '<img alt="%s" src="data:image/png;base64,%s">'
                % (escape(os.path.basename(png)), base64.b64encode(image.read()).decode("ascii"))
            )
    page = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>nnprofile compare</title>
<style>body{font:14px/1.45 system-ui,sans-serif;max-width:1400px;margin:0 auto;padding:16px 24px}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #e6e9f0;padding:3px 8px;text-align:right}
td.t,th.t{text-align:left}th{background:#f3f5f9}li{margin:3px 0}img{margin:8px 8px 0 0;border:1px solid #e6e9f0}</style>
</head><body><h1>nnprofile compare</h1>
<div>%s</div><h2>Findings</h2><ul>%s</ul><h2>Ratios to the first, with 95%% confidence intervals</h2>
<table><tr><th class=t>metric</th><th class=t>configuration</th><th>n</th><th>mean</th><th>median</th><th>std</th>
<th>ratio to first (95%% CI)</th></tr>%s</table><h2>Box plots</h2><div>%s</div></body></html>
""" % (
        "".join("<p>%s</p>" % escape(line) for line in c.header),
        "".join("<li>%s</li>" % escape(f) for f in c.findings),
        "".join(rows),
        "".join(images),
    )
    path = os.path.join(outdir, HTML)
    with open(path, "w", encoding="utf-8") as out:
        out.write(page)
    return path


views.register("comparison_write", lambda args: write(args[1], args[0]))
