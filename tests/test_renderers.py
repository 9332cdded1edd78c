"""Every renderer over one hand-built profile, whose figures are known exactly."""

import csv

import openpyxl
import pytest

from nnprofile.render import csv_files, log, write_all, xlsx
from nnprofile.result import Entry, Profile, Section


def _layer(phase, layer, ltype, samples, cls=None, flops=None):
    return Entry(
        label="%s (%s : %s)" % (phase, layer, cls or ltype),
        phase=phase,
        samples_ns=samples,
        layer=layer,
        layer_type=ltype,
        impl_class=cls or ltype,
        flops=flops,
        bytes_read=4000,
        bytes_written=1000,
        output_shape="64x10",
        params=100,
    )


@pytest.fixture
def profile():
    train = Section(
        kind="optimizer",
        name="Optimizer",
        network="Main",
        complete=True,
        entries=[
            Entry(label="load_dataset", phase="load_dataset", samples_ns=[1_000_000, 3_000_000]),
            _layer("forward_function", "Affine", "Affine", [2_500_000], flops=5_000_000),
            _layer("forward_function", "Affine_2", "Mystery", [500, 1500]),
            Entry(label="prepare_backward", phase="prepare_backward", samples_ns=[100]),
            _layer("backward_function", "Affine_2", "Mystery", [4_000]),
            _layer("backward_function", "Affine", "Affine", [1_234_567], flops=10_000_000),
            Entry(label="forward_all", phase="forward_all", samples_ns=[3_000_000]),
            Entry(label="backward_all", phase="backward_all", samples_ns=[2_000_000]),
            Entry(label="update (Adam)", phase="update", samples_ns=[7_000_000, 9_000_000, 8_000_000]),
        ],
    )
    infer = Section(
        kind="executor",
        name="Executor",
        network="MainRuntime",
        complete=True,
        entries=[
            Entry(label="load_dataset", phase="load_dataset", samples_ns=[2_000_000]),
            _layer("forward_function", "Affine", "Affine", [1_000_000], flops=5_000_000),
            Entry(label="forward_all", phase="forward_all", samples_ns=[5_000_000]),
        ],
    )
    return Profile(
        header={
            "nnprofile": "0",
            "nnabla": "1.39.0",
            "project": "p.nntxt",
            "context": "cpu:float",
            "sampling": "fixed",
            "mode": "isolated",
            "target_rse": 0.02,
            "clock": "fake",
            "clock_resolution_ns": 40,
            "timing_overhead_ns": 80.0,
        },
        notes=["a note"],
        sections=[train, infer],
        complete=True,
    )


def test_log_text_is_exact(profile):
    assert log.render(profile).splitlines() == [
        "nnprofile 0 (nnabla 1.39.0): p.nntxt",
        "Context: cpu:float",
        # the answer first: the step, its top layers sorted, their types, the first advice; the inference pass
        "Step of optimizer 'Optimizer' with network 'Main': 15.000 ms = input 2.000 ms (13.3%) + forward 3.000 ms "
        "(20.0%) + backward 2.000 ms (13.3%) + update 8.000 ms (53.3%) + monitor 0.000 ms (0.0%) +",
        "  other 0.000 ms (0.0%)",  # (a line of nnprofile's own words is at most 200 characters)
        "Top layers by time a step:",
        "    #  layer     type         forward     backward    ms a step     of it",  # the columns it sorts by
        "    1  Affine    Affine        2.5000       1.2346       3.7346     24.9%",
        "    2  Affine_2  Mystery       0.0010       0.0040       0.0050      0.0%",
        "By layer type (layers): Affine 24.9% (1), Mystery 0.0% (1)",
        "First advice: The solver update is a large part of the step: a network with many parameters and little "
        "computation; a simpler solver (SGD, Momentum) or larger batches help.",
        "Inference pass of executor 'Executor' with network 'MainRuntime': 5.000 ms",
        "Top layers by time a pass:",
        "    #  layer   type      ms a pass     of it",
        "    1  Affine  Affine       1.0000     20.0%",
        "By layer type (layers): Affine 20.0% (1)",
        "Note: a note",
        "Profiling optimizer 'Optimizer' with network 'Main' ...",
        "load_dataset 2.000000(ms)",
        "forward_function (Affine : Affine) 2.500000(ms)",
        "forward_function (Affine_2 : Mystery) 0.001000(ms)",
        "prepare_backward 0.000100(ms)",
        "backward_function (Affine_2 : Mystery) 0.004000(ms)",
        "backward_function (Affine : Affine) 1.234567(ms)",
        "forward_all 3.000000(ms)",
        "backward_all 2.000000(ms)",
        "update (Adam) 8.000000(ms)",
        "Coverage: the forward_function entries add up to 2.501000 ms, 83.4% of forward_all (3.000000 ms)",
        "Coverage: the backward_function entries add up to 1.238567 ms, 61.9% of backward_all (2.000000 ms)",
        "Missed the 2% target (time budget spent): load_dataset (50.0%), "
        "forward_function (Affine_2 : Mystery) (50.0%),",
        "  update (Adam) (7.2%). Their figures are less sure than the rest (the relative error in brackets);",
        "  for tighter ones give the section more time (--max-seconds 5) or profile in fresh processes (--repeat 3)",
        "Too few samples for a relative error (one sample, or all in one round): forward_function (Affine : Affine), "
        "prepare_backward, backward_function (Affine_2 : Mystery),",
        "  backward_function (Affine : Affine), forward_all, backward_all",
        "FLOPs not counted (no formula for): Mystery",
        # step = 2 (input) + 3 (forward_all) + 2 (backward_all) + 8 (update) + 0.0001 (prepare_backward)
        "Step: 15.000 ms = input 2.000 ms (13.3%) + forward 3.000 ms (20.0%) + backward 2.000 ms (13.3%) "
        "+ update 8.000 ms (53.3%) + monitor 0.000 ms (0.0%) + other 0.000 ms (0.0%)",
        "Half precision: 0 of 2 functions",
        "Top layers (forward + backward): Affine 3.735 ms (24.9%), Affine_2 0.005 ms (0.0%)",
        "Advice: The solver update is a large part of the step: a network with many parameters and little computation;",
        "  a simpler solver (SGD, Momentum) or larger batches help. Evidence: update (and weight decay) take 8.000 ms, "
        "53.3% [42.3%, 64.4%] of the step (threshold 20.0%).",
        "Profiling executor 'Executor' with network 'MainRuntime' ...",
        "load_dataset 2.000000(ms)",
        "forward_function (Affine : Affine) 1.000000(ms)",
        "forward_all 5.000000(ms)",
        "Coverage: the forward_function entries add up to 1.000000 ms, 20.0% of forward_all (5.000000 ms)",
        "Too few samples for a relative error (one sample, or all in one round): load_dataset, "
        "forward_function (Affine : Affine), forward_all",
        "About this run:",
        "Timing: isolated mode (each function re-run on its own); fixed",
        "Clock: fake, smallest step 40 ns; timing one sample costs 80 ns, taken off every figure; "
        "calls under 8 us are timed in batches",
        "Profile Completed.",
    ]


def test_the_answers_table_takes_top_sort_and_layer_types(profile):
    from nnprofile.render.answer import View

    lines = log.render(profile, view=View(top=1, sort="name", group_by="type")).splitlines()
    assert lines[4:8] == [  # its title says what it is sorted by (it said "by time a step" once)
        "Layer types by name (the first 1):",
        "    #  layer type  layers      forward     backward    ms a step     of it",
        "    1  Affine           1       2.5000       1.2346       3.7346     24.9%",
        "  (1 more type; --top N shows more)",
    ]
    lines = log.render(profile, view=View(sort="backward")).splitlines()
    assert "Top layers by backward time a step:" in lines
    assert "Top layers by time a pass (no backward time in a pass: sorted by time):" in lines


def test_graph_mode_header_names_the_hook_cost(profile):
    profile.header.mode, profile.header.hook_overhead_ns = "graph", 4850.0
    lines = log.render(profile).splitlines()
    at = lines.index("About this run:")
    assert lines[at + 1].startswith("Timing: graph mode (each function timed inside whole forward and backward passes)")
    assert lines[at + 3] == (
        "Hooks: NNabla's function hooks add 4.85 us per function to a pass, 0 us of it inside the "
        "function's own time; measured on a chain of 200 tiny functions and taken off every function"
    )


def test_incomplete_profile_says_so(profile):
    profile.complete = False
    profile.failure = "interrupted by Ctrl-C"
    assert log.render(profile).splitlines()[-1] == "Profile incomplete: interrupted by Ctrl-C."


def test_profile_csv_merges_sections_as_nnc_does(profile):
    rows = csv_files.profile_rows(profile)
    assert rows[0] == [
        "time in ms",
        "optimizer 'Optimizer' with network 'Main'",
        "executor 'Executor' with network 'MainRuntime'",
    ]
    assert rows[1] == ["load_dataset", "2.000000", "2.000000"]
    assert rows[2] == ["forward_function (Affine : Affine)", "2.500000", "1.000000"]
    assert rows[3] == ["forward_function (Affine_2 : Mystery)", "0.001000", ""]
    assert rows[7] == ["forward_all", "3.000000", "5.000000"]
    assert len(rows) == 1 + 9


def test_detail_csv_statistics(profile):
    rows = csv_files.detail_rows(profile)
    header, update = rows[0], rows[9]
    record = dict(zip(header, update))
    assert record["label"] == "update (Adam)"
    assert record["mean_ms"] == "8.000000"
    assert record["median_ms"] == "8.000000"
    assert record["std_ms"] == "1.000000"
    assert record["min_ms"] == "7.000000" and record["max_ms"] == "9.000000"
    assert record["p90_ms"] == "8.800000"
    assert record["runs"] == 3
    assert record["rse"] == "%.4f" % (1 / 3**0.5 / 8)


def test_xlsx_layout(profile, tmp_path):
    write_all(profile, str(tmp_path), formats=["xlsx"], save_result=False)
    wb = openpyxl.load_workbook(tmp_path / "profile.xlsx")
    # the step's summary first, what the workbook opens on; each section's chart on a sheet of its own
    assert wb.sheetnames == [
        "Summary",
        "Chart Optimizer Main",
        "Chart Executor MainRuntime",
        "Optimizer Main",
        "Executor MainRuntime",
        "Info",
        "Chart data",
    ]
    assert wb.active.title == "Summary"
    ws = wb["Optimizer Main"]
    assert [c.value for c in ws["B"]][1:] == [2.0, 2.5, 0.001, 0.0001, 0.004, 1.234567, 3.0, 2.0, 8.0]
    assert ws["B2"].number_format == "0.000000"
    assert ws.column_dimensions["A"].width >= len("backward_function (Affine_2 : Mystery)")
    assert [str(cf.sqref) for cf in ws.conditional_formatting] == ["B3:B7"]
    # the per-layer table behind the chart, on its own sheet: forward order, forward and backward times
    data = wb["Chart data"]
    table = [[data.cell(row=r, column=c).value for c in range(1, 4)] for r in range(2, 5)]
    assert table == [["layer", "forward (ms)", "backward (ms)"], ["Affine", 2.5, 1.234567], ["Affine_2", 0.001, 0.004]]
    assert max(c.column for row in ws.iter_rows() for c in row if c.value is not None) == len(
        xlsx.COLUMNS
    )  # nothing beside
    inference = wb["Executor MainRuntime"]
    assert [str(cf.sqref) for cf in inference.conditional_formatting] == [
        "B3"
    ]  # one row: openpyxl writes a single cell
    assert data.cell(row=2, column=7).value is None  # the second block: no backward column
    # It prints one page wide, its header row on every page.
    assert (
        ws.page_setup.fitToHeight == 0 and ws.sheet_properties.pageSetUpPr.fitToPage and ws.print_title_rows == "$1:$1"
    )
    # a printed page holds the narrow set of columns, entry to relative error (25 on a page are unreadable)
    assert ws.print_area.endswith("$I$10") and xlsx.COLUMNS[xlsx.PRINTED - 1] == "rel. std. error"
    assert ws.page_setup.fitToWidth in (None, 1)  # one page wide (1 is the file format's default, left out)
    info = {r[0].value: r[1].value for r in wb["Info"].iter_rows()}
    assert info["status"] == "complete" and info["context"] == "cpu:float"


def test_every_renderer_handles_an_empty_profile(tmp_path):
    empty = Profile(header={}, complete=False, failure="nothing measured")
    paths = write_all(empty, str(tmp_path))
    assert sorted(p.rsplit("/", 1)[-1] for p in paths) == [
        "profile.csv",
        "profile.log",
        "profile.xlsx",
        "profile_detail.csv",
        "report.html",
        "result.json",
        "summary.csv",
    ]  # no timeline: no trace.json.gz
    with open(tmp_path / "profile.csv", newline="") as f:
        assert list(csv.reader(f)) == [["time in ms"]]
    wb = openpyxl.load_workbook(tmp_path / "profile.xlsx")
    assert wb.sheetnames == ["Info"]


def test_sheet_names_are_unique_and_valid():
    sections = [Section(kind="optimizer", name="A/B:C" * 10, network="N") for _ in range(3)]
    names = xlsx.sheet_names(Profile(sections=sections))
    assert len(set(names)) == 3
    assert all(len(n) <= 31 and not set(n) & set("[]:*?/\\") for n in names)


def test_work_figures_in_detail_csv(profile):
    rows = csv_files.detail_rows(profile)
    header = rows[0]
    records = [dict(zip(header, r)) for r in rows[1:]]
    affine = records[1]
    assert affine["label"] == "forward_function (Affine : Affine)"
    assert affine["flops"] == 5_000_000
    assert affine["gflops_per_s"] == "2.000"  # 5e6 FLOP in 2.5 ms
    assert affine["flop_per_byte"] == "1000.000"  # 5e6 FLOP over 5,000 bytes
    mystery = records[2]
    assert mystery["flops"] == "unknown" and mystery["gflops_per_s"] == "unknown"
    assert records[0]["flops"] == ""  # load_dataset is no layer
    forward_all = records[6]
    assert forward_all["coverage"] == "%.4f" % (2.501 / 3.0)


def test_work_figures_in_xlsx(profile, tmp_path):
    write_all(profile, str(tmp_path), formats=["xlsx"], save_result=False)
    ws = openpyxl.load_workbook(tmp_path / "profile.xlsx")["Optimizer Main"]
    header = [c.value for c in ws[1]][: len(xlsx.COLUMNS)]
    row = dict(zip(header, [c.value for c in ws[3]]))
    assert row["FLOPs"] == 5_000_000 and row["GFLOP/s"] == pytest.approx(2.0)
    assert dict(zip(header, [c.value for c in ws[4]]))["FLOPs"] == "unknown"


def test_rendering_computes_each_entrys_statistics_once(tmp_path, monkeypatch):
    """Rendering cost grows linearly with the entries (it once grew with their square)."""
    import nnprofile.result.model as result_module

    calls = []
    real = result_module.summarize_undisturbed
    monkeypatch.setattr(result_module, "summarize_undisturbed", lambda *a: calls.append(1) or real(*a))
    entries = [
        _layer(phase, "L%d" % i, "Affine", [1000 + i, 2000], flops=10)
        for i in range(300)
        for phase in ("forward_function", "backward_function")
    ]
    entries += [
        Entry(label="forward_all", phase="forward_all", samples_ns=[5000]),
        Entry(label="backward_all", phase="backward_all", samples_ns=[5000]),
    ]
    section = Section(kind="optimizer", name="O", network="N", complete=True, entries=entries)
    write_all(Profile(header={"target_rse": 0.02}, sections=[section], complete=True), str(tmp_path))
    assert len(calls) == len(entries)


def test_every_file_a_renderer_writes_is_guarded_as_an_output():
    """A file a renderer writes is one nnprofile refuses to write through a symbolic link (``OUTPUT_NAMES``): a name
    missing there once left ranks.csv, rank_steps.csv and windows.csv unguarded."""
    from nnprofile.render import RENDERERS
    from nnprofile.render.files import OUTPUT_NAMES

    assert {f for r in RENDERERS.values() for f in r.WRITES} <= OUTPUT_NAMES


def test_a_step_that_trains_nothing_has_no_backward_column_nor_sorts_by_it():
    from nnprofile.result.paired import LayerTime
    from nnprofile.render.answer import View, table, title

    layers = [LayerTime("conv", "Convolution", 3.0, 0.0, None), LayerTime("fc", "Affine", 1.0, 0.0, None)]
    rows = table(layers, 5.0, View(sort="time"))
    assert "backward" not in rows[0] and "forward" not in rows[0] and rows[0].endswith("ms a step     of it")
    assert title(View(sort="backward"), "step", True) == (
        "Top layers by time a step (no backward time in a step: sorted by time):"
    )
    trained = table([LayerTime("conv", "Convolution", 3.0, 1.0, None)], 5.0, View())
    assert "backward" in trained[0]
