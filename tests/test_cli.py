"""nnprofile as a user runs it: python -m nnprofile in a subprocess."""

import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import LENET, ROOT, interruptible, lenet_with_validation, lenet_with_wrong_size_validation, run_cli


def _one_clean_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("nnprofile: error: ")
    return lines[0]


@pytest.mark.slow
def test_missing_project_file(tmp_path):
    proc = run_cli(str(tmp_path / "nope.nntxt"), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "nope.nntxt: no such file" in _one_clean_line(proc)


@pytest.mark.slow
def test_unreadable_project_file(tmp_path):
    folder = tmp_path / "looks_like.nntxt"
    folder.mkdir()
    proc = run_cli(str(folder), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "is a folder" in _one_clean_line(proc)


@pytest.mark.slow
def test_binary_garbage_project(tmp_path):
    bad = tmp_path / "garbage.nntxt"
    bad.write_bytes(b"\xff\xfe\x00\x81 not text")
    proc = run_cli(str(bad), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "garbage.nntxt" in _one_clean_line(proc)


@pytest.mark.slow
def test_output_path_that_is_a_file(tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    proc = run_cli(LENET, "-o", str(target))
    assert proc.returncode == 2
    assert "is a file" in _one_clean_line(proc)
    assert target.read_text() == "x"


@pytest.mark.slow
def test_unsupported_file_type(tmp_path):
    other = tmp_path / "net.txt"
    other.write_text("")
    proc = run_cli(str(other))
    assert proc.returncode == 2
    _one_clean_line(proc)


@pytest.mark.slow
def test_malformed_nntxt_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.nntxt"
    bad.write_text('network {\n  name: "Main"\n  batch_sise: 4\n}\n')
    proc = run_cli(str(bad), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    line = _one_clean_line(proc)
    assert "bad.nntxt:3:" in line and "batch_sise" in line


@pytest.mark.slow
def test_bad_option_value_is_one_usage_error():
    proc = run_cli(LENET, "--runs", "0")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def _without_cuda(monkeypatch):
    """As on a machine without nnabla-ext-cuda, whether or not this one has it."""
    from nnprofile.project import context

    monkeypatch.setattr(context, "extension_available", lambda backend: backend == "cpu")


@pytest.mark.slow
def test_cpu_fallback_is_one_header_line(tmp_path, monkeypatch, capsys):
    from nnprofile.cli import main

    _without_cuda(monkeypatch)  # LeNet asks for cuDNN, as NNC projects do
    assert main([LENET, "-o", str(tmp_path), "--runs", "1", "--no-inference"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    notes = [l for l in out.splitlines() if "nnabla-ext-cuda is not installed" in l]
    assert len(notes) == 1
    assert "Context: cpu:float" in out


def test_explicit_cuda_context_without_extension_is_an_error(tmp_path, monkeypatch, capsys):
    from nnprofile.cli import main

    _without_cuda(monkeypatch)
    assert main([LENET, "-o", str(tmp_path), "--context", "cudnn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nnprofile: error: ") and "nnabla-ext-cuda" in err


@pytest.mark.slow
def test_missing_dataset_stops_before_any_timing(tmp_path):
    project = lenet_with_validation(tmp_path, "K:\\\\samples\\\\mnist\\\\test.csv")
    out = tmp_path / "out"
    proc = run_cli(str(project), "-o", str(out), "--runs", "1")
    assert proc.returncode == 2
    line = _one_clean_line(proc)
    assert "'Validation'" in line and "K:\\samples\\mnist\\test.csv" in line and "--synthetic" in line
    assert "(ms)" not in proc.stdout
    assert not (out / "profile.log").exists()


@pytest.mark.slow
def test_failure_midway_keeps_what_was_measured(tmp_path):
    # Validation images of the wrong size: the executor section fails at let_data,
    # after the whole training section was measured.
    project = lenet_with_wrong_size_validation(tmp_path)
    out = tmp_path / "out"
    proc = run_cli(str(project), "-o", str(out), "--runs", "1")
    assert proc.returncode == 2
    line = _one_clean_line(proc)
    assert "Input" in line and "marked incomplete" in line
    log = (out / "profile.log").read_text()
    assert "monitor_loss" in log  # the training section was complete
    assert log.rstrip().splitlines()[-1].startswith("Profile incomplete:")
    assert "Profiling executor" in log
    from agreement import check_outputs_agree

    check_outputs_agree(out)
    with open(out / "profile.csv") as f:
        assert f.readline().rstrip().endswith("executor 'Executor' with network 'MainRuntime' (incomplete)")
    with open(out / "profile_detail.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["section_complete"] for r in rows if r["section"].startswith("optimizer")} == {"1"}
    # The bad data stops the executor before any of its entries is timed (the data is checked
    # when its rounds are planned): its column is there, marked incomplete, with no rows.
    assert [r for r in rows if r["section"].startswith("executor")] == []
    import openpyxl

    wb = openpyxl.load_workbook(out / "profile.xlsx")
    info = {r[0].value: r[1].value for r in wb["Info"].iter_rows()}
    assert info["status"].startswith("INCOMPLETE")
    # Caches go to the output folder, never beside the user's files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moved.nntxt", "out", "small", "small.csv"]
    assert (out / "cache").is_dir()


@pytest.mark.slow
def test_ctrl_c_keeps_what_was_measured(tmp_path):
    out, marks = tmp_path / "out", tmp_path / "sections"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "faults"), ROOT]),
        NNPROFILE_TEST_MARK_SECTIONS=str(marks),
    )  # a line as each section begins
    proc = subprocess.Popen(
        [sys.executable, "-m", "nnprofile", LENET, "-o", str(out), "--runs", "200"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
        env=env,
    )
    deadline = time.time() + 120
    while "executor" not in (marks.read_text() if marks.exists() else ""):  # the training section measured
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)  # inside the inference's 200 runs
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    log = (out / "profile.log").read_text()
    assert "forward_function" in log
    assert log.rstrip().splitlines()[-1] == "Profile incomplete: interrupted by Ctrl-C."
    assert "Profile Completed." not in log


def _variant(tmp_path, old, new, source=None):
    from conftest import FIXTURES

    text = open(source or os.path.join(FIXTURES, "shared_types.nntxt")).read()
    assert old in text
    path = tmp_path / "variant.nntxt"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.slow
def test_unknown_layer_type(tmp_path):
    project = _variant(tmp_path, 'type: "Tanh"', 'type: "FancyLayer"')
    proc = run_cli(str(project), "--synthetic", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "unknown layer type 'FancyLayer'" in _one_clean_line(proc)


@pytest.mark.slow
def test_shapes_that_do_not_fit_name_the_layer(tmp_path):
    project = _variant(
        tmp_path,
        'name: "Affine_2/affine/W"\n    type: "Parameter"\n    shape: { dim: 100',
        'name: "Affine_2/affine/W"\n    type: "Parameter"\n    shape: { dim: 99',
    )
    proc = run_cli(str(project), "--synthetic", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    line = _one_clean_line(proc)
    assert "layer 'Affine_2' (Affine) of network 'Main'" in line and "mismatch" in line
    assert ".cpp" not in line  # NNabla's source paths are no use to the user


@pytest.mark.slow
def test_output_folder_that_cannot_be_created(tmp_path):
    (tmp_path / "file").write_text("")
    proc = run_cli(LENET, "-o", str(tmp_path / "file" / "sub"))
    assert proc.returncode == 2
    assert "cannot create output folder" in _one_clean_line(proc)


@pytest.mark.slow
def test_data_with_nan_is_refused(tmp_path):
    from nntxt_writer import mlp_project

    (tmp_path / "net.nntxt").write_text(
        mlp_project(
            [("Affine", 4), ("ReLU", 0), ("Affine", 3)],
            input_dim=2,
            classes=3,
            batch_size=4,
            datasets=("train.csv", "valid.csv"),
        )
    )
    rows = ["x__0,x__1,y"] + ["%s,%s,%d" % ("nan" if i == 2 else i, i * 0.5, i % 3) for i in range(8)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "valid.csv").write_text("\n".join(rows) + "\n")
    proc = run_cli(str(tmp_path / "net.nntxt"), "--runs", "1", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "contains NaN" in _one_clean_line(proc)
    # The data is checked before any timing: nothing was measured, so nothing is written.
    assert not (tmp_path / "out" / "profile.log").exists()


@pytest.mark.slow
def test_graph_mode_writes_the_same_files(tmp_path):
    from agreement import check_outputs_agree

    proc = run_cli(LENET, "--mode", "graph", "--runs", "2", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    check_outputs_agree(tmp_path)
    assert "Timing: graph mode" in proc.stdout
    assert "Hooks: NNabla's function hooks add" in proc.stdout
    import trace_check

    events = trace_check.check(trace_check.load(tmp_path / "trace.json.gz"))
    assert {e["cat"] for e in events} == {"forward", "backward"}
    assert proc.stdout.count("Coverage: the forward_function entries") == 2


@pytest.mark.slow
def test_a_closed_pipe_loses_nothing(tmp_path):
    """nnprofile PROJECT | head -n 1: profiling goes on quietly and every file is written."""
    out = tmp_path / "out"
    proc = subprocess.run(
        '%s -m nnprofile %s -o %s --runs 2 | head -n 1; echo "status ${PIPESTATUS[0]}"' % (sys.executable, LENET, out),
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    first, status = proc.stdout.splitlines()
    assert first.startswith("nnprofile ") and status == "status 0"
    assert all(line.startswith("nnprofile: measuring ") for line in proc.stderr.splitlines()), proc.stderr
    log = (out / "profile.log").read_text()
    assert log.rstrip().endswith("Profile Completed.")
    from agreement import check_outputs_agree

    check_outputs_agree(out)


@pytest.mark.slow
def test_printed_text_is_the_log_even_after_a_failure(tmp_path):
    project = lenet_with_wrong_size_validation(tmp_path, images=1)
    proc = run_cli(str(project), "-o", str(tmp_path / "out"), "--runs", "1")
    assert proc.returncode == 2
    assert proc.stdout == (tmp_path / "out" / "profile.log").read_text()  # (no "Written to": it failed)


@pytest.mark.slow
def test_the_top_level_help_lists_every_command_on_a_line_of_its_own():
    from nnprofile.cli import COMMANDS

    proc = run_cli("--help")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert any(line.split()[:1] == ["PROJECT"] for line in lines)
    for name, module in COMMANDS.items():
        assert "  %s" % name in "\n".join(lines)
        assert [line for line in lines if line.strip().startswith(name + " ") and module.SUMMARY in line], name
    assert "--max-seconds" in proc.stdout  # and the options of the default command, profiling a project


def test_every_commands_help_reads_as_written():
    """argparse formats help strings, not descriptions: a '%%' written in a description shows as is."""
    from nnprofile.cli import COMMANDS
    from nnprofile.cli import profile_cmd

    for module in [profile_cmd, *COMMANDS.values()]:
        text = module.parser().format_help()
        assert "%%" not in text and "%(" not in text, module.__name__


def test_report_help_names_every_file_it_renders():
    """``nnprofile report --help`` says what it writes: every file the renderers make of a saved result, as each
    renderer declares them (``WRITES``)."""
    import nnprofile
    from conftest import GOLDEN
    from nnprofile.analysis import analyze
    from nnprofile.cli.report_cmd import parser
    from nnprofile.render import RENDERERS, render

    said = " ".join(parser().format_help().split())
    for name in ("result_v10.json", "result_v12.json"):
        written = set(render(nnprofile.load(os.path.join(GOLDEN, name))))
        assert written and all(f in said for f in written), written
    assert "ranks.csv" in said and "windows.csv" in said
    for name in ("result_v5.json", "result_v10.json", "result_v12.json"):  # (v5: a merged view of two ranks)
        profile = nnprofile.load(os.path.join(GOLDEN, name))
        for r in RENDERERS.values():
            assert set(r.files(profile, analyze(profile))) <= set(r.WRITES), (name, r.NAME)
    assert all(f in said for r in RENDERERS.values() for f in r.WRITES)
