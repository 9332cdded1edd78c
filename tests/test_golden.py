"""The order and names of the entries are the contract with NNC users."""

import os

import pytest

from conftest import FIXTURES, GOLDEN, LENET, run_cli
from golden_util import section_labels, skeleton


def _golden(name):
    with open(os.path.join(GOLDEN, name)) as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def lenet_log(tmp_path_factory):
    out = tmp_path_factory.mktemp("lenet")
    proc = run_cli(LENET, "-o", str(out), "--runs", "2")
    assert proc.returncode == 0, proc.stderr
    with open(out / "profile.log") as f:
        return f.read()


@pytest.mark.slow
def test_lenet_log_matches_golden(lenet_log):
    assert skeleton(lenet_log) == _golden("lenet_labels.txt")


def test_lenet_training_entries_are_the_tutorials(lenet_log):
    """The tutorial's own log (004 seed), times and in_place marks removed."""
    ours = [l.replace(" : in_place)", ")") for l in section_labels(lenet_log, "Profiling optimizer 'Optimizer'")]
    assert ours == _golden("nnc_tutorial_lenet_labels.txt")


@pytest.mark.slow
def test_layers_sharing_a_type_keep_their_own_names(tmp_path):
    proc = run_cli(os.path.join(FIXTURES, "shared_types.nntxt"), "--synthetic", "--runs", "1", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "profile.log").read_text()
    assert skeleton(log) == _golden("shared_types_labels.txt")
    labels = section_labels(log, "Profiling optimizer")
    assert "forward_function (Affine_3 : Affine)" in labels
    assert len(labels) == len(set(labels))
