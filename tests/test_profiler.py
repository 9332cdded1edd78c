"""The profiler's sequence, driven in-process with a fake clock."""

import os

import numpy as np
import pytest

import nnprofile
import nnprofile.measure.sequence
from conftest import FIXTURES, FakeClock, LENET
from nnprofile.analysis import coverage
from nnprofile.base.choices import PHASES
from nnprofile.project import load_project
from nnprofile.measure.session import Selection, plan

SHARED = os.path.join(FIXTURES, "shared_types.nntxt")


def _profile(path, tmp_path, runs=3, clock=None, mode="isolated", **selection):
    """A profile on a fake clock: every sample is one clock step, no overhead to take off."""
    return nnprofile.profile(
        path, runs=runs, synthetic=True, mode=mode, clock=clock or FakeClock(steps=(1000,)), overhead_ns=0, **selection
    )


def test_every_entry_has_the_fake_clocks_exact_times(tmp_path):
    profile = _profile(SHARED, tmp_path)
    assert profile.complete
    for section in profile.sections:
        assert section.complete
        for entry in section.entries:
            assert entry.samples_ns == [1000, 1000, 1000], entry.label
            assert entry.mean_ms == 0.001


def test_phases_come_in_nnc_order(tmp_path):
    profile = _profile(SHARED, tmp_path)
    train, infer = profile.sections
    order = [PHASES.index(e.phase) for e in train.entries]
    assert order == sorted(order)
    assert [e.phase for e in train.entries][-5:] == [
        "backward_all",
        "backward_all_wo_zero_grad",
        "weight_decay",
        "update",
        "monitor_loss",
    ]
    assert [e.phase for e in infer.entries][-1] == "forward_all"
    assert not any(e.phase.startswith("backward") for e in infer.entries)


def test_one_entry_per_layer_and_phase(tmp_path):
    project = load_project([SHARED])
    profile = _profile(SHARED, tmp_path)
    train, infer = profile.sections
    layers = list(project.optimizers["Optimizer"].network.functions)
    for phase in ("setup_function", "forward_function"):
        assert [e.layer for e in train.entries_of(phase)] == layers
    assert [e.layer for e in train.entries_of("backward_function")] == layers[::-1]
    runtime_layers = list(project.executors["Executor"].network.functions)
    assert [e.layer for e in infer.entries_of("forward_function")] == runtime_layers
    for e in train.entries_of("forward_function"):
        assert e.impl_class == e.layer_type  # on the CPU, the class is the type's own
        assert e.label == "forward_function (%s : %s)" % (e.layer, e.impl_class)


@pytest.mark.slow
def test_weight_decay_entry_only_with_weight_decay(tmp_path):
    with_wd = _profile(SHARED, tmp_path, runs=1, training=True, inference=False)
    assert [e.label for e in with_wd.sections[0].entries_of("weight_decay")] == ["weight_decay (Adam)"]
    without = _profile(LENET, tmp_path, runs=1, training=True, inference=False)
    assert without.sections[0].entries_of("weight_decay") == []


def test_timed_updates_do_not_change_the_parameters(tmp_path):
    import nnabla as nn

    seen = []
    real_update = nnprofile.measure.sequence.SolverSnapshot.restore

    def restore(snapshot):  # every timed update is followed by a restore of weights and solver state
        real_update(snapshot)
        seen.append({k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()})

    nnprofile.measure.sequence.SolverSnapshot.restore = restore
    try:
        load_project([SHARED])
        before = {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}
        nnprofile.profile(SHARED, runs=5, synthetic=True, inference=False)
    finally:
        nnprofile.measure.sequence.SolverSnapshot.restore = real_update
    assert len(seen) >= 5
    for state in seen:
        for k in before:
            np.testing.assert_array_equal(before[k], state[k])
    after = nn.get_parameters(grad_only=False)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k].d)


def test_selection_by_name_and_kind(tmp_path):
    project = load_project([SHARED])
    assert [s.kind for s in plan(project, Selection(training=False))] == ["executor"]
    assert [s.name for s in plan(project, Selection(optimizers=["Optimizer"], inference=False))] == ["Optimizer"]
    from nnprofile.base.errors import ProfileError

    with pytest.raises(ProfileError, match="no executor named 'Nope'"):
        plan(project, Selection(executors=["Nope"]))
    with pytest.raises(ProfileError, match="nothing to profile"):
        plan(project, Selection(training=False, inference=False))


def _profile_mode(path, tmp_path, mode, runs=3):
    return _profile(path, tmp_path, runs=runs, mode=mode)


@pytest.mark.slow
def test_graph_mode_times_each_function_between_its_hooks(tmp_path):
    graph = _profile_mode(SHARED, tmp_path, "graph")
    isolated = _profile_mode(SHARED, tmp_path, "isolated")
    for g, i in zip(graph.sections, isolated.sections):
        assert [e.label for e in g.entries] == [e.label for e in i.entries]
        layer_entries = [e for e in g.entries if e.is_layer_work]
        assert layer_entries
        for e in layer_entries:
            # one clock step between a function's pre- and post-hook, one sample per pass
            assert e.samples_ns == [1000, 1000, 1000], e.label


def test_coverage_compares_layer_sums_with_whole_passes(tmp_path):
    profile = _profile_mode(SHARED, tmp_path, "graph", runs=2)
    train = profile.sections[0]
    forward, backward = coverage(train)
    n_forward = len(train.entries_of("forward_function"))
    assert (forward.layer_phase, forward.whole_phase) == ("forward_function", "forward_all")
    assert forward.layers_ms == pytest.approx(n_forward * 0.001)
    assert forward.whole_ms == 0.001  # the whole pass is one clock step too
    assert forward.share == pytest.approx(n_forward)
    assert backward.whole_phase == "backward_all"
    assert [c.whole_phase for c in coverage(profile.sections[1])] == ["forward_all"]


def test_unknown_mode_is_refused():
    from nnprofile.base.errors import ProfileError

    with pytest.raises(ProfileError, match="unknown mode"):
        nnprofile.profile(SHARED, mode="fast")


def test_load_dataset_is_also_timed_as_nnabla_cli_times_it(tmp_path):
    """Beside its entry (a read between the step's other work), load_dataset in reads in a row, after a pass
    through the dataset (none here: synthetic data), as nnabla_cli profile reads it; both said, each defined."""
    from nnprofile.render.sampling import load_line
    from nnprofile.render import log

    profile = _profile(SHARED, tmp_path)
    for section in profile.sections:
        assert section.info["load_dataset_burst"] == {"mean_ms": 0.001, "reads": 100, "after": 0}
        line = load_line(section)
        assert line.startswith("load_dataset two ways: 0.001000 ms a read with the rest of the step between reads")
        assert "0.001000 ms a read in 100 reads in a row (nnabla_cli profile's way" in line
    text = log.render(profile)
    assert text.count("Input: load_dataset two ways") == len(profile.sections)
    from nnprofile.result.file import save

    again = nnprofile.load(save(profile, str(tmp_path)))
    assert [s.info["load_dataset_burst"] for s in again.sections] == [
        s.info["load_dataset_burst"] for s in profile.sections
    ]
