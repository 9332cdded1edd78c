"""Memory: per layer, per step, what fits, and running out of it explained."""

import csv
import resource
import subprocess
import sys

import pytest

import nnprofile
from conftest import LENET, ROOT
from nnprofile.base import buffers, sizes
from nnprofile.measure import peak


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    out = tmp_path_factory.mktemp("memory")
    profile = nnprofile.profile(LENET, runs=1, outdir=out, memory_limit="8GiB")
    return out, profile


def _detail(out, label):
    with open(out / "profile_detail.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if r["label"] == label][0]


@pytest.mark.slow
def test_per_layer_bytes_by_hand(lenet):
    out, _ = lenet
    conv = _detail(out, "forward_function (Convolution : Convolution)")
    assert conv["output_bytes"] == str(64 * 16 * 24 * 24 * 4) == "2359296"
    assert conv["parameter_bytes"] == str((16 * 1 * 5 * 5 + 16) * 4) == "1664"
    assert conv["gradient_bytes"] == "1664"
    assert conv["input_gradient_bytes"] == "0"  # the data needs no gradient
    affine = _detail(out, "forward_function (Affine : Affine)")
    assert affine["parameter_bytes"] == str((750 * 150 + 150) * 4) == "450600"
    assert affine["output_bytes"] == str(64 * 150 * 4) == "38400"
    assert affine["input_gradient_bytes"] == str(64 * 750 * 4)
    assert _detail(out, "load_dataset")["output_bytes"] == ""  # not a layer: no figure


def test_per_step_memory_in_summary(lenet):
    out, profile = lenet
    with open(out / "summary.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["item"] == "memory" and r["section"].startswith("optimizer")]
    by_name = {r["name"]: r for r in rows}
    assert by_name["parameters"]["bytes"] == str(118_926 * 4) == "475704"
    assert by_name["gradients"]["bytes"] == "475704"
    assert by_name["solver_state"]["bytes"] == str(2 * 475704)  # Adam: two states per parameter
    # parameters, their gradients and two Adam states stay for the whole step
    assert int(by_name["peak_estimated"]["bytes"]) == int(by_name["activations_at_peak"]["bytes"]) + 4 * 475704
    assert int(by_name["peak_measured"]["bytes"]) > 0 and "mallinfo2" in by_name["peak_measured"]["detail"]
    m = profile.sections[0].memory
    fixed = 4 * 475704
    assert by_name["largest_batch"]["bytes"] == str(int((8 * 1024**3 - fixed) / (m["activations_at_peak"] / 64)))
    log = (out / "profile.log").read_text()
    assert "Memory: parameters 464.55 KiB" in log and "Memory limit 8.00 GiB: the largest batch" in log


def test_solver_state_follows_the_solver():
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    x = nn.Variable((2, 3))
    loss = F.mean(PF.affine(x, 4))  # 3 x 4 + 4 = 16 floats
    sizes = {}
    for name, make in (("Adam", S.Adam), ("Momentum", S.Momentum), ("Sgd", S.Sgd)):
        solver = make()
        solver.set_parameters(nn.get_parameters())
        loss.forward()
        loss.backward()
        solver.update()
        sizes[name] = buffers.solver_state_bytes(solver)
    assert sizes == {"Adam": 2 * 64, "Momentum": 64, "Sgd": 0}


def test_the_estimate_follows_the_buffers_by_hand():
    """Three ReLUs in a chain on 10 floats, described as data: no NNabla needed."""
    from nnprofile.base.functions import FunctionInfo, Graph, VariableInfo

    variables = [VariableInfo(i, (10,), "float32") for i in range(4)]
    functions = [FunctionInfo(i, "ReLU", "ReLU", {}, [i], [i + 1], [i - 1 if i else None], [False]) for i in range(3)]
    est = buffers.estimate(
        functions, Graph(functions, variables), ["ReLU", "ReLU_2", "ReLU_3"], frozenset(), 4, training=False
    )
    # input 40 B stays; each output lives until its reader ran; the last is the result
    assert [c[2] for c in est.curve] == [80, 120, 120]
    assert (est.peak, est.peak_layer, est.peak_phase) == (120, "ReLU_2", "forward")


def test_sizes_and_what_fits():
    assert sizes.parse_size("8GiB") == 8 * 1024**3
    assert sizes.parse_size("512MB") == 512 * 1000**2
    assert sizes.parse_size("1e6") == 1_000_000
    for bad in ("lots", "-1GB", "0"):
        with pytest.raises(ValueError):
            sizes.parse_size(bad)
    # 100 MB fixed, 1 MB of activations per sample: 1 GB holds 900 samples
    assert sizes.largest_batch(1_000_000_000, 100_000_000, 64_000_000, 64) == 900
    assert sizes.largest_batch(50_000_000, 100_000_000, 64_000_000, 64) == 0


@pytest.mark.slow
def test_running_out_of_memory_is_one_line_with_a_batch_that_fits(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nnprofile",
            LENET,
            "--synthetic",
            "--batch-size",
            "200000",
            "--no-inference",
            "-q",
            "-o",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=300,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("nnprofile: error: out of memory in optimizer 'Optimizer'")
    assert "at layer 'Convolution' (Convolution, forward)" in line
    assert "estimated peak of a step is" in line and "RLIMIT_AS" in line
    fits = int(line.rsplit("--batch-size ", 1)[1].rstrip(")"))
    assert 1 <= fits < 200000


def test_the_gpu_path_reads_the_devices_used_memory(monkeypatch):
    """Under CUDA, NVML's used memory after every function, from a cleared cache: on a fake device."""
    import types
    import nnabla.ext_utils
    import nnabla.utils.nvml as nvml

    device = {"used": 1000, "cleared": 0, "synced": 0}
    monkeypatch.setattr(nvml, "nvmlInit", lambda flags=0: True)
    monkeypatch.setattr(nvml, "nvmlDeviceGetHandleByIndex", lambda index: ("gpu", index))
    monkeypatch.setattr(nvml, "nvmlDeviceGetMemoryInfo", lambda handle: types.SimpleNamespace(used=device["used"]))
    fake = types.SimpleNamespace(clear_memory_cache=lambda: device.update(cleared=device["cleared"] + 1))
    monkeypatch.setattr(nnabla.ext_utils, "import_extension_module", lambda name: fake)
    used, clear = peak.device_reader("cudnn", "1")

    def step(post):  # a step that allocates 3000 bytes, then frees 2000 of them
        for delta in (1000, 2000, -2000):
            device["used"] += delta
            post(None)

    grown, how = peak.measure_device_step(step, used, clear, lambda: device.update(synced=device["synced"] + 1))
    assert grown == 3000 and device["cleared"] == 1 and device["synced"] == 5
    assert "NVML" in how
    monkeypatch.setattr(nvml, "nvmlInit", lambda flags=0: (_ for _ in ()).throw(OSError("no NVML")))
    assert peak.device_reader("cudnn", "0") is None  # no GPU: not measured, never made up


@pytest.mark.slow
def test_a_bad_memory_limit_is_one_line_before_any_work(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", LENET, "--memory-limit", "lots", "-o", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("nnprofile: error: --memory-limit: 'lots' is not a size")
    assert not (tmp_path / "profile.log").exists()
