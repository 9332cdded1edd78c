"""Programs as people write them, each a pattern NNabla's examples and tutorials use, recorded unmodified
(``nnprofile run``): what the profile says of their steps, graphs, parts and notes, exactly.

- vat.py: one solver updated twice per iteration on two graphs, a forward-only graph feeding both losses;
- lstm_lm.py: a validation after each epoch, gradient clipping by functions on NdArrays, a test after the loop;
- tiny_mlp.py: functions of a few microseconds, a name bound to a second graph, a solver used once before;
- word2vec.py: an element-wise product as the heaviest layer, a similarity graph after the loop;
- validate_after.py: a validation reading its iterator before the loop and after it, counting its passes.

Nothing here asserts a time: what the programs' structure fixes, and that figures agree with each other.
"""

import os
import sys

import pytest

import nnprofile
from conftest import ROOT, run_cli
from nnprofile.analysis import analyze
from nnprofile.render.advice import words

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
CONV_WORDS = ("maps", "kernel", "stride", "pooling")


def _run(tmp_path_factory, name, *args, options=()):
    out = tmp_path_factory.mktemp(name) / "result"
    script = os.path.join(SCRIPTS, name + ".py")
    proc = run_cli("run", "-q", *options, "-o", str(out), script, *args, cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr
    profile = nnprofile.load(out)
    return profile, analyze(profile), (out / "profile.log").read_text()


def _line(script, text, start=0):
    """The line number of the first line of a test script holding ``text``."""
    lines = open(os.path.join(SCRIPTS, script)).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if i >= start and text in line)


def _step(analysis):
    return analysis.sections[-1].step


def _parts_hold_together(step):
    """Parts add up to the step; none is negative; every share within the whole."""
    assert sum(ms for _, ms in step.parts) == pytest.approx(step.step_ms, abs=1e-6)
    assert all(ms >= 0 for _, ms in step.parts)


@pytest.fixture(scope="module")
def vat(tmp_path_factory):
    return _run(tmp_path_factory, "vat", "--iterations", "11", "--val-interval", "4")


@pytest.mark.slow
def test_one_solver_updated_twice_an_iteration_is_one_step(vat):
    profile, analysis, log = vat
    h = profile.header
    # 11 iterations of two updates each: 11 steps, the first set aside, 10 kept (the default window's)
    assert h.skipped_steps == 1 and h.kept_steps == list(range(2, 12))
    assert str(h.steps) == "one step per iteration of the program's loop at vat.py:%d (updates a step: Adam 2)" % _line(
        "vat.py", "for i in range(args.iterations)"
    )
    names = [s.name for s in profile.sections]
    assert names == ["loss_l", "yu", "loss_k", "loss_u", "err", "vat.py"]
    info = {s.name: s.info for s in profile.sections[:-1]}
    assert info["loss_l"]["forward_per_step"] == info["loss_u"]["forward_per_step"] == 1  # once an iteration
    assert info["yu"]["role"] == "feeds" and info["yu"]["feeds"] == ["loss_k", "loss_u"]
    assert info["loss_k"]["role"] == "backward" and info["err"]["role"] == "evaluation"
    assert "forward only, part of training: feeds 'loss_k' and 'loss_u'" in log


@pytest.mark.slow
def test_a_graph_that_feeds_training_is_never_advised_as_an_evaluation(vat):
    profile, analysis, log = vat
    step = _step(analysis)
    _parts_hold_together(step)
    parts = dict(step.parts)
    for graph in ("loss_l", "yu", "loss_k", "loss_u", "err"):  # every graph that ran has its part
        assert parts["forward (%s)" % graph] > 0, graph
    evaluations = [a.text for a in step.advice if a.rule == "costly_evaluation"]
    assert not any("'yu'" in text for text in evaluations)
    assert {g.name: g.evaluation for g in step.graphs} == {
        "loss_l": False,
        "yu": False,
        "loss_k": False,
        "loss_u": False,
        "err": True,
    }


@pytest.fixture(scope="module")
def lstm(tmp_path_factory):
    # (20 steps kept: a window over the validations after its first two epochs)
    return _run(tmp_path_factory, "lstm_lm", "--epochs", "3", "--iters-per-epoch", "8", options=("--active", "20"))


@pytest.mark.slow
def test_a_validation_after_each_epoch_has_its_part_and_the_test_after_the_loop_is_said(lstm):
    profile, analysis, log = lstm
    h = profile.header
    loop = _line("lstm_lm.py", "for i in range(args.iters_per_epoch)")
    said = "one step per iteration of the program's loop at lstm_lm.py:%d (updates a step: Sgd 1)" % loop
    assert str(h.steps) == said and h.kept_steps == list(range(2, 22))
    loss, vloss, tloss, outside, program = profile.sections
    assert (loss.name, vloss.name) == ("loss", "vloss") and vloss.info["role"] == "evaluation"
    # validations after epochs 1 and 2 (3 batches each) fall in steps 9 and 17; the third after the last step
    assert sum(e for e in vloss.entries_of("forward_all")[0].round_sizes) == 6
    step = _step(analysis)
    _parts_hold_together(step)
    parts = dict(step.parts)
    assert parts["forward (vloss)"] > 0 and parts["evaluation input (valid, for 'vloss')"] > 0
    [after] = [str(n) for n in profile.notes if n.kind == "after_the_loop"]
    assert "graph 'vloss' 3 forward passes" in after  # a graph of the steps, run after them too: in no figure
    # the test after the loop: a section of its own, outside the steps, its passes counted
    assert (tloss.name, tloss.info["role"], tloss.info["outside"]) == ("tloss", "evaluation", "after the last step")
    assert tloss.info["passes"] == {"forward": 4} and "forward (tloss)" not in parts
    assert [e.label for e in outside.entries] == ["load_dataset (test)"]  # its data, read only then


@pytest.mark.slow
def test_gradient_clipping_on_ndarrays_is_eager_work_at_the_programs_lines(lstm):
    profile, analysis, log = lstm
    program = profile.sections[-1]
    square = _line("lstm_lm.py", "F.sum(F.pow_scalar(p.grad")
    add = _line("lstm_lm.py", "total = squared if total is None")
    labels = [e.label for e in program.entries_of("eager")]
    assert labels == [
        "eager (PowScalar at lstm_lm.py:%d)" % square,
        "eager (Sum at lstm_lm.py:%d)" % square,
        "eager (Add2 at lstm_lm.py:%d)" % add,
    ]
    # 5 parameters (embed W; the gates' W and b; the output's W and b): each gradient squared and summed once a
    # step, the 5 sums added by 4 NdArray additions
    powers, sums, adds = program.entries_of("eager")
    steps = len(profile.header.kept_steps)
    assert (powers.round_sizes, sums.round_sizes, adds.round_sizes) == ([5] * steps, [5] * steps, [4] * steps)
    assert dict(_step(analysis).parts)["eager"] > 0
    assert profile.timeline and any(e.cat == "eager" for e in profile.timeline)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _run(tmp_path_factory, "tiny_mlp", "--iterations", "28")  # ends with the hooks on


@pytest.mark.slow
def test_a_name_bound_to_a_second_graph_and_a_solver_used_before_the_loop(tiny):
    profile, analysis, log = tiny
    first = _line("tiny_mlp.py", "loss = F.reduce_mean")
    assert [s.name for s in profile.sections] == [  # the graph of the steps keeps the program's name
        "loss",
        "loss (line %d)" % first,
        "tiny_mlp.py",
        "tiny_mlp.py",
    ]
    assert str(profile.header.steps) == (
        "one step per iteration of the program's loop at tiny_mlp.py:%d (updates a step: "
        "Adam 1)" % _line("tiny_mlp.py", "for i in range(args.iterations)")
    )
    # the first model, trained before the loop: a section of its own, outside the steps
    _, before, outside, program = profile.sections
    assert before.info["outside"] == "before the first kept step" and before.info["trained_by"] == ["Sgd"]
    assert before.info["passes"] == {"forward": 2, "backward": 2}
    # the program's calls outside the steps: the first solver's, and the eager work after the loop
    assert outside.kind == "outside" and outside.info["outside"] == "before the first kept step and after the last step"
    assert [e.label for e in outside.entries_of("update")] == ["update (Sgd)"] and outside.entries_of("eager")
    assert all(e.source and "tiny_mlp.py" in e.source for e in outside.entries_of("eager"))
    assert "Profiling calls outside the kept steps of 'tiny_mlp.py'" in log


@pytest.mark.slow
def test_tiny_functions_are_timed_against_the_hooks_cost_fitted_to_the_program(tiny):
    profile, analysis, log = tiny
    hooks = profile.header.hooks_in_program
    graph = profile.sections[0]
    assert hooks["signatures"] == 0  # measured on the chain: no replica of the program's functions is run
    assert hooks["forward_scale"] > 0 and hooks["backward_scale"] > 0
    assert "Hooks in this program: the gaps between the functions of its passes hold" in log
    # what is taken off a function is its kind's cost, scaled to the program: the same for every call of it
    for e in graph.entries_of("forward_function"):
        assert 0 <= e.overhead_ns < max(e.samples_ns)


@pytest.fixture(scope="module")
def word2vec(tmp_path_factory):
    return _run(tmp_path_factory, "word2vec", "--iterations", "24")  # ends with the hooks on


@pytest.mark.slow
def test_an_element_wise_layer_gets_advice_that_fits_it(word2vec):
    profile, analysis, log = word2vec
    step = _step(analysis)
    _parts_hold_together(step)
    assert step.top_layers[0].layer == "Mul2"
    for a in map(words, step.advice):
        if a.rule == "dominant_layer":
            assert "element-wise" in a.text and not any(w in a.text for w in CONV_WORDS), a.text
    [after] = [s for s in profile.sections if s.info.get("outside") == "after the last step"]
    assert after.info["passes"] == {"forward": 1} and after.info["role"] == "evaluation"


@pytest.mark.slow
def test_work_after_the_loop_in_the_steps_without_the_hooks_is_seen(tmp_path_factory):
    """23 iterations: the program ends in the steps that run without the hooks (after the 20 kept ones and the
    one set aside, steps 22 and 23); its similarity graph is made past the loop, where the hooks go back on, so it
    is seen after the last step, and nothing is said unseen."""
    profile, analysis, log = _run(tmp_path_factory, "word2vec", "--iterations", "23")
    [after] = [s for s in profile.sections if s.info.get("outside") == "after the last step"]
    assert after.info["passes"] == {"forward": 1}
    assert not any(n.kind == "hooks_off_at_end" for n in profile.notes)


@pytest.mark.slow
@pytest.mark.parametrize("epochs,n", [(1, 120), (3, 50)])
def test_an_inference_loop_has_every_step_counted_past_its_window(tmp_path_factory, epochs, n):
    """Its passes alone show its steps, and the hooks that see them are off after the window: the loop's own lines
    count them (a while loop in a function called once an epoch too), and no time after the loop is made up."""
    profile, _, log = _run(tmp_path_factory, "inference_only", "--epochs", str(epochs), "--n", str(n))
    assert profile.header.run_steps == epochs * n
    assert "of %d (the whole run)" % (epochs * n) in log


def test_the_line_count_leaves_the_threads_tracer_as_it_found_it(tmp_path):
    import numpy as np
    import nnabla as nn
    import nnabla.parametric_functions as PF

    nn.clear_parameters()
    x = nn.Variable((4, 6))
    y = PF.affine(x, 3, name="fc")
    before = sys.gettrace()
    with nnprofile.record(outdir=str(tmp_path / "o"), active=5) as rec:
        for _ in range(60):
            x.d = np.random.randn(*x.shape)
            y.forward()
        traced = sys.gettrace()
    assert sys.gettrace() is before
    assert rec.profile.header.run_steps == (60 if before is None else rec.profile.header.run_steps)
    assert before is not None or traced is not None  # counted by its lines, then put back


@pytest.mark.slow
@pytest.mark.parametrize("iterations", [25, 60])
def test_a_validation_after_the_loop_has_all_its_passes_counted(tmp_path_factory, iterations):
    """The read that begins the validation after the loop ends the loop's last step; where that step ran without
    the hooks (25 iterations: in the steps after the kept ones), they come back for the validation at once, not at
    the next read (its first pass was lost). The program counts its own passes. After 60 iterations the recording
    has ended (the steps after its window run untouched): the passes before the loop only, and the notes say so."""
    out = tmp_path_factory.mktemp("after") / "result"
    script = os.path.join(SCRIPTS, "validate_after.py")
    proc = run_cli("run", "-o", str(out), script, "--iterations", str(iterations), cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr
    said = int(proc.stdout.split("validation passes ")[1].split()[0])
    profile = nnprofile.load(out)
    [vpred] = [s for s in profile.sections if s.kind == "graph" and s.info.get("role") == "evaluation"]
    ended = [n for n in profile.notes if n.kind == "after_windows"]
    if iterations == 25:
        assert not ended and vpred.info["passes"] == {"forward": said}
        assert vpred.info["outside"] == "before the first kept step and after the last step"
    else:
        assert ended and vpred.info["passes"] == {"forward": said // 2}
        assert vpred.info["outside"] == "before the first kept step"
