"""Programs whatever builds their graphs, run unmodified under ``nnprofile run`` (tests/scripts/), each doing what
a program of NNabla's users does: a custom PythonFunction layer computing on NdArrays, MAML's second-order
meta-gradients, an L2 term over the weights, a pair of iterators a step and another for validation, a
validation with BatchNormalization in a minority of steps, a solver of the program's own, a multi-scale GAN
with new solvers at each stage, a reinforcement-learning loop with a target network updated by F.assign, a loop
longer than its window, an LSTM whose passes clear their buffers.

What the programs' structure fixes is asserted exactly: sections, steps, names, roles, parts. Times only where a
relation must hold (a layer that ran is above zero; the rest of a pass is named).
"""

import os

import pytest

import nnprofile
from conftest import ROOT, run_cli
from nnprofile.analysis import analyze
from nnprofile.base.schedule import Schedule

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
pytestmark = pytest.mark.slow
KEPT = list(range(2, 2 + Schedule.active))  # the steps the default schedule keeps, after the first set aside


def _run(tmp_path_factory, name, *args, options=()):
    out = tmp_path_factory.mktemp(name) / "result"
    proc = run_cli(
        "run", "-q", *options, "-o", str(out), os.path.join(SCRIPTS, name + ".py"), *args, cwd=str(out.parent)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    profile = nnprofile.load(out)
    return profile, analyze(profile), (out / "profile.log").read_text(), proc


def _line(script, text):
    lines = open(os.path.join(SCRIPTS, script)).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


def _loop(script, text):
    return "one step per iteration of the program's loop at %s:%d" % (script, _line(script, text))


def _layers(section, phase="forward_function"):
    return [e.layer for e in section.entries_of(phase)]


def test_a_custom_python_function_is_a_layer_and_its_ndarray_work_its_children(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "custom_layer", "--iterations", "12")
    assert [s.name for s in profile.sections] == ["loss", "verror", "custom_layer.py"]
    loss, verror, program = profile.sections
    assert _layers(loss) == [
        "fc1/affine",
        "ReLU",
        "PythonMul2",
        "PassThrough",
        "fc2/affine",
        "SoftmaxCrossEntropy",
        "Mean",
    ]
    mul = next(e for e in loss.entries_of("forward_function") if e.layer == "PythonMul2")
    assert (mul.layer_type, [c.label for c in mul.children]) == (
        "PythonMul2",
        ["Mul2 (on NdArrays)", "Identity (on NdArrays)"],
    )
    assert not program.entries_of("eager")  # the layer's inner calls are inside it, not beside it
    assert loss.info["role"] == "trained" and verror.info["role"] == "evaluation"
    assert (
        str(profile.header.steps)
        == _loop("custom_layer.py", "for i in range(args.iterations)") + " (updates a step: Adam 1)"
    )
    assert "Inside: forward_function (PythonMul2 : PythonMul2) ran Mul2 (on NdArrays) 1 call of" in log
    # The trace nests the children inside the layer's call (Perfetto draws slices inside slices).
    calls = [e for e in profile.timeline if e.name == "PythonMul2"]
    inside = [e for e in profile.timeline if e.cat == "inside" and e.name.startswith("Mul2")]
    assert inside and all(any(c.start <= x.start and x.end <= c.end for c in calls) for x in inside)


def test_maml_completes_with_one_section_per_graph_and_a_step_per_iteration(tmp_path_factory):
    profile, analysis, log, proc = _run(tmp_path_factory, "maml", "--iterations", "25")
    assert "meta loss" in proc.stdout  # the program ran to its end (it used to die at its eleventh iteration)
    assert [s.name for s in profile.sections] == ["meta", "vloss", "maml.py"]
    meta, vloss, _ = profile.sections
    assert meta.info["trained_by"] == ["Adam"] and meta.info["role"] == "trained"
    assert meta.info["forward_per_step"] == meta.info["backward_per_step"] == 1  # rebuilt each iteration: one graph
    assert vloss.info["role"] == "evaluation"
    h = profile.header
    assert h.kept_steps == KEPT and h.run_steps == 25
    assert str(h.steps) == _loop("maml.py", "for i in range(args.iterations)") + " (updates a step: Adam 1)"
    # BatchNormalization's double backward builds functions inside a backward: its children, not a graph.
    bn = [e for e in meta.entries_of("backward_function") if e.layer_type == "BatchNormalizationBackward"]
    assert bn and all(any(c.label == "Mean (auto_forward)" for c in e.children) for e in bn)
    assert "forward only (auto_forward)" not in log


def test_an_l2_term_on_the_weights_is_named_by_what_it_does_and_the_weight_it_reads(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "gcn_l2", "--iterations", "8")
    loss = profile.sections[0]
    layers = _layers(loss)
    assert "PowScalar (gcn_layer_0/affine/W)" in layers and "PowScalar (gcn_layer_1/affine/W)" in layers
    assert layers.count("gcn_layer_0/affine") == 1 and not any(x.startswith("gcn_layer_0/affine[") for x in layers)
    assert "copies" not in log


def test_iterators_are_named_as_the_program_names_them_and_a_validations_belong_to_it(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "pair_iterators", "--iterations", "12")
    program = profile.sections[-1]
    assert [e.label for e in program.entries_of("load_dataset")] == [
        "load_dataset (train.itr0)",
        "load_dataset (train.itr1)",
        "load_dataset (val.itr0)",
        "load_dataset (val.itr1)",
    ]
    parts = [p for p, _ in analysis.sections[-1].step.parts]
    assert parts[:4] == [
        "input (train.itr0)",
        "input (train.itr1)",
        "evaluation input (val.itr0, for 'vloss')",
        "evaluation input (val.itr1, for 'vloss')",
    ]
    assert analysis.sections[-1].step.kind_ms("input") == pytest.approx(
        sum(ms for p, ms in analysis.sections[-1].step.parts if p.startswith("input (train."))
    )


def test_no_layer_that_ran_reads_zero_in_a_validation_run_in_few_steps(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "bn_validation", "--iterations", "16")
    verror = next(s for s in profile.sections if s.name == "verror")
    assert verror.info["forward_per_step"] < 0.5  # a minority of the steps
    for s in profile.sections[:-1]:
        for e in s.entries_of("forward_function") + s.entries_of("backward_function"):
            assert e.mean_ms > 0, (s.name, e.label)
    assert "0.000000(ms)" not in log


def test_a_solver_of_the_programs_own_is_a_solver(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "riemannian", "--iterations", "10")
    loss, program = profile.sections
    assert loss.info["trained_by"] == ["RiemannianSgd"] and loss.info["role"] == "trained"
    assert [e.label for e in program.entries if e.phase in ("prepare_backward", "update")] == [
        "zero_grad (RiemannianSgd)",
        "update (RiemannianSgd)",
    ]
    [update] = program.entries_of("update")
    assert {"PowScalar (on NdArrays)", "Sub2 (on NdArrays)"} <= {c.label for c in update.children}
    assert str(profile.header.steps).endswith("(updates a step: RiemannianSgd 1)")
    assert "update (RiemannianSgd)" in [p for p, _ in analysis.sections[-1].step.parts]


def test_three_and_three_updates_an_iteration_with_new_solvers_at_each_stage_are_one_step(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "multiscale_gan", "--scales", "3", "--iterations", "4")
    h = profile.header
    assert h.run_steps == 12 and h.kept_steps == KEPT  # 3 stages of 4 iterations, each stage's among the kept
    assert str(h.steps).startswith(_loop("multiscale_gan.py", "for i in range(iterations)"))
    trained = [s for s in profile.sections if s.info.get("role") == "trained"]
    assert [s.info["trained_by"] for s in trained] == [
        ["Adam: dis0"],
        ["Adam: gen0"],
        ["Adam: dis1"],
        ["Adam: gen1"],
        ["Adam: dis2"],
        ["Adam: gen2"],
    ]


def test_a_reinforcement_learning_loop_steps_by_iteration_and_its_target_update_is_training(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "td3", "--iterations", "40")
    h = profile.header
    # 40 iterations, the first 7 filling the replay buffer (no update yet): 33 steps, as the corpus's TD3 counts its own
    assert h.run_steps == 33 and h.kept_steps == KEPT
    assert str(h.steps).startswith(_loop("td3.py", "for t in range(args.iterations)"))
    assert str(h.steps).endswith("the 7 iterations before its first update are before the first step")
    roles = {s.name: (s.info.get("role"), s.info.get("writes")) for s in profile.sections[:-1]}
    assert roles["update_actor_target"] == ("updates", ["target/actor"])
    assert roles["update_critic_target"] == ("updates", ["target/critic"])
    assert roles["target_q"][0] == "feeds" and roles["policy"][0] == "forward"  # the acting policy: no evaluation
    target = next(s for s in profile.sections if s.name == "update_actor_target")
    assert "Assign (target/actor/fc1/affine/W)" in _layers(target)
    assert not any("[" in x for x in _layers(target))  # no function is a copy of the layer whose weight it writes
    assert "updates parameters of 'target/actor' (F.assign)" in log


def test_the_header_of_the_final_files_counts_the_whole_run(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "long_train", "--iterations", "301")
    assert profile.header.run_steps == 301 and profile.header.kept_steps == KEPT
    assert "steps 2 to %d of 301 (the whole run) recorded" % KEPT[-1] in log


def test_every_pass_has_its_time_named_in_a_network_whose_passes_clear_their_buffers(tmp_path_factory):
    profile, analysis, log, _ = _run(tmp_path_factory, "lstm_lm", "--epochs", "2")
    for a in analysis.sections[:-1]:
        for c in a.coverage:
            assert c.named_share is not None and c.named_share >= 0.9, (a.section.name, c)


def test_a_checkpoint_is_a_part_of_the_step_of_its_own(tmp_path_factory):
    """A solver's save_states and load_states are the step's checkpoint, not the program's own Python ("other"),
    and the timeline says so; the program's own file is written where it writes it."""
    profile, analysis, log, proc = _run(tmp_path_factory, "checkpoints", "--iterations", "30")
    program = profile.sections[-1]
    save = next(e for e in program.entries if e.label == "save_states (Adam)")
    load = next(e for e in program.entries if e.label == "load_states (Adam)")
    assert save.phase == load.phase == "checkpoint" and save.runs >= 3 and load.runs == 1
    parts = dict(analysis.sections[-1].step.parts)
    assert parts["checkpoint"] > 0 and "update (Adam)" in parts
    assert "checkpoint" in next(line for line in log.splitlines() if line.startswith("Step of script"))
    assert "costly_checkpoint" in [a.rule for a in analysis.sections[-1].step.advice]
    cats = {e.cat for e in profile.timeline if e.name.startswith(("save_states", "load_states"))}
    assert cats == {"checkpoint"}
    assert proc.stdout.startswith("loss ")


def test_the_programs_own_garbage_collections_are_a_line_of_its_other(tmp_path_factory):
    """A full collection the program's own code sets off (gc.collect() in its loop, over 300,000 objects it keeps)
    is its own time, sampled as a line of its own, with what usually helps; the signal due during it does not land
    on the program's next line."""
    profile, analysis, log, proc = _run(tmp_path_factory, "collections", "--iterations", "30")
    step = analysis.sections[-1].step
    top = step.own_lines[0]
    assert top.where == "(garbage collection)" and top.function == "Python" and top.text == ""
    assert top.share > 0.5  # (a full collection over 300,000 objects, against a few assignments of arrays)
    other = next(line for line in log.splitlines() if line.startswith("Other:"))
    assert "(garbage collection) in Python (" in other
    [own] = [a for a in step.advice if a.rule == "own_python"]
    assert own.facts.hints == ("collection",)
    assert proc.stdout.startswith("loss ")
