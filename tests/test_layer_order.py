"""Layer-order regression tests as users write them: nnprofile.testing and its pytest plugin."""

import os
import subprocess
import sys

import pytest

import nnprofile
from conftest import FIXTURES, GOLDEN, LENET, ROOT
from nnprofile.testing import LayerOrderError, assert_layer_order, layer_order, order_difference
from nntxt_writer import mlp_project

SCRIPTS = os.path.join(ROOT, "tests", "scripts")


def test_the_order_of_a_project_is_its_logs_and_the_golden_file_holds_it():
    assert_layer_order(LENET, os.path.join(GOLDEN, "lenet_labels.txt"))
    assert_layer_order(os.path.join(FIXTURES, "shared_types.nntxt"), os.path.join(GOLDEN, "shared_types_labels.txt"))


@pytest.mark.slow
def test_a_programs_order_comes_from_its_result(tmp_path, monkeypatch):
    """A GAN recorded by nnprofile run: a section per graph, the layers named by scope (checked in)."""
    monkeypatch.chdir(tmp_path)  # the program writes its monitor's files where it runs
    profile, status = nnprofile.run(
        os.path.join(SCRIPTS, "gan.py"), "--iterations", "5", outdir=tmp_path, skip_first=1, active=3
    )
    assert status == 0
    golden = os.path.join(GOLDEN, "gan_order.txt")
    assert_layer_order(profile, golden)
    assert_layer_order(tmp_path, golden)  # the saved result, the same
    assert "Profiling graph 'loss_dis' (trained by Adam: dis" in "\n".join(layer_order(tmp_path))


def test_a_difference_says_what_was_added_removed_moved_and_which_class_changed():
    old = [
        "Profiling optimizer 'O' with network 'Main' ...",
        "load_dataset",
        "forward_function (conv1 : Convolution)",
        "forward_function (ReLU : ReLU)",
        "forward_function (pool : MaxPooling)",
        "forward_function (fc : Affine)",
        "forward_all",
        "Profile Completed.",
    ]
    new = [
        "Profiling optimizer 'O' with network 'Main' ...",
        "load_dataset",
        "forward_function (conv1 : ConvolutionCudaCudnn)",
        "forward_function (pool : MaxPooling)",
        "forward_function (ReLU : ReLU)",
        "forward_function (drop : Dropout)",
        "forward_all",
        "Profile Completed.",
    ]
    d = order_difference(old, new)
    assert d.added == [(5, "forward_function (drop : Dropout)")]
    assert d.removed == [(5, "forward_function (fc : Affine)")]
    # Two layers swapped: one of them is out of the longest common order.
    assert [label for _, _, label in d.moved] in (
        ["forward_function (ReLU : ReLU)"],
        ["forward_function (pool : MaxPooling)"],
    )
    assert d.changed == [(2, "forward_function (conv1 : ConvolutionCudaCudnn)", "Convolution", "ConvolutionCudaCudnn")]
    assert (
        "  class:   line 3: forward_function (conv1 : ConvolutionCudaCudnn): Convolution -> ConvolutionCudaCudnn"
        in d.lines()
    )
    assert not order_difference(old, list(old))


def test_the_same_layer_in_two_sections_is_two_lines():
    a = [
        "Profiling optimizer 'O' ...",
        "forward_function (fc : Affine)",
        "Profiling executor 'E' ...",
        "forward_function (fc : Affine)",
    ]
    b = ["Profiling optimizer 'O' ...", "forward_function (fc : Affine)", "Profiling executor 'E' ..."]
    assert order_difference(a, b).removed == [(3, "forward_function (fc : Affine)")]


def test_a_reordered_project_fails_and_the_original_passes(tmp_path):
    original, reordered = tmp_path / "mlp.nntxt", tmp_path / "reordered.nntxt"
    original.write_text(mlp_project([("ReLU", 32), ("Tanh", 16)]))
    reordered.write_text(mlp_project([("Tanh", 32), ("ReLU", 16)]))
    golden = tmp_path / "golden" / "mlp.txt"
    with pytest.raises(LayerOrderError, match="--nnprofile-update"):
        assert_layer_order(original, golden)  # no golden file yet
    from nnprofile.testing import golden as mode

    mode.UPDATE = True
    try:
        assert_layer_order(original, golden)
    finally:
        mode.UPDATE = False
    assert golden.read_text().splitlines() == layer_order(original)
    assert_layer_order(original, golden)
    with pytest.raises(LayerOrderError) as failure:
        assert_layer_order(reordered, golden)
    message = str(failure.value)
    assert "moved:   forward_function (Tanh : Tanh)" in message or "moved:   forward_function (ReLU : ReLU)" in message
    assert str(golden) in message


TEST_FILE = """
from nnprofile.testing import assert_layer_order

def test_the_network_keeps_its_layers():
    assert_layer_order({project!r}, "golden/order.txt")
"""


def _pytest(folder, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=str(folder),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_the_pytest_plugin_writes_the_golden_file_with_nnprofile_update(tmp_path):
    project = tmp_path / "net.nntxt"
    project.write_text(mlp_project([("ReLU", 16), ("Sigmoid", 8)]))
    (tmp_path / "test_net.py").write_text(TEST_FILE.format(project=str(project)))
    first = _pytest(tmp_path)
    assert first.returncode == 1 and "--nnprofile-update" in first.stdout
    update = _pytest(tmp_path, "--nnprofile-update")
    assert update.returncode == 0, update.stdout + update.stderr
    assert (tmp_path / "golden" / "order.txt").read_text().splitlines() == layer_order(project)
    again = _pytest(tmp_path)
    assert again.returncode == 0, again.stdout
    project.write_text(mlp_project([("Sigmoid", 16), ("ReLU", 8)]))
    changed = _pytest(tmp_path)
    assert changed.returncode == 1 and "moved:" in changed.stdout and "Sigmoid" in changed.stdout


def test_a_solver_changed_is_one_changed_line_each_and_the_layers_are_unchanged():
    """Momentum swapped for Adam leaves the layer order as it is: the graph's header and each solver call are one
    changed line each, no layer added or removed (it was a diff of every layer, both ways)."""
    from nnprofile.testing.order import order_difference

    golden = open(os.path.join(GOLDEN, "gan_order.txt"), encoding="utf-8").read().splitlines()
    swapped = [line.replace("Adam: gen", "Momentum: gen") for line in golden]
    diff = order_difference(golden, swapped)
    assert not diff.added and not diff.removed and not diff.moved and not diff.changed
    assert [old.split(" (")[0] for _, old, _ in diff.relabeled] == [
        "Profiling graph 'loss_gen'",
        "zero_grad",
        "weight_decay",
        "update",
    ]
