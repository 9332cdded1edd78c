"""Comparisons: statistics and intervals on fixed samples, configurations, findings, the CLI."""

import csv
import math
import os
import subprocess
import sys

import openpyxl
import pytest

from conftest import FIXTURES, LENET, ROOT, run_cli
from nnprofile.compare.findings import findings
from nnprofile.compare.saved import compare_saved
from nnprofile.compare.configs import Config, parse_set
from nnprofile.compare.metrics import Metric, Row, metric_rows
from nnprofile.base.errors import ProfileError
from nnprofile.result import Entry, Profile, Section
from nnprofile.base.stats import summarize
from nnprofile.base.student import ratio_ci


def test_summarize():
    d = summarize([10.0, 12.0, 14.0, 20.0])
    assert (d.n, d.mean, d.median, d.min, d.max) == (4, 14.0, 13.0, 10.0, 20.0)
    assert d.std == pytest.approx(math.sqrt(((4**2) + 2**2 + 0 + 6**2) / 3))
    assert d.p90 == pytest.approx(14 + 0.7 * 6)


def test_ratio_interval_by_hand():
    # means 12 and 22, standard deviations 2 and 2, three values each.
    ratio, low, high = ratio_ci([10, 12, 14], [20, 22, 24])
    assert ratio == pytest.approx(22 / 12)
    va, vb = 4 / (3 * 12**2), 4 / (3 * 22**2)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    assert df == pytest.approx(3.0931, abs=1e-3)
    from scipy.stats import t

    half = t.ppf(0.975, df) * math.sqrt(va + vb)
    assert (low, high) == (pytest.approx(22 / 12 * math.exp(-half)), pytest.approx(22 / 12 * math.exp(half)))
    assert low < ratio < high
    assert math.log(ratio / low) == pytest.approx(math.log(high / ratio))  # symmetric on a log scale


def test_ratio_interval_edge_cases():
    assert ratio_ci([5.0], [10.0]) == (2.0, None, None)  # one run: no interval
    assert ratio_ci([5.0, 5.0], [10.0, 10.0]) == (2.0, 2.0, 2.0)  # no spread: a point
    wide = ratio_ci([1, 3], [1, 3])
    narrow = ratio_ci([1.9, 2.1] * 5, [1.9, 2.1] * 5)
    assert wide[0] == narrow[0] == 1.0
    assert (wide[2] - wide[1]) > (narrow[2] - narrow[1])  # more runs, tighter interval
    with pytest.raises(ValueError):
        ratio_ci([0.0, 0.0], [1.0, 2.0])


def test_parse_set():
    c = parse_set("type_config=half")
    assert (c.name, c.settings, c.arguments()) == (
        "type_config=half",
        {"type_config": "half"},
        ["--type-config", "half"],
    )
    c = parse_set("context=cudnn, batch_size=128")
    assert c.arguments() == ["--context", "cudnn", "--batch-size", "128"]
    assert "/" not in c.slug and " " not in c.slug
    for bad in ("type_config", "colour=red", "type_config=double", "batch_size=0", "batch_size=x"):
        with pytest.raises(ProfileError):
            parse_set(bad)


def test_metric_rows_take_ratios_to_the_first_configuration():
    m = Metric("training step", "ms", {"a": [10.0, 12.0, 14.0], "b": [20.0, 22.0, 24.0]})
    rows = metric_rows([m], ["a", "b"])
    assert [(r.config, r.stats.n, r.stats.mean, r.stats.median) for r in rows] == [
        ("a", 3, 12.0, 12.0),
        ("b", 3, 22.0, 22.0),
    ]
    assert rows[0].ratio == 1.0
    assert rows[1].ratio == pytest.approx(22 / 12)
    assert rows[1].ci_low == pytest.approx(ratio_ci([10, 12, 14], [20, 22, 24])[1])


def _row(config, ratio, low, high, metric="training step"):
    return Row(metric, "ms", config, summarize([1.0, 1.0, 1.0]), ratio, low, high)


def test_findings_say_slower_faster_or_no_difference():
    configs = [Config("float", {}), Config("half", {})]
    lines = findings([_row("float", 1, 1, 1), _row("half", 2.0, 1.8, 2.2)], configs, {})
    assert lines == ["training step: half is 2.000x float (95% CI 1.800 to 2.200): slower"]
    assert findings([_row("half", 0.5, 0.4, 0.6)], configs, {})[0].endswith("faster")
    assert findings([_row("half", 1.1, 0.9, 1.3)], configs, {})[0].endswith("no difference shown")


def test_cpu_half_advice_only_when_measured_on_the_cpu():
    configs = [Config("type_config=float", {}), Config("type_config=half", {})]
    slower = [_row("type_config=half", 3.0, 2.5, 3.5)]
    cpu = {"type_config=float": "cpu:float", "type_config=half": "cpu:half"}
    gpu = {"type_config=float": "cudnn:float", "type_config=half": "cudnn:half"}
    assert any(l.startswith("Advice: on the CPU") for l in findings(slower, configs, cpu))
    assert not any(l.startswith("Advice") for l in findings(slower, configs, gpu))
    not_shown = [_row("type_config=half", 1.05, 0.95, 1.15)]
    assert not any(l.startswith("Advice") for l in findings(not_shown, configs, cpu))


def _saved(scale):
    def e(label, phase, samples, layer=None):
        return Entry(label=label, phase=phase, samples_ns=[s * scale for s in samples], layer=layer)

    train = Section(
        kind="optimizer",
        name="O",
        network="Main",
        complete=True,
        entries=[
            e("forward_function (A : Affine)", "forward_function", [1e6, 1e6], "A"),
            e("backward_function (A : Affine)", "backward_function", [2e6, 2e6], "A"),
            e("forward_all", "forward_all", [3e6, 3.2e6, 2.8e6]),
            e("backward_all", "backward_all", [4e6, 4e6]),
            e("update (Adam)", "update", [1e5, 1e5]),
        ],
    )
    return Profile(header={"context": "cpu:float"}, sections=[train], complete=True)


def test_compare_saved_per_entry_and_per_layer():
    entries, layers, metrics = compare_saved({"a": _saved(1.0), "b": _saved(2.0)})
    fwd = [r for r in entries if r.label == "forward_all"]
    assert [(r.config, r.n, r.mean_ms) for r in fwd] == [("a", 3, pytest.approx(3.0)), ("b", 3, pytest.approx(6.0))]
    assert fwd[1].ratio == pytest.approx(2.0) and fwd[1].ci_low < 2.0 < fwd[1].ci_high
    assert [(r.label, r.config, r.mean_ms, r.ratio) for r in layers] == [("A", "a", 3.0, 1.0), ("A", "b", 6.0, 2.0)]
    assert [m.name for m in metrics] == ["forward_all", "backward_all", "update"]


@pytest.mark.slow
def test_compare_saved_results_on_the_command_line(tmp_path):
    for name in ("a", "b"):
        proc = run_cli(LENET, "--runs", "3", "--no-inference", "-o", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
    out = tmp_path / "cmp"
    proc = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    with open(out / "compare_entries.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["configuration"] for r in rows} == {"a", "b"}
    assert any(r["entry"] == "forward_function (Convolution_2 : Convolution)" for r in rows)
    wb = openpyxl.load_workbook(out / "compare.xlsx")
    assert {"Compare", "Per entry", "Per layer", "Box plots", "Info"} <= set(wb.sheetnames)
    assert (out / "box_forward_all.png").read_bytes()[:4] == b"\x89PNG"
    lines = proc.stdout.strip().splitlines()
    start = max(k for k, line in enumerate(lines) if line.startswith("Written to "))
    said = " ".join(line.strip() for line in lines[start:])  # every file it wrote, named (wrapped between them)
    assert said.startswith("Written to %s: " % out) and all(
        name in said for name in ("compare.log", "compare.csv", "compare.xlsx", "compare.html", "box_forward_all.png")
    )
    # every file it wrote is one nnprofile refuses to write through a symbolic link (compare_entries.csv and the
    # box plots once were not)
    from nnprofile.render.files import OUTPUT_NAMES, OUTPUT_PREFIXES

    unguarded = [p.name for p in out.iterdir() if p.name not in OUTPUT_NAMES]
    assert [name for name in unguarded if not name.startswith(OUTPUT_PREFIXES)] == []
    # without matplotlib (an extra): the tables, and one line that names the extra
    code = (
        "import sys; sys.modules['matplotlib'] = None; from nnprofile.cli import main; "
        "sys.exit(main(['compare', %r, %r, '-o', %r]))"
        % (str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "plain"))
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert plain.returncode == 0 and "pip install 'nnprofile[plots]'" in plain.stderr, plain.stderr
    assert (tmp_path / "plain" / "compare.xlsx").exists() and not list((tmp_path / "plain").glob("box_*.png"))


@pytest.mark.slow
def test_compare_configurations_on_the_command_line(tmp_path):
    out = tmp_path / "cmp"
    proc = run_cli(
        "compare",
        os.path.join(FIXTURES, "shared_types.nntxt"),
        "--synthetic",
        "--runs",
        "2",
        "--set",
        "batch_size=16",
        "--set",
        "batch_size=64",
        "--repeat",
        "2",
        "--resolve",
        "0",
        "-o",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    with open(out / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    step = [r for r in rows if r["metric"] == "training step"]
    assert [(r["configuration"], r["n"]) for r in step] == [("batch_size=16", "2"), ("batch_size=64", "2")]
    assert float(step[0]["ratio"]) == 1.0 and step[1]["ci95_low"] and step[1]["ci95_high"]
    assert sorted(os.listdir(out / "runs")) == ["batch_size=16", "batch_size=64"]
    assert (out / "runs" / "batch_size=64" / "1" / "result.json").exists()
    ws = openpyxl.load_workbook(out / "compare.xlsx")["Compare"]
    assert [str(cf.sqref) for cf in ws.conditional_formatting] == ["K2:K%d" % (len(rows) + 1)]
    for metric in ("training_step", "forward_all", "backward_all", "update", "inference_forward_all"):
        assert (out / ("box_%s.png" % metric)).exists()
    assert "training step (ms)" in proc.stdout


@pytest.mark.slow
def test_compare_errors_are_one_line(tmp_path):
    proc = run_cli("compare", LENET, "-o", str(tmp_path / "x"))
    assert proc.returncode == 2 and "--set" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run_cli("compare", LENET, "--set", "colour=red", "-o", str(tmp_path / "x"))
    assert proc.returncode == 2 and "unknown key" in proc.stderr
    proc = run_cli("compare", str(tmp_path), "-o", str(tmp_path / "x"))
    assert proc.returncode == 2 and "result.json" in proc.stderr


@pytest.mark.slow
def test_three_epochs_of_lenet_learn_the_digits(tmp_path):
    """NNabla's training loop on the bundled digits: far below chance (0.9) after 3 epochs."""
    from nnprofile.compare.training import train_once

    digits = os.path.join(os.path.dirname(LENET), "digits")
    before = sorted(os.listdir(digits))
    run = train_once(LENET, {"context": "cpu"}, 3, str(tmp_path / "train"))
    assert run.epochs == 3
    assert run.classification_error is not None and run.classification_error < 0.3
    assert run.monitor_valid_error is not None and run.monitor_valid_error < 2.3  # ln(10): chance
    assert 0 < run.train_seconds <= run.wall_seconds
    assert sorted(os.listdir(digits)) == before  # caches went to the run's folder


def _scripted_runs(monkeypatch, steps):
    """compare's fresh processes replaced by a script: each run of a configuration reads its next step (ms)."""
    from types import SimpleNamespace
    from nnprofile.compare import configs

    taken = {name: iter(values) for name, values in steps.items()}
    monkeypatch.setattr(
        configs,
        "profile_in_fresh_process",
        lambda files, run_dir, arguments, what: SimpleNamespace(
            what=what.split(" ", 1)[1], header=SimpleNamespace(batch_size=None)
        ),
    )
    monkeypatch.setattr(configs, "step_metrics", lambda profile: {"training step": next(taken[profile.what])})
    return configs


def test_compare_adds_rounds_until_the_headline_interval_resolves_or_its_budget_ends(monkeypatch, tmp_path):
    wobble = [1.00, 1.06, 0.95, 1.03, 0.98, 1.01, 0.99, 1.02, 0.97, 1.00, 1.01, 0.99]
    steps = {"a": [10 * w for w in wobble], "b": [12 * w for w in reversed(wobble)]}
    configs = _scripted_runs(monkeypatch, steps)
    a, b = configs.parse_set("batch_size=16"), configs.parse_set("batch_size=32")
    a.name, b.name = "a", "b"
    _, _, resolution = configs.run_configurations(
        [], [a, b], 2, str(tmp_path), [], progress=lambda line: None, resolve=0.05, max_runs=12
    )
    assert resolution.resolved and resolution.reason == "resolved"
    assert 2 < resolution.runs < 12 and resolution.widest["training step"] <= 0.05
    configs = _scripted_runs(monkeypatch, steps)
    _, _, tight = configs.run_configurations(
        [], [a, b], 2, str(tmp_path), [], progress=lambda line: None, resolve=0.001, max_runs=4
    )
    assert not tight.resolved and tight.reason == "runs" and tight.runs == 4
    assert tight.widest["training step"] > 0.001
    configs = _scripted_runs(monkeypatch, steps)
    _, _, fixed = configs.run_configurations([], [a, b], 3, str(tmp_path), [], progress=lambda line: None)
    assert fixed.runs == 3 and fixed.reason == "runs" and not fixed.widest


def _recorded(kind, name, entries):
    return Section(kind, name, name, entries=entries)


def _timed(label, phase, samples):
    return Entry(label=label, phase=phase, samples_ns=[s * 1e6 for s in samples])


def test_a_recorded_programs_step_leads_and_its_graphs_keep_their_names():
    """A saved program's result: its step first (a training step where it updates), each graph's passes by the
    graph's name, never called an inference's; a forward-only script's step is a step."""
    from nnprofile.base.choices import GRAPH, SCRIPT

    graph = _recorded(GRAPH, "loss", [_timed("forward_all", "forward_all", [1, 1.1, 0.9])])
    graph.entries.append(_timed("backward_all", "backward_all", [2, 2.1, 1.9]))
    script = _recorded(
        SCRIPT, "train.py", [_timed("update (Adam)", "update", [0.5] * 3), _timed("step", "step", [4, 4.2, 3.8])]
    )
    trained = Profile(sections=[graph, script])
    _, _, metrics = compare_saved({"a": trained, "b": trained})
    assert [m.name for m in metrics] == ["training step", "loss forward_all", "loss backward_all", "update"]
    forward_only = Profile(sections=[graph, _recorded(SCRIPT, "eval.py", [_timed("step", "step", [3, 3.1])])])
    _, _, metrics = compare_saved({"a": forward_only, "b": forward_only})
    assert [m.name for m in metrics][0] == "step" and "inference forward_all" not in [m.name for m in metrics]
