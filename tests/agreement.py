"""Check that one output folder's log, CSV files and workbook agree entry for entry."""

import csv

import openpyxl

from nnprofile.render.log import ENTRY_LINE


def parse_log(text):
    """[(section title, [(label, figure string)])] in log order."""
    sections = []
    for line in text.splitlines():
        if line.startswith("Profiling ") and line.endswith(" ..."):
            sections.append((line[len("Profiling ") : -len(" ...")], []))
            continue
        m = ENTRY_LINE.match(line)
        if m and sections:
            sections[-1][1].append((m.group("label"), m.group("ms")))
    return sections


def check_outputs_agree(outdir):
    """Assert agreement; returns the parsed log sections."""
    sections = parse_log((outdir / "profile.log").read_text())
    assert sections, "no sections in the log"
    for title, entries in sections:
        labels = [l for l, _ in entries]
        assert len(labels) == len(set(labels)), "duplicate labels in %s" % title

    with open(outdir / "profile.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert [h.replace(" (incomplete)", "") for h in rows[0]] == ["time in ms"] + [t for t, _ in sections]
    first = sections[0][1]
    assert [(r[0], r[1]) for r in rows[1 : len(first) + 1]] == first
    for col, (_, entries) in enumerate(sections, start=1):
        assert [(r[0], r[col]) for r in rows[1:] if r[col] != ""] == entries

    with open(outdir / "profile_detail.csv", newline="") as f:
        detail = list(csv.DictReader(f))
    expected = [(title, label, figure) for title, entries in sections for label, figure in entries]
    assert [(r["section"], r["label"], r["mean_ms"]) for r in detail] == expected

    wb = openpyxl.load_workbook(outdir / "profile.xlsx")
    extra = (2 if "Summary" in wb.sheetnames else 1) + ("Chart data" in wb.sheetnames)
    assert len(wb.worksheets) == len(sections) + extra and wb.sheetnames[-1] in ("Info", "Chart data")
    sheets = [ws for ws in wb.worksheets if ws.title not in ("Summary", "Info", "Chart data")]
    for ws, (_, entries) in zip(sheets, sections):
        values = [(ws.cell(row=i, column=1).value, ws.cell(row=i, column=2).value) for i in range(2, len(entries) + 2)]
        assert [l for l, _ in values] == [l for l, _ in entries]
        assert ws.cell(row=len(entries) + 2, column=1).value is None
        for (_, number), (_, figure) in zip(values, entries):
            assert isinstance(number, (int, float))
            assert "%f" % number == figure
        rows_fb = [
            i + 2 for i, (label, _) in enumerate(entries) if label.startswith(("forward_function", "backward_function"))
        ]
        if rows_fb:
            ranges = [str(cf.sqref) for cf in ws.conditional_formatting]
            want = "B%d" % rows_fb[0] if rows_fb[0] == rows_fb[-1] else "B%d:B%d" % (rows_fb[0], rows_fb[-1])
            assert ranges == [want]
    return sections
