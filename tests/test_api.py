"""The library: nnprofile.profile, load, compare_results, DataFrames, and what an import changes."""

import os
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import pytest

import nnprofile
from conftest import FIXTURES, LENET, ROOT, lenet_with_wrong_size_validation
from nnprofile.compare.saved import ENTRY_COLUMNS

SHARED = os.path.join(FIXTURES, "shared_types.nntxt")
FRAME_COLUMNS = [
    "section",
    "label",
    "phase",
    "layer",
    "layer_type",
    "class",
    "mean_ms",
    "median_ms",
    "std_ms",
    "min_ms",
    "max_ms",
    "p90_ms",
    "runs",
    "rse",
    "flops",
    "bytes_read",
    "bytes_written",
    "gflops_per_s",
]


@pytest.fixture(scope="module")
def lenet(tmp_path_factory):
    out = tmp_path_factory.mktemp("api")
    return out, nnprofile.profile(LENET, runs=3, outdir=out)


@pytest.mark.slow
def test_profile_gives_a_dataframe_with_a_row_per_entry(lenet):
    out, profile = lenet
    frame = profile.to_dataframe()
    assert isinstance(frame, pd.DataFrame)
    assert set(FRAME_COLUMNS) <= set(frame.columns)
    assert list(frame["label"]) == profile.labels()  # log order
    with open(out / "profile.log") as f:
        logged = [line.rsplit(" ", 1)[0] for line in f if line.rstrip().endswith("(ms)")]
    assert list(frame["label"]) == logged
    for column in ("mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "rse", "gflops_per_s"):
        assert frame[column].dtype == np.float64, column
    for column in ("runs", "flops", "bytes_read", "bytes_written"):
        assert str(frame[column].dtype) == "Int64", column
    assert (frame["runs"] == 3).all()
    conv = frame[frame["label"] == "forward_function (Convolution : Convolution)"].iloc[0]
    assert conv["flops"] == 29_491_200 + 589_824 and conv["gflops_per_s"] > 0
    load = frame[frame["phase"] == "load_dataset"].iloc[0]
    assert pd.isna(load["flops"]) and pd.isna(load["gflops_per_s"])  # not a layer: no figure, not zero
    assert (frame["mean_ms"] == [e.mean_ms for s in profile.sections for e in s.entries]).all()


def test_load_gives_back_the_same_profile(lenet):
    out, profile = lenet
    again = nnprofile.load(out)
    assert again.labels() == profile.labels()
    assert nnprofile.load(out / "result.json").labels() == profile.labels()
    pd.testing.assert_frame_equal(again.to_dataframe(), profile.to_dataframe())


@pytest.mark.slow
def test_without_an_outdir_nothing_is_written(tmp_path, monkeypatch):
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this test's own: other workers make caches too
    profile = nnprofile.profile(LENET, runs=1, inference=False)
    assert profile.complete and profile.sections[0].entries
    assert os.listdir(work) == []
    assert os.listdir(temp) == []  # NNabla's dataset cache went to a folder since removed


@pytest.mark.slow
def test_a_failure_keeps_the_partial_profile_on_the_exception(tmp_path):
    # The validation data has images of the wrong size: training is measured, inference fails.
    project = lenet_with_wrong_size_validation(tmp_path)
    with pytest.raises(nnprofile.ProfileError) as failure:
        nnprofile.profile(project, runs=1)
    partial = failure.value.profile
    assert partial is not None and not partial.complete
    assert partial.sections[0].complete and partial.sections[0].entries_of("update")
    assert not partial.sections[1].complete


@pytest.mark.slow
def test_importing_nnprofile_leaves_nnabla_alone():
    code = "import logging, nnprofile, nnabla; print(logging.getLogger('nnabla').level, 'nnabla' in dir(nnprofile))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(0), "False"]  # NOTSET: the user's logging configuration rules


def test_the_api_is_exported():
    for name in (
        "profile",
        "load",
        "compare_results",
        "analyze",
        "Profile",
        "Entry",
        "Section",
        "ProfileError",
        "Interrupted",
        "Comparison",
        "__version__",
    ):
        assert hasattr(nnprofile, name), name


@pytest.mark.slow
def test_compare_results_gives_a_dataframe_of_compare_entries(tmp_path):
    a = nnprofile.profile(SHARED, runs=3, synthetic=True, inference=False)
    b = nnprofile.profile(SHARED, runs=3, synthetic=True, inference=False)
    nnprofile.profile(SHARED, runs=3, synthetic=True, inference=False, outdir=tmp_path / "c")
    comparison = nnprofile.compare_results(a, b, tmp_path / "c")
    frame = comparison.to_dataframe()
    assert list(frame.columns) == ENTRY_COLUMNS
    assert set(frame["configuration"]) == {"run 1", "run 2", "c"}
    entries = frame.iloc[: len(comparison.entry_rows)]
    assert (entries["n"] == 3).all()
    # Per layer, forward + backward means: no invented sample count, median or spread.
    layers = frame.iloc[len(comparison.entry_rows) :]
    assert len(layers) == 3 * len(a.sections[0].entries_of("forward_function"))
    assert layers["n"].isna().all() and layers["median_ms"].isna().all() and layers["std_ms"].isna().all()
    assert layers["ci95_low"].isna().all()
    assert comparison.write(str(tmp_path / "cmp"))


def test_unknown_mode_and_missing_project_are_clear_errors(tmp_path):
    with pytest.raises(nnprofile.ProfileError, match="unknown mode"):
        nnprofile.profile(LENET, mode="fast")
    with pytest.raises(nnprofile.ProfileError, match="no such file"):
        nnprofile.profile(tmp_path / "missing.nntxt")
