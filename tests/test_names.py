"""Names are data in every output, whatever they hold: arbitrary Unicode (control characters, NUL, line breaks,
escape sequences, formula prefixes after whitespace, apostrophes, brackets) as a layer, a graph, an optimizer
and an iterator's name, through every renderer and read back (Hypothesis).

- the log: one entry one line, every entry line parses, no control character but the line ends;
- CSV: as many rows as entries (a CR or LF starts no row), no cell a spreadsheet reads as a formula;
- the workbook: opens, its sheet names are Excel's (no ``[]:*?/\\``, no apostrophe at either end), names text;
- the HTML report and the notebook's view: no script but the report's own; the trace: JSON that loads;
- result.json: the names back exactly as they were.
"""

import csv
import gzip
import io
import json
import re

import openpyxl
from hypothesis import HealthCheck, given, settings, strategies as st

from nnprofile.render import render
from nnprofile.render.log import ENTRY_LINE
from nnprofile.render.safe import FORMULA_STARTS, csv_cell, safe_text, sheet_name
from nnprofile.result import Entry, Profile, Section, file as result_file

NAMES = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=24) | st.sampled_from(
    [
        "\r=2+2",
        '\n=HYPERLINK("x")',
        " \t=1+1",
        "\x00",
        "'quoted'",
        "..",
        "[a]:*?/\\",
        "\x1b[2J",
        "\u2028x",
        "\nforward_all 999.000000(ms)\nProfile Completed.",
        "</script><script>alert(1)</script>",
        "",
        " ",
    ]
)


def _profile(layer, graph, optimizer, iterator):
    f = Entry(
        "forward_function (%s : Affine)" % layer,
        "forward_function",
        [2e6, 2e6],
        layer=layer,
        layer_id=0,
        layer_type="Affine",
        impl_class="Affine",
        round_sizes=[1, 1],
        source="train.py:%s" % layer,
    )
    b = Entry(
        "backward_function (%s : Affine)" % layer,
        "backward_function",
        [3e6, 3e6],
        layer=layer,
        layer_id=0,
        layer_type="Affine",
        impl_class="Affine",
        round_sizes=[1, 1],
    )
    whole = [
        Entry("forward_all", "forward_all", [2.2e6, 2.2e6], round_sizes=[1, 1]),
        Entry("backward_all", "backward_all", [3.1e6, 3.1e6], round_sizes=[1, 1]),
    ]
    g = Section(
        "graph",
        graph,
        "",
        [f, b] + whole,
        complete=True,
        info={
            "graph": graph,
            "trained_by": [optimizer],
            "forward_per_step": 1,
            "backward_per_step": 1,
            "role": "trained",
        },
    )
    script = Section(
        "script",
        optimizer,
        "",
        [
            Entry("load_dataset (%s)" % iterator, "load_dataset", [1e5, 1e5], round_sizes=[1, 1]),
            Entry("update (%s)" % optimizer, "update", [1e6, 1e6], round_sizes=[1, 1]),
            Entry("step", "step", [8e6, 8e6], round_sizes=[1, 1]),
        ],
        complete=True,
    )
    return Profile(
        header={"project": graph, "nnprofile": "0", "context": "cpu:float", "mode": "record", "kind": "program"},
        notes=["note %s" % layer],
        sections=[g, script],
        complete=True,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer=NAMES, graph=NAMES, optimizer=NAMES, iterator=NAMES)
def test_any_name_stays_data_in_every_output(layer, graph, optimizer, iterator):
    profile = _profile(layer, graph, optimizer, iterator)
    out = render(profile)
    entries = [e for s in profile.sections for e in s.entries]

    log = out["profile.log"]
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u0085]", log)  # no control character but LF
    labels = [safe_text(e.label) for e in entries]
    parsed = [m.group("label") for m in map(ENTRY_LINE.match, log.splitlines()) if m]
    assert [x for x in parsed if x in labels] == labels  # each entry on one line of its own, in order
    assert log.splitlines().count("Profile Completed.") == 1 and log.splitlines()[-1] == "Profile Completed."

    for name in ("profile.csv", "profile_detail.csv", "summary.csv"):
        rows = list(csv.reader(io.StringIO(out[name])))
        assert len(rows) == out[name].count("\n") - _quoted_breaks(out[name]), name
        for row in rows:
            for cell in row:
                assert (
                    not cell.lstrip(" \t\r\n\x0b\x0c").startswith(("=", "+", "-", "@"))
                    or cell.startswith("'")
                    or _number(cell)
                ), (name, cell)
    detail = list(csv.DictReader(io.StringIO(out["profile_detail.csv"])))
    assert len(detail) == len(entries)

    book = openpyxl.load_workbook(io.BytesIO(out["profile.xlsx"]))
    for title in book.sheetnames:
        assert title == sheet_name(title) and 0 < len(title) <= 31 and not title.startswith("'")

    page = out["report.html"]
    assert page.lower().count("<script") == _scripts_of_the_report()
    assert profile._repr_html_().lower().count("<script") == 0
    if "trace.json.gz" in out:
        json.loads(gzip.decompress(out["trace.json.gz"]))

    again = result_file.from_dict(json.loads(result_file.dumps(profile)))
    assert [e.label for s in again.sections for e in s.entries] == [e.label for e in entries]
    assert [s.name for s in again.sections] == [graph, optimizer]


_CONTROL = "[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u0085\u200b-\u200f\u202a-\u202e\u2066-\u2069]"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layer=NAMES, graph=NAMES, optimizer=NAMES)
def test_any_name_stays_data_in_the_gate_s_text_markdown_and_junit(layer, graph, optimizer):
    """``nnprofile check``'s outputs say what the log says of a name: no control, bidi or zero-width character, one
    table row a verdict in Markdown (a name's ``|`` or newline splits no row, its ``[x](y)`` links nowhere), and XML
    that parses."""
    import xml.etree.ElementTree as ET

    from nnprofile.compare.gate import check
    from nnprofile.render import verdicts

    base, new = _profile(layer, graph, optimizer, "data"), _profile(layer, graph, optimizer, "data")
    for s in new.sections:
        for e in s.entries:
            e.samples_ns = [x * 1.5 for x in e.samples_ns]
    c = check(base, new, layers=True)
    for text in (verdicts.text(c), verdicts.markdown(c)):
        assert not re.search(_CONTROL, text)
    table = [line for line in verdicts.markdown(c).splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(c.verdicts)
    assert all(len(re.findall(r"(?<!\\)\|", row)) == len(verdicts.HEAD) + 1 for row in table)
    assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", verdicts.markdown(c))  # no link made of a name
    suite = ET.fromstring(verdicts.junit(c))
    assert len(suite.findall("testcase")) == len(c.verdicts) + 2


def _number(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _quoted_breaks(text):
    """Line ends inside quoted cells (not row ends)."""
    inside, n = False, 0
    for c in text:
        if c == '"':
            inside = not inside
        elif c == "\n" and inside:
            n += 1
    return n


_SCRIPTS = []


def _scripts_of_the_report():
    if not _SCRIPTS:
        _SCRIPTS.append(render(_profile("a", "b", "c", "d"))["report.html"].lower().count("<script"))
    return _SCRIPTS[0]


def test_a_csv_cell_is_quoted_where_it_holds_a_control_character_and_a_formula_is_neutralised():
    assert csv_cell("\r=2+2") == '"\'\r=2+2"'
    assert csv_cell(" \t=1+1") == '"\' \t=1+1"'
    assert csv_cell("a\x00b") == "a\\x00b"
    assert csv_cell("plain") == "plain" and csv_cell(1.5) == "1.5"
    assert list(csv.reader(io.StringIO(csv_cell("x\ry") + ",next\n"))) == [["x\ry", "next"]]
    assert all(csv_cell(p + "1").startswith(("'", "\"'")) for p in FORMULA_STARTS)


def test_a_sheet_name_is_one_excel_takes():
    assert sheet_name("'quoted'") == "quoted" and sheet_name("[a]:*?/\\") == "_a______"
    assert sheet_name("") == "Sheet" and sheet_name("x" * 40) == "x" * 31
    assert sheet_name("Info", ["info"]) == "Info (2)" and sheet_name("History") == "History (2)"
