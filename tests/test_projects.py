"""Every NNC project a user can bring: the 17 real ones, recurrent ones, .nnp files."""

import glob
import os
import zipfile

import numpy as np
import pytest

from agreement import check_outputs_agree
import nnprofile
from conftest import FIXTURES, GOLDEN, LENET, SAMPLES, require, run_cli
from golden_util import skeleton
from nnprofile.project import load_project

CORPUS_NAMES = [
    "01_logistic_regression.20170804.nntxt",
    "01_logistic_regression.20180720.nntxt",
    "02_binary_cnn.20170804.nntxt",
    "02_binary_cnn.20180720.nntxt",
    "06_auto_encoder.20170804.nntxt",
    "06_auto_encoder.20180720.nntxt",
    "10_deep_mlp.20170804.nntxt",
    "10_deep_mlp.20180720.nntxt",
    "11_deconvolution.20170804.nntxt",
    "11_deconvolution.20180720.nntxt",
    "12_residual_learning.20170804.nntxt",
    "12_residual_learning.20180720.nntxt",
    "binary_connect_mnist_LeNet.20180720.nntxt",
    "binary_connect_mnist_MLP.20180723.nntxt",
    "binary_net_mnist_LeNet.20180723.nntxt",
    "binary_net_mnist_MLP.20180723.nntxt",
    "binary_weight_mnist_MLP.20180723.nntxt",
]
RECURRENT = [os.path.join(FIXTURES, n) for n in ("elman.nntxt", "lstm.nntxt", "repeat.nntxt")]


def corpus_file(name):
    path = os.path.join(SAMPLES, name)
    require(
        os.path.isfile(path), "the NNC sample project %s (the corpus folder %s; set NNPROFILE_CORPUS)" % (name, SAMPLES)
    )
    return path


def profile_into(path, outdir, runs=1):
    project = load_project([path])
    profile = nnprofile.profile(path, outdir=outdir, runs=runs, warmup=0, synthetic=True)
    return project, profile


def executed_layers(network):
    """The functions NNabla built for a network, as the project (unrolled) names them."""
    return sorted(name.replace("$EC$/", "") for name in network.functions)


def check_one_entry_per_function(project, profile):
    for section in profile.sections:
        component = (project.optimizers if section.kind == "optimizer" else project.executors)[section.name]
        expected = executed_layers(component.network)
        forward = [e.layer for e in section.entries_of("forward_function")]
        setup = [e.layer for e in section.entries_of("setup_function")]
        assert sorted(forward) == expected, section.title
        assert setup == forward
        backward = [e.layer for e in section.entries_of("backward_function")]
        assert len(backward) == len(set(backward)) and set(backward) <= set(forward)
        if section.kind == "optimizer":
            assert backward, "a training section has backward entries"
        for e in section.entries:
            assert "$EC$" not in e.label
        assert len({e.label for e in section.entries}) == len(section.entries)


@pytest.mark.slow
def test_the_corpus_is_here():
    require(os.path.isdir(SAMPLES), "the NNC sample corpus folder %s (set NNPROFILE_CORPUS)" % SAMPLES)
    assert sorted(os.path.basename(p) for p in glob.glob(os.path.join(SAMPLES, "*.nntxt"))) == sorted(CORPUS_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_project_profiles_with_synthetic_data(name, tmp_path):
    path = corpus_file(name)
    project, profile = profile_into(path, tmp_path)
    assert profile.complete
    assert [s.kind for s in profile.sections] == ["optimizer", "executor"]
    check_one_entry_per_function(project, profile)
    check_outputs_agree(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("path", RECURRENT, ids=os.path.basename)
def test_recurrent_project_unrolls_into_named_entries(path, tmp_path):
    project, profile = profile_into(path, tmp_path)
    assert profile.complete
    check_one_entry_per_function(project, profile)
    check_outputs_agree(tmp_path)
    forward = [e.layer for e in profile.sections[0].entries_of("forward_function")]
    unrolled = [name for name in forward if name.endswith("]")]
    assert len(unrolled) >= 6, forward


@pytest.mark.slow
def test_elman_unrolls_in_time_order(tmp_path):
    proc = run_cli(os.path.join(FIXTURES, "elman.nntxt"), "--synthetic", "--runs", "1", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(GOLDEN, "elman_labels.txt")) as f:
        assert skeleton(proc.stdout) == f.read().splitlines()


def test_delay_initial_state_comes_from_its_generator(tmp_path):
    _, profile = profile_into(os.path.join(FIXTURES, "lstm.nntxt"), tmp_path)
    for section in profile.sections:
        assert [e.label for e in section.entries_of("generate_data")] == [
            "generate_data (Delay_T)",
            "generate_data (Delay_2_T)",
        ]


def _trained_parameters(tmp_path):
    import nnabla as nn

    load_project([LENET])
    for p in nn.get_parameters(grad_only=False).values():
        p.d = np.full(p.shape, 0.25, dtype=np.float32)
    h5 = tmp_path / "trained.h5"
    nn.save_parameters(str(h5))
    nnp = tmp_path / "lenet.nnp"
    with zipfile.ZipFile(nnp, "w") as z:
        z.writestr("nnp_version.txt", "0.1\n")
        z.write(LENET, "network.nntxt")
        z.write(h5, "parameter.h5")
    return h5, nnp


def test_trained_parameters_replace_fresh_ones(tmp_path):
    import nnabla as nn

    h5, nnp = _trained_parameters(tmp_path)
    for files in ([LENET, str(h5)], [str(nnp)]):
        load_project(files)
        params = nn.get_parameters(grad_only=False)
        assert params and all(np.all(p.d == 0.25) for p in params.values()), files
    load_project([LENET])
    assert not all(np.all(p.d == 0.25) for p in nn.get_parameters(grad_only=False).values())


@pytest.mark.slow
def test_nnp_and_parameter_files_on_the_command_line(tmp_path):
    h5, nnp = _trained_parameters(tmp_path)
    proc = run_cli(LENET, str(h5), "--runs", "1", "--no-inference", "-o", str(tmp_path / "a"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith("lenet.nntxt %s" % h5)
    # An .nnp's datasets resolve against its own folder: here there are none.
    proc = run_cli(str(nnp), "--runs", "1", "-o", str(tmp_path / "b"))
    assert proc.returncode == 2 and "--synthetic" in proc.stderr
    proc = run_cli(str(nnp), "--synthetic", "--runs", "1", "-o", str(tmp_path / "c"))
    assert proc.returncode == 0, proc.stderr
    check_outputs_agree(tmp_path / "c")


@pytest.mark.slow
def test_synthetic_targets_are_binary_for_binary_cross_entropy(tmp_path):
    from nnprofile.project.data import SyntheticSource

    project = load_project([corpus_file("01_logistic_regression.20180720.nntxt")])
    o = project.optimizers["Optimizer"]
    batch = SyntheticSource(o.network, o.dataset_assign).next()
    assert set(np.unique(batch["y"])) <= {0.0, 1.0}  # BinaryCrossEntropy targets


def test_synthetic_labels_are_class_indices_for_categorical_cross_entropy(tmp_path):
    from nnprofile.project.data import SyntheticSource

    project = load_project([LENET])
    o = project.optimizers["Optimizer"]
    batch = SyntheticSource(o.network, o.dataset_assign).next()
    y = batch["y"]
    assert y.shape == (64, 1) and y.min() >= 0 and y.max() <= 9 and np.all(y == np.round(y))
    assert batch["x"].shape == (64, 1, 28, 28)
