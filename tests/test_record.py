"""Profiling NNabla programs: nnprofile run, nnprofile.record, the timeline."""

import csv
import os

import pytest

import nnprofile
from nnprofile.base.schedule import Schedule
import trace_check
from conftest import FakeClock, ROOT, run_cli
from nnprofile.base.hookcost import HookCosts

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
EXAMPLES = os.path.join(ROOT, "examples")


def _graph_function_count(make_loss):
    functions = []
    make_loss().visit(lambda f: functions.append(f))
    return len(functions)


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    out = tmp_path_factory.mktemp("resnet")
    proc = run_cli("run", "-o", str(out), os.path.join(SCRIPTS, "resnet_bn.py"), "--steps", "8", "--exit", "3")
    return out, proc


@pytest.mark.slow
def test_the_script_runs_as_itself_and_its_status_comes_back(resnet):
    out, proc = resnet
    assert proc.returncode == 3, proc.stderr
    assert "loss " in proc.stdout  # its own output passes through
    log = (out / "profile.log").read_text()
    assert log.rstrip().endswith("Profile Completed.")
    assert "Note: the program exited with status 3" in log


def _graph_and_program(profile):
    """A recorded program of one graph: its graph's section and the program's step section."""
    assert [s.kind for s in profile.sections] == ["graph", "script"]
    return profile.sections


def test_every_function_gets_one_forward_entry_named_by_its_parameters(resnet):
    out, _ = resnet
    profile = nnprofile.load(out)
    section, program = _graph_and_program(profile)
    assert section.name == "loss" and section.info["trained_by"] == ["Momentum"]
    forward = section.entries_of("forward_function")
    names = [e.layer for e in forward]
    assert len(names) == len(set(names)) == 21  # 7 convolutions, 7 BN, 5 ReLU... every function NNabla ran
    assert names[:3] == ["stem/conv", "stem/bn", "ReLU"]
    assert "block1/conv1/conv" in names and "block2/conv2/bn" in names
    assert [n for n in names if n.startswith("ReLU")] == ["ReLU", "ReLU_2", "ReLU_3", "ReLU_4", "ReLU_5"]
    assert "Add2" in names and "Add2_2" in names and "head/affine" in names
    backward = section.entries_of("backward_function")
    by_id = {e.layer_id: e.layer for e in forward}
    assert backward and all(by_id[e.layer_id] == e.layer for e in backward)  # paired by identity
    # 8 steps: the first skipped, 7 active; one solver call of each kind per step
    for label in (
        "update (Momentum)",
        "weight_decay (Momentum)",
        "clip_grad_by_norm (Momentum)",
        "zero_grad (Momentum)",
        "step",
    ):
        [entry] = [e for e in program.entries if e.label == label]
        assert entry.runs == 7 and entry.round_sizes == [1] * 7, label
    assert all(e.runs == 7 for e in forward)
    assert profile.header.active_steps == 7 and profile.header.skipped_steps == 1


def test_the_trace_nests_steps_passes_and_layers(resnet):
    out, _ = resnet
    document = trace_check.load(out / "trace.json.gz")
    events = trace_check.check(document)
    steps = [e for e in events if e["cat"] == "step"]
    assert len(steps) == 7
    names = {e["name"] for e in document["traceEvents"] if e["ph"] == "M"}
    assert names == {"process_name", "thread_name"}
    step = steps[0]
    inside = trace_check.children(events, step)
    assert {e["cat"] for e in inside} >= {"forward", "backward", "update"}
    layers = [e for e in events if e["cat"] == "forward" and "class" in e.get("args", {})]
    assert layers[0]["args"]["outputs"] and layers[0]["args"]["class"] == "Convolution"
    assert layers[0]["args"]["source"].endswith("resnet_bn.py:24")  # stem/conv: where the program made it
    passes = [e for e in inside if e["cat"] in ("forward", "backward") and "graph" in e.get("args", {})]
    assert [e["name"] for e in passes] == ["forward (loss)", "backward (loss)"]
    # The step's direct children and the gaps between them add up to the step.
    busy = sum(e["dur"] for e in inside)
    assert busy <= step["dur"] + 1e-6
    recorded_step = [e for e in nnprofile.load(out).sections[-1].entries if e.label == "step"][0]
    assert recorded_step.samples_ns[0] <= step["dur"] * 1000 + 1  # the step minus the hooks' stated cost


@pytest.mark.slow
def test_dynamic_mode_records_forward_and_backward_per_layer(tmp_path):
    proc = run_cli("run", "--skip-first", "1", "-o", str(tmp_path), os.path.join(SCRIPTS, "mlp_dynamic.py"))
    assert proc.returncode == 0, proc.stderr
    section, _ = _graph_and_program(nnprofile.load(tmp_path))
    assert section.name == "loss" and section.info["dynamic"]
    forward = [e.layer for e in section.entries_of("forward_function")]
    backward = [e.layer for e in section.entries_of("backward_function")]
    assert forward == ["fc1/affine", "ReLU", "fc2/affine", "SquaredError", "Mean"]
    assert sorted(backward) == sorted(forward)
    assert all(e.runs == 5 for e in section.entries_of("forward_function"))
    assert "Calls: timing a function called under auto_forward" in (tmp_path / "profile.log").read_text()


@pytest.mark.slow
def test_a_failing_script_shows_its_own_traceback_and_keeps_what_was_recorded(tmp_path):
    proc = run_cli("run", "-o", str(tmp_path), os.path.join(SCRIPTS, "failing.py"))
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert 'failing.py", line' in proc.stderr and "ValueError: the user's own bug" in proc.stderr
    frames = proc.stderr.split("Traceback")[1].split("ValueError")[0]
    # The user's frames only: none of nnprofile's package, none of runpy's (whatever folder the clone is in).
    assert os.path.join(ROOT, "nnprofile", "") not in frames and "runpy" not in frames
    assert frames.count('File "') == 2 and frames.count("failing.py") == 2
    log = (tmp_path / "profile.log").read_text()
    assert log.rstrip().endswith("Profile incomplete: the program raised ValueError: the user's own bug.")
    assert "update (Sgd)" in log


@pytest.mark.slow
def test_a_short_script_shrinks_the_skip_and_says_so(tmp_path):
    proc = run_cli(
        "run", "--skip-first", "5", "-o", str(tmp_path), os.path.join(SCRIPTS, "resnet_bn.py"), "--steps", "2"
    )
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "profile.log").read_text()
    assert "the skip was shrunk to 1" in log
    profile = nnprofile.load(tmp_path)
    assert profile.header.active_steps == 1


def test_record_on_a_fake_clock_gives_exact_figures(tmp_path):
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    x = nn.Variable((2, 3))
    x.d = 1.0
    with nn.parameter_scope("fc"):
        loss = F.mean(F.relu(PF.affine(x, 4)))
    clock = FakeClock(steps=(1000,))
    recording = nnprofile.Recording(outdir=tmp_path, skip_first=1, active=3, clock=clock.now_ns, hook_costs=HookCosts())
    with recording:
        solver = S.Sgd()
        solver.set_parameters(nn.get_parameters())
        for _ in range(6):
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    profile = recording.profile
    section, program = _graph_and_program(profile)
    assert [e.label for e in section.entries_of("forward_function")] == [
        "forward_function (fc/affine : Affine)",
        "forward_function (ReLU : ReLU)",
        "forward_function (Mean : Mean)",
    ]
    for e in section.entries + program.entries:
        assert e.runs == 3, e.label  # steps 2 to 4; recording stopped after step 4
        if e.phase in ("forward_function", "backward_function", "update", "prepare_backward"):
            assert e.samples_ns == [1000, 1000, 1000], e.label  # one clock step between the readings
    assert nnprofile.load(tmp_path).labels() == profile.labels()


@pytest.mark.slow
def test_the_examples_run_under_nnprofile(tmp_path):
    for script, args, steps in (
        ("lenet_train.py", ["--iterations", "22"], Schedule.active),
        ("lenet_dynamic.py", ["--iterations", "6"], 5),
        ("lenet_infer.py", ["--batches", "4"], 3),
    ):
        out = tmp_path / script
        proc = run_cli("run", "-o", str(out), os.path.join(EXAMPLES, script), *args)
        assert proc.returncode == 0, proc.stderr
        profile = nnprofile.load(out)
        section = profile.sections[0]
        assert section.kind == "graph" and profile.sections[-1].kind == "script"
        forward = [e.layer for e in section.entries_of("forward_function")]
        assert forward[:4] == ["conv1/conv", "ReLU", "MaxPooling", "conv2/conv"], script
        assert len(forward) == len(set(forward))
        assert profile.header.active_steps == steps, script
        backward = section.entries_of("backward_function")
        if script == "lenet_infer.py":
            assert not backward and forward[-1] == "Softmax"
            # a step that trains nothing reads as inference: its layers' time is their forward, said so
            log = (out / "profile.log").read_text()
            assert "Top layers (forward): conv" in log and "backward" not in log.split("Profiling graph")[0]
            assert '"top_heading":"forward, ms per step"' in (out / "report.html").read_text()
        else:
            assert {e.layer for e in backward} == set(forward)
        trace_check.check(trace_check.load(out / "trace.json.gz"))
        with open(out / "profile_detail.csv", newline="") as f:
            assert len(list(csv.DictReader(f))) == sum(len(s.entries) for s in profile.sections)


def test_the_recorder_waits_for_a_gpu_device():
    """CUDA runs asynchronously: on a GPU context the recorder synchronises before each reading."""
    import types
    from nnprofile.recording.recorder import device_sync

    calls = []
    ext = types.SimpleNamespace(synchronize=lambda device_id: calls.append(device_id))
    gpu = types.SimpleNamespace(backend=["cudnn:float", "cuda:float", "cpu:float"], device_id="1")
    sync = device_sync(gpu, lambda name: ext)
    sync()
    assert calls == ["1"]
    assert device_sync(types.SimpleNamespace(backend=["cpu:float"], device_id="0"), lambda name: ext) is None
