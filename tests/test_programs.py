"""Programs as people write them: graphs as sections, steps as iterations, solvers told apart, input
waits, monitors, layers named by scope in every graph, where each layer was made, and odd programs.

The programs under tests/scripts/ do what NNabla's examples do; every figure asserted here (names,
sections, steps, calls per step) is known from the program itself.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

import nnprofile
from conftest import FakeClock, ROOT, interruptible, run_cli
from nnprofile.analysis import analyze
from nnprofile.analysis.breakdown import per_step_ms
from nnprofile.base.hookcost import HookCosts
from nnprofile.assembly.steps import Loop, bounds, pattern, rule_figures
from nnprofile.render import notes
from nnprofile.result.notes import Note
from nnprofile.api.programs import interrupted, shorten

SCRIPTS = os.path.join(ROOT, "tests", "scripts")


# -- the step rule, on sequences ---------------------------------------------------------------


def test_the_step_is_the_shortest_pattern_that_holds_every_solvers_update():
    assert pattern(["s"] * 5) == (0, 1, ["s"])
    assert pattern(["gen", "dis"] * 4) == (0, 2, ["gen", "dis"])  # a GAN: both updates in every step
    wgan = ["critic"] * 5 + ["gen"]  # a WGAN: five critic updates per generator update
    assert pattern(wgan * 3) == (0, 6, wgan)
    assert pattern(["a", "b", "a"]) == (0, 2, ["a", "b"])  # an unfinished last pattern does not matter
    assert pattern(["static"] * 4 + ["dynamic"] * 4) is None  # solvers one after the other: no pattern
    # One WGAN iteration alone cannot be told from two solvers used one after the other; two can.
    assert pattern(wgan) is None and pattern(wgan * 2) == (0, 6, wgan)


def _loop(updates=(), marks=(), passes=()):
    loop = Loop()
    for graph, solver, end in updates:  # each update after its graph's backward
        loop.pass_started("backward", graph, graph, end - 5)
        loop.update(solver, end)
    for at in marks:
        loop.mark(at)
    for key, start in passes:
        loop.pass_started("forward", key, key, start)
    return loop


def _steps(loop, started_ns, last_ns):
    rule = loop.rule()
    found = bounds(loop, rule, started_ns, last_ns)
    return found, notes.text(Note("steps_" + rule.kind, rule_figures(rule, len(found), lambda what: str(what[1]))))


def test_steps_end_at_the_last_update_of_each_pattern_and_what_follows_is_no_step():
    loop = _loop([("g", 0, 10), ("d", 1, 20), ("g", 0, 30), ("d", 1, 40), ("g", 0, 50)])
    steps, how = _steps(loop, 0, 99)
    assert steps == [(0, 20), (20, 40)] and "2 updates of 2 solvers" in how
    steps, how = _steps(_loop(marks=[15, 35]), 5, 99)
    assert steps == [(5, 15), (15, 35)] and "nnprofile.step()" in how


def test_without_a_solver_the_repeating_passes_are_the_steps():
    steps, how = _steps(_loop(passes=[("y", 10), ("y", 20), ("y", 30)]), 0, 35)
    assert steps == [(0, 20), (20, 30), (30, 35)] and "one step per pass" in how
    steps, how = _steps(_loop(passes=[("a", 10), ("b", 20)]), 0, 30)
    assert steps == [(0, 30)] and how.startswith("one step")


# -- messages of programs that fail ------------------------------------------------------------


def test_a_long_message_is_cut_at_a_word():
    text = "the shape of the input does not match what the layer expects " * 10
    short = shorten(text, 80)
    assert len(short) <= 80 and short.endswith("…") and short[:-1] == text[: len(short) - 1].rstrip()
    assert not short[-2].isspace() and text.split()[len(short[:-1].split()) - 1] == short[:-1].split()[-1]
    assert shorten("short message") == "short message"


def test_ctrl_c_inside_nnabla_is_an_interruption():
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:
            raise SystemError("<cyfunction Variable.backward> returned a result with an exception set") from e
    except SystemError as error:
        assert interrupted(error)
    assert not interrupted(ValueError("no"))


def test_a_failure_while_a_ctrl_c_is_handled_is_no_second_ctrl_c():
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as first:
        try:
            raise RuntimeError("a bug of nnprofile's, met while the first Ctrl-C unwinds")
        except RuntimeError as error:
            assert interrupted(error) and not interrupted(error, before=first)
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as second:
                assert interrupted(second, before=first)


@pytest.mark.slow
@pytest.mark.parametrize("second", [KeyboardInterrupt, RuntimeError])
def test_what_stops_the_files_of_an_interrupted_recording_is_said_as_it_is(second, monkeypatch, tmp_path, capsys):
    """Ctrl-C in the program, then while nnprofile makes its files: a second Ctrl-C, or a bug of nnprofile's own."""
    from nnprofile.recording import driver

    def breaks(self, *args, **kwargs):
        raise second("injected")

    monkeypatch.setattr(driver.ProgramRun, "profile", breaks)
    loss, _ = _mlp()
    with pytest.raises(KeyboardInterrupt):
        with nnprofile.record(outdir=tmp_path / "out", skip_first=0, active=50) as rec:
            for _ in range(3):
                loss.forward()
            raise KeyboardInterrupt
    said = capsys.readouterr().err.splitlines()
    assert said[0].startswith("nnprofile: interrupted by Ctrl-C: writing what was recorded")
    assert rec.profile is None and not (tmp_path / "out" / "result.json").exists()
    if second is KeyboardInterrupt:
        assert rec.error.startswith("a second Ctrl-C stopped it") and not rec.error_traceback
    else:
        assert "injected" in rec.error and "second Ctrl-C" not in rec.error and rec.error_traceback


# -- the programs ------------------------------------------------------------------------------


def _run(tmp_path_factory, name, *args, label=None, options=()):
    out = tmp_path_factory.mktemp(label or name)
    script = os.path.join(SCRIPTS, name + ".py")
    proc = run_cli("run", "-q", *options, "-o", str(out / "result"), script, *args, cwd=str(out))
    assert proc.returncode == 0, proc.stderr
    return out / "result", nnprofile.load(out / "result")


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """13 iterations, validation (2 batches) at iterations 4, 8 and 12, a final evaluation after the loop; 20 steps
    active, more than the program runs (its window never ends)."""
    return _run(
        tmp_path_factory,
        "train_validate",
        "--iterations",
        "13",
        "--val-interval",
        "4",
        "--val-iter",
        "2",
        options=("--active", "20"),
    )


@pytest.fixture(scope="module")
def gan(tmp_path_factory):
    return _run(tmp_path_factory, "gan", "--iterations", "10")


def _sections(profile):
    return {s.name: s for s in profile.sections}


@pytest.mark.slow
def test_a_training_and_a_validation_graph_are_sections_of_their_own(classifier):
    _, profile = classifier
    assert [(s.kind, s.name) for s in profile.sections] == [
        ("graph", "loss"),
        ("graph", "vpred"),
        ("script", "train_validate.py"),
    ]
    loss, vpred, program = profile.sections
    assert loss.info["trained_by"] == ["Adam"] and loss.info["forward_per_step"] == 1
    assert loss.info["backward_per_step"] == 1
    # Steps 2 to 13 hold the validations at iterations 4, 8 and 12: 6 passes in 12 steps.
    assert vpred.info["trained_by"] == [] and vpred.info["forward_per_step"] == 0.5
    assert not vpred.entries_of("backward_all")
    assert [sum(e.round_sizes) for e in vpred.entries_of("forward_all")] == [6]
    names = [e.layer for e in loss.entries_of("forward_function")]
    assert names == [
        "conv1/conv",
        "ReLU",
        "MaxPooling",
        "conv2/conv",
        "ReLU_2",
        "AveragePooling",
        "fc/affine",
        "SoftmaxCrossEntropy",
        "Mean",
    ]
    # The same parameters, the same names, in the validation graph.
    assert [e.layer for e in vpred.entries_of("forward_function")] == names[:7]
    assert not any("#" in (e.layer or "") for s in profile.sections for e in s.entries)


def test_steps_are_the_iterations_and_what_follows_the_loop_is_not_a_step(classifier):
    _, profile = classifier
    h = profile.header
    # 13 iterations: the first set aside, the other 12 kept (fewer than the 20 active: no step is left to
    # measure the hooks without them)
    assert h.skipped_steps == 1 and h.kept_steps == list(range(2, 14)) and h.plain_steps == []
    assert h.active_steps == 12 and str(h.steps).startswith(
        "one step per iteration of the program's loop at train_validate.py:"
    )
    program = profile.sections[-1]
    [update] = [e for e in program.entries if e.label == "update (Adam)"]  # a solver of nnabla.solver
    assert update.round_sizes == [1] * 12


def test_the_runs_own_work_is_said_and_only_the_calls_it_made_are_calibrated(classifier):
    out, profile = classifier
    h = profile.header
    # A static program: the hooks' cost on auto_forward and eager calls (the costliest to measure) is not measured,
    # and said as not measured, not as a zero.
    assert h.call_overhead_ns is None and h.hook_overhead_ns > 0
    assert set(h.own_cost) == {"calibration", "machine"} and all(v > 0 for v in h.own_cost.values())
    [line] = [l for l in (out / "profile.log").read_text().splitlines() if l.startswith("Own work:")]
    assert "nnprofile took %.3f s outside the program's calls" % sum(h.own_cost.values()) in line


def test_input_waits_and_monitors_are_timed_by_name(classifier):
    out, profile = classifier
    program = profile.sections[-1]
    labels = [e.label for e in program.entries]
    assert labels[:2] == ["load_dataset (data)", "load_dataset (vdata)"]
    data, vdata = program.entries[:2]
    assert data.round_sizes == [1] * 12 and sum(vdata.round_sizes) == 6
    assert {"monitor (Training loss)", "monitor (Test error)", "monitor (Training time)"} <= set(labels)
    assert "the wait, not the loading" in (out / "profile.log").read_text()


def test_the_parts_of_the_step_add_up_and_the_shares_stay_within_it(classifier):
    _, profile = classifier
    step = analyze(profile).of(profile.sections[-1]).step
    program = profile.sections[-1]
    assert step.step_ms == pytest.approx(per_step_ms(program.entries_of("step")[0]), abs=1e-5)
    kinds = [p.split(" ")[0] for p, _ in step.parts]
    assert kinds == [
        "input",
        "evaluation",
        "forward",
        "backward",
        "forward",
        "update",
        "monitor",
        "other",
    ]  # the validation's data is its own
    assert sum(ms for _, ms in step.parts) == pytest.approx(step.step_ms, abs=1e-5)
    assert sum(l.step_ms for l in step.layers) <= step.step_ms
    assert dict(step.parts)["forward (vpred)"] == pytest.approx(
        per_step_ms(profile.sections[1].entries_of("forward_all")[0]), abs=1e-6
    )


def test_each_layer_says_where_the_program_made_it(classifier):
    out, profile = classifier
    loss = profile.sections[0]
    source = {e.layer: e.source for e in loss.entries_of("forward_function")}
    script = os.path.join(SCRIPTS, "train_validate.py")
    lines = open(script).read().splitlines()
    for layer, text in (
        ("conv1/conv", "PF.convolution(image, 8"),
        ("fc/affine", "PF.affine(h, 10)"),
        ("SoftmaxCrossEntropy", "F.softmax_cross_entropy"),
    ):
        path, line = source[layer].rsplit(":", 1)
        assert os.path.samefile(path, script) and text in lines[int(line) - 1], layer
    import csv

    with open(out / "profile_detail.csv", newline="") as f:
        assert [r["source"] for r in csv.DictReader(f) if r["label"].startswith("forward_function (conv1")][0]


@pytest.mark.slow
def test_two_solvers_are_told_apart_and_each_trains_its_graph(gan):
    _, profile = gan
    sections = _sections(profile)
    assert list(sections) == ["loss_gen", "loss_dis", "gan.py"]
    assert sections["loss_gen"].info["trained_by"] == ["Adam: gen"]
    assert sections["loss_dis"].info["trained_by"] == ["Adam: dis"]
    h = profile.header  # 10 iterations: one step each, both updates inside (every third without the hooks)
    assert h.skipped_steps == 1 and h.kept_steps == list(range(2, 11)) and h.plain_steps == []
    labels = [e.label for e in sections["gan.py"].entries]
    for solver in ("gen", "dis"):
        for method in ("zero_grad", "weight_decay", "update"):
            assert "%s (Adam: %s)" % (method, solver) in labels
    dis = [e.layer for e in sections["loss_dis"].entries_of("forward_function")]
    assert dis[:3] == ["dis/conv1/conv", "LeakyReLU", "dis/fc/affine"]
    assert "dis/conv1/conv[2]" in dis and "dis/fc/affine[2]" in dis  # applied to the real batch too
    gen = [e.layer for e in sections["loss_gen"].entries_of("forward_function")]
    assert gen[0] == "gen/fc/affine" and "dis/conv1/conv" in gen and "dis/conv1/conv[2]" not in gen


@pytest.mark.slow
def test_a_scope_applied_twice_in_one_graph_gets_an_index(tmp_path_factory):
    _, profile = _run(tmp_path_factory, "siamese", "--iterations", "6")
    [loss] = [s for s in profile.sections if s.kind == "graph"]
    names = [e.layer for e in loss.entries_of("forward_function")]
    assert names[:8] == [
        "encoder/conv/conv",
        "ReLU",
        "MaxPooling",
        "encoder/fc/affine",
        "encoder/conv/conv[2]",
        "ReLU_2",
        "MaxPooling_2",
        "encoder/fc/affine[2]",
    ]
    program = profile.sections[-1]
    assert program.entries[0].label == "load_dataset (pairs_data)" and loss.info["trained_by"] == ["Momentum"]


@pytest.mark.slow
def test_names_outlive_clear_parameters_and_dynamic_graphs_are_known_by_their_backward(tmp_path_factory):
    _, profile = _run(tmp_path_factory, "static_then_dynamic", "--iterations", "4")
    sections = _sections(profile)
    assert list(sections) == ["loss", "dyn_loss", "static_then_dynamic.py"]
    h = profile.header  # every iteration a step
    assert h.skipped_steps + h.active_steps == 8 and h.skipped_steps == 1
    static, dynamic = sections["loss"], sections["dyn_loss"]
    assert [e.layer for e in static.entries_of("forward_function")][:2] == ["cnn/conv11/conv", "ReLU"]
    assert not static.info["dynamic"] and dynamic.info["dynamic"]
    assert [e.layer for e in dynamic.entries_of("forward_function")] == [
        "cnn/conv11/conv",
        "ReLU",
        "MaxPooling",
        "cnn/fc/affine",
        "SoftmaxCrossEntropy",
        "Mean",
    ]
    # Two Adams of one scope, both called "solver" by the program: told apart by the line that made each.
    lines = [i + 1 for i, text in enumerate(open(os.path.join(SCRIPTS, "static_then_dynamic.py"))) if "S.Adam(" in text]
    assert static.info["trained_by"] == ["Adam: line %d" % lines[0]]
    assert dynamic.info["trained_by"] == ["Adam: line %d" % lines[1]]


def test_the_log_workbook_html_and_trace_tell_the_graphs_apart(gan):
    out, profile = gan
    log = (out / "profile.log").read_text()
    assert "Profiling graph 'loss_gen' (trained by Adam: gen; 1 forward pass and 1 backward pass per step) ..." in log
    assert "Profiling graph 'loss_dis' (trained by Adam: dis; 1 forward pass and 1 backward pass per step) ..." in log
    loop = next(
        i + 1
        for i, line in enumerate(open(os.path.join(SCRIPTS, "gan.py")).read().splitlines())
        if "for i in range(args.iterations)" in line
    )
    assert (
        "Steps: one step per iteration of the program's loop at gan.py:%d (updates a step: Adam: gen 1, Adam: dis 1)"
        % loop
        in log
    )
    import openpyxl

    wb = openpyxl.load_workbook(out / "profile.xlsx")
    assert [ws.title for ws in wb.worksheets][:4] == ["Summary", "loss_gen", "loss_dis", "gan.py"]
    html = (out / "report.html").read_text()
    assert "graph 'loss_dis' (trained by Adam: dis" in html
    import trace_check

    events = trace_check.check(trace_check.load(out / "trace.json.gz"))
    names = {e["name"] for e in events if e["cat"] in ("forward", "backward") and "graph" in e.get("args", {})}
    assert names == {"forward (loss_gen)", "backward (loss_gen)", "forward (loss_dis)", "backward (loss_dis)"}


@pytest.mark.slow
def test_check_compare_and_report_read_program_results(gan, tmp_path):
    out, _ = gan
    proc = run_cli("check", str(out), str(out), "--layers")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "graph 'loss_dis'" in proc.stdout and "training step" in proc.stdout
    proc = run_cli("compare", str(out), str(out), "-o", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("report", str(out), "-o", str(tmp_path / "again"), "-q")
    assert proc.returncode == 0
    for name in ("profile.log", "profile_detail.csv", "profile.xlsx"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


@pytest.mark.slow
def test_ctrl_c_while_nnabla_runs_a_pass_is_an_interruption_and_keeps_what_was_recorded(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnprofile",
            "run",
            "--active",
            "100000",
            "-o",
            str(out),
            os.path.join(SCRIPTS, "forever.py"),
        ],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    assert proc.stdout.readline().strip() == "training"  # recording: the program runs its loop
    time.sleep(3)  # some steps recorded; the program spends nearly all its time in passes
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGINT, stderr  # dies by SIGINT, as the program alone
    assert "SystemError" not in stderr and "Traceback" not in stderr
    log = (out / "profile.log").read_text()
    assert log.rstrip().endswith("Profile incomplete: interrupted by Ctrl-C.")
    profile = nnprofile.load(out)
    assert not profile.complete and profile.header.active_steps >= 1


def _mlp():
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    nn.clear_parameters()
    x, vx = nn.Variable((4, 3)), nn.Variable((4, 3))
    x.d = vx.d = 1.0

    def net(v):
        with nn.parameter_scope("fc"):
            return F.relu(PF.affine(v, 2))

    return F.mean(net(x)), F.mean(net(vx))


def test_a_validation_graph_every_other_step_on_a_fake_clock(tmp_path):
    import nnabla as nn
    import nnabla.solvers as S

    loss, vloss = _mlp()
    recording = nnprofile.Recording(
        skip_first=1, active=6, clock=FakeClock(steps=(1000,)).now_ns, hook_costs=HookCosts()
    )
    with recording:
        solver = S.Sgd()
        solver.set_parameters(nn.get_parameters())
        for i in range(7):
            if i % 2 == 0:
                vloss.forward()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    profile = recording.profile
    train, validation, program = profile.sections
    assert (train.name, validation.name) == ("loss", "vloss")
    [v_all] = validation.entries_of("forward_all")
    assert v_all.round_sizes == [0, 1, 0, 1, 0, 1]  # iterations 2, 4 and 6 of steps 2 to 7
    assert v_all.samples_ns == [5000.0] * 3  # 3 functions: 6 readings a step of 1 us apart
    assert validation.info["forward_per_step"] == 0.5
    a = analyze(profile)
    # 3 functions of 1 us each in a pass of 5 us: covered by 60%, exactly.
    assert {c.whole_phase: c.share for c in a.of(validation).coverage} == {"forward_all": 0.6}
    step = a.of(program).step
    parts = dict(step.parts)
    assert parts["forward (vloss)"] == pytest.approx(0.0025)  # 5 us every other step
    assert parts["forward (loss)"] == pytest.approx(0.005) and parts["backward (loss)"] == pytest.approx(0.005)
    assert sum(parts.values()) == pytest.approx(step.step_ms)


def test_nnprofile_step_overrides_the_rule(tmp_path):
    import nnabla as nn
    import nnabla.solvers as S

    loss, _ = _mlp()
    recording = nnprofile.Recording(
        skip_first=0, active=10, clock=FakeClock(steps=(1000,)).now_ns, hook_costs=HookCosts()
    )
    with recording:
        solver = S.Sgd()
        solver.set_parameters(nn.get_parameters())
        for i in range(6):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
            if i % 2 == 1:
                nnprofile.step()  # two updates a step (gradient accumulation, say)
    profile = recording.profile
    assert profile.header.active_steps == 3 and "nnprofile.step()" in str(profile.header.steps)
    assert profile.sections[0].info["forward_per_step"] == 2


@pytest.mark.slow
def test_a_solver_made_before_recording_is_seen_in_its_namespace():
    """A notebook makes its solver in one cell and records another: the solver is in its namespace."""
    import nnabla as nn
    import nnabla.solver as solver_module
    import nnabla.solvers as S

    loss, _ = _mlp()
    namespace = {"solver": S.Adam()}
    namespace["solver"].set_parameters(nn.get_parameters())
    with nnprofile.record(skip_first=0, active=3, namespaces=[namespace]) as rec:
        for _ in range(3):
            loss.forward()
            namespace["solver"].zero_grad()
            loss.backward()
            namespace["solver"].update()
    assert type(namespace["solver"]) is solver_module.Adam or isinstance(namespace["solver"], solver_module.Solver)
    assert type(namespace["solver"]).__name__ != "_TimedSolver"  # put back after the recording
    program = rec.profile.sections[-1]
    assert [e.label for e in program.entries if e.phase == "update"] == ["update (Adam)"]
    assert rec.profile.header.active_steps == 3


@pytest.mark.slow
def test_nnabla_is_as_it_was_after_a_recording():
    import nnabla.solver as solver_module
    import nnabla.solvers as solvers
    from nnabla import monitor
    from nnabla.utils import data_iterator

    before = (solvers.Adam, solver_module.Adam, data_iterator.DataIterator.next, monitor.MonitorSeries.add)
    loss, _ = _mlp()
    with nnprofile.record(skip_first=0, active=2):
        loss.forward()
    assert (solvers.Adam, solver_module.Adam, data_iterator.DataIterator.next, monitor.MonitorSeries.add) == before


@pytest.mark.slow
def test_a_module_first_imported_while_recording_gets_nnablas_own_factories_back(tmp_path):
    """nnabla.solvers imported inside a recording copies the timed factories from nnabla.solver; after
    the recording every binding holds NNabla's own again, so that a later recording times its solvers."""
    program = tmp_path / "twice.py"
    program.write_text(
        "import nnabla.solver\n"
        "original = {'Sgd': nnabla.solver.Sgd}\n"
        "import nnprofile\n"
        "with nnprofile.record(active=2):\n"
        "    import nnabla.solvers\n"
        "assert nnabla.solvers.Sgd is original['Sgd'] and nnabla.solver.Sgd is original['Sgd']\n"
        "import nnabla as nn, nnabla.functions as F, nnabla.parametric_functions as PF\n"
        "x = nn.Variable((2, 3))\n"
        "loss = F.mean(PF.affine(x, 2))\n"
        "with nnprofile.record(skip_first=0, active=3) as rec:\n"
        "    solver = nnabla.solvers.Sgd()\n"
        "    solver.set_parameters(nn.get_parameters())\n"
        "    for _ in range(3):\n"
        "        loss.forward(); solver.zero_grad(); loss.backward(); solver.update()\n"
        "print(rec.profile.header.steps)\n"
    )
    done = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "one step per iteration of the program's loop" in done.stdout
