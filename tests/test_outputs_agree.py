"""The log, profile.csv, profile_detail.csv and profile.xlsx of one real run agree."""

import csv

import openpyxl
import pytest

from conftest import LENET, run_cli
from agreement import check_outputs_agree, parse_log


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("agree")
    proc = run_cli(LENET, "-o", str(out), "--runs", "3")
    assert proc.returncode == 0, proc.stderr
    log = (out / "profile.log").read_text()
    return out, proc.stdout, parse_log(log), log


@pytest.mark.slow
def test_outputs_agree(run):
    check_outputs_agree(run[0])


def test_printed_text_is_the_log_file(run):
    """What is printed is the log, then where it was written, every file named."""
    out, stdout, _, log = run
    printed, _, last = stdout.rstrip("\n").rpartition("\n")
    assert printed + "\n" == log
    assert last.startswith("Written to %s: " % out) and "report.html" in last and "result.json" in last


def test_log_has_training_and_inference_sections(run):
    _, _, sections, _ = run
    assert [t for t, _ in sections] == [
        "optimizer 'Optimizer' with network 'Main'",
        "executor 'Executor' with network 'MainRuntime'",
    ]
    for _, entries in sections:
        labels = [l for l, _ in entries]
        assert len(labels) == len(set(labels))


def test_profile_csv_has_a_column_per_section_and_the_log_figures(run):
    out, _, sections, _ = run
    with open(out / "profile.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["time in ms"] + [t for t, _ in sections]
    # The first section's rows come first, one per entry, in log order.
    first = sections[0][1]
    assert [(r[0], r[1]) for r in rows[1 : len(first) + 1]] == first
    for col, (_, entries) in enumerate(sections, start=1):
        column = [(r[0], r[col]) for r in rows[1:] if r[col] != ""]
        assert column == entries


def test_detail_csv_rows_follow_the_log(run):
    out, _, sections, _ = run
    with open(out / "profile_detail.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    expected = [(title, label, figure) for title, entries in sections for label, figure in entries]
    assert [(r["section"], r["label"], r["mean_ms"]) for r in rows] == expected
    for r in rows:
        assert r["runs"] == "3"
        assert float(r["min_ms"]) <= float(r["median_ms"]) <= float(r["max_ms"])
        assert float(r["min_ms"]) <= float(r["mean_ms"]) <= float(r["max_ms"])


def test_xlsx_sheets_hold_the_log_entries_as_numbers(run):
    out, _, sections, _ = run
    wb = openpyxl.load_workbook(out / "profile.xlsx")
    assert [n for n in wb.sheetnames if n != "Chart data"][-1] == "Info"
    for ws, (_, entries) in zip(_sections(wb), sections):
        assert ws["A1"].value == "entry" and ws["B1"].value == "time (ms)"
        assert ws.freeze_panes == "B2"
        values = [
            (ws.cell(row=i, column=1).value, ws.cell(row=i, column=2).value)
            for i in range(2, ws.max_row + 1)
            if ws.cell(row=i, column=1).value
        ]
        assert [l for l, _ in values] == [l for l, _ in entries]
        for (_, number), (_, figure) in zip(values, entries):
            assert isinstance(number, float)
            assert "%f" % number == figure


def test_xlsx_colour_scale_covers_exactly_forward_to_backward(run):
    out, _, sections, _ = run
    wb = openpyxl.load_workbook(out / "profile.xlsx")
    for ws, (_, entries) in zip(_sections(wb), sections):
        rows = [
            i + 2 for i, (label, _) in enumerate(entries) if label.startswith(("forward_function", "backward_function"))
        ]
        ranges = [str(cf.sqref) for cf in ws.conditional_formatting]
        assert ranges == ["B%d:B%d" % (rows[0], rows[-1])]
        rules = [r for cf in ws.conditional_formatting for r in cf.rules]
        assert [r.type for r in rules] == ["colorScale"]
        assert "Chart " + ws.title in wb.sheetnames  # its chart: a sheet of its own
    # what it opens on: the step's summary (its parts, top layers, other's lines, advice), then the charts
    assert wb.sheetnames[0] == "Summary" and wb.active.title == "Summary" and wb.sheetnames[1].startswith("Chart ")


def _sections(wb):
    """The sections' sheets, in order (the Summary first, the charts and the Info sheet aside)."""
    return [ws for ws in wb.worksheets if ws.title not in ("Summary", "Info", "Chart data")]
