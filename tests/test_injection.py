"""Names from shared project files are shown as text everywhere: never a formula in a spreadsheet."""

import pytest
import csv

import openpyxl

from conftest import LENET, run_cli

EVIL = '=HYPERLINK("http://x.invalid","click")'
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _renamed_lenet(tmp_path):
    import os

    text = open(LENET).read()
    digits = os.path.join(os.path.dirname(LENET), "digits")
    for name in ("training", "validation"):
        text = text.replace('uri: "digits/%s.csv"' % name, 'uri: "%s"' % os.path.join(digits, name + ".csv"))
    escaped = EVIL.replace('"', '\\"')
    assert '"Convolution_2"' in text
    path = tmp_path / "evil.nntxt"
    path.write_text(text.replace('"Convolution_2"', '"%s"' % escaped))
    return path


@pytest.mark.slow
def test_a_layer_named_like_a_formula_stays_text_in_every_output(tmp_path):
    out = tmp_path / "out"
    proc = run_cli(str(_renamed_lenet(tmp_path)), "--runs", "1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "forward_function (%s : Convolution)" % EVIL in (out / "profile.log").read_text()

    wb = openpyxl.load_workbook(out / "profile.xlsx")
    seen = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", "%s!%s holds a formula: %r" % (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and EVIL in cell.value:
                    seen += 1
    assert seen >= 4  # the section sheets' entries and layer tables, the Summary's top layers

    for name in ("profile.csv", "profile_detail.csv", "summary.csv"):
        with open(out / name, newline="") as f:
            cells = [c for row in csv.reader(f) for c in row]
        assert not [c for c in cells if c.startswith(FORMULA_STARTS)], name
        if name != "profile.csv":
            assert "'" + EVIL in cells, name  # neutralised as OWASP advises: a leading quote
    run_cli("compare", str(out), str(out), "-o", str(tmp_path / "cmp"))
    with open(tmp_path / "cmp" / "compare_entries.csv", newline="") as f:
        assert not [c for row in csv.reader(f) for c in row if c.startswith(FORMULA_STARTS)]
    for ws in openpyxl.load_workbook(tmp_path / "cmp" / "compare.xlsx").worksheets:
        assert all(cell.data_type != "f" for row in ws.iter_rows() for cell in row)
