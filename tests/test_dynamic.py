"""Dynamic mode end to end: programs whose graphs are built anew under ``auto_forward`` every iteration, run
unmodified under ``nnprofile run`` (tests/scripts/), and one that mixes a static graph with a dynamic evaluation.

A graph made under auto_forward is one section for each place in the loop that builds it, with the passes per
step the program really runs: a loss built over several lines is one forward pass a build; a function no backward
reaches but the loss reads (a random draw, a constant) is the loss's; what no backward reaches is the graph of the
line that built it, an evaluation where nothing trained reads it, feeding the graph that does (a frozen encoder's
codes, unlinked, in front of a trained prior). Entries never add up to more than their passes, nor passes to more
than the step.
"""

import os

import pytest

import nnprofile
from conftest import ROOT, run_cli
from nnprofile.analysis import analyze
from nnprofile.analysis.facts import PartsOverStep

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
pytestmark = pytest.mark.slow


def _run(tmp_path_factory, name, *args, options=()):
    out = tmp_path_factory.mktemp(name) / "result"
    script = os.path.join(SCRIPTS, name + ".py")
    proc = run_cli("run", "-q", *options, "-o", str(out), script, *args, cwd=str(out.parent))
    assert proc.returncode == 0, proc.stderr[-3000:]
    profile = nnprofile.load(out)
    return profile, analyze(profile)


def _graphs(profile):
    return {s.name: s for s in profile.sections if s.kind == "graph"}


def _per_step(section):
    return section.info["forward_per_step"], section.info["backward_per_step"]


def _holds(profile, analysis):
    """No section's entries add up to more than its passes; the graphs' passes and the program's calls never to more
    than the step."""
    for a in analysis.sections:
        for c in a.coverage:
            # within what the pass's own figure is known to: its standard error (a 55 us backward pass under load
            # reads a few percent either way)
            whole = a.section.entries_of(c.whole_phase)[0].stats
            tolerance = 0.02 + 2 * (whole.rse if whole.rse_known else 0.0)
            assert c.share is not None and c.share <= 1 + tolerance, (a.section.name, c.whole_phase, c.share, tolerance)
            assert 0.9 <= c.named_share <= 1.1, (a.section.name, c.whole_phase, c.named_share)
    [step] = analysis.steps
    assert dict(step.parts)["other"] >= 0 and not any(isinstance(n, PartsOverStep) for n in step.notes), step.parts


def test_a_vae_built_anew_each_iteration_is_one_trained_graph_and_its_validation_an_evaluation(tmp_path_factory):
    profile, analysis = _run(tmp_path_factory, "dynamic_vae", "--iterations", "30", "--val-interval", "5")
    graphs = _graphs(profile)
    assert list(graphs) == ["loss", "vloss"]
    loss, vloss = graphs["loss"], graphs["vloss"]
    assert loss.info["role"] == "trained" and loss.info["trained_by"] == ["Adam"] and loss.info["dynamic"]
    assert _per_step(loss) == (1, 1)  # built once an iteration, over several functions and lines
    assert vloss.info["role"] == "evaluation" and _per_step(vloss) == (0.2, 0)  # steps 6, 11, 16, 21 of 2-21
    layers = [e.layer for e in loss.entries_of("forward_function")]
    assert "Randn" in layers and "enc/mu/affine" in layers and "dec/out/affine" in layers  # the draw is the loss's
    assert profile.header.run_steps == 30
    _holds(profile, analysis)


def test_a_dynamic_gan_has_a_graph_per_loss_and_its_check_is_an_evaluation(tmp_path_factory):
    profile, analysis = _run(tmp_path_factory, "dynamic_gan", "--iterations", "30", "--check-interval", "4")
    graphs = _graphs(profile)
    assert list(graphs) == ["loss_gen", "loss_dis", "score"]
    assert graphs["loss_gen"].info["trained_by"] == ["Adam: gen"] and _per_step(graphs["loss_gen"]) == (1, 1)
    assert graphs["loss_dis"].info["trained_by"] == ["Adam: dis"] and _per_step(graphs["loss_dis"]) == (1, 1)
    kept = profile.header.kept_steps  # (iteration i is step i + 1: a check where i % 4 == 0)
    checks = sum((step - 1) % 4 == 0 for step in kept) / len(kept)
    assert graphs["score"].info["role"] == "evaluation" and _per_step(graphs["score"]) == (checks, 0)
    generator = [e.layer for e in graphs["loss_gen"].entries_of("forward_function")]
    assert generator[0] == "Randn" and "gen/fc1/affine" in generator and "dis/fc2/affine" in generator
    _holds(profile, analysis)


def test_a_frozen_encoder_in_front_of_a_trained_prior_feeds_it(tmp_path_factory):
    profile, analysis = _run(tmp_path_factory, "frozen_prior", "--iterations", "30", "--val-interval", "5")
    graphs = _graphs(profile)
    codes, loss = graphs["codes"], graphs["loss"]
    assert codes.info["role"] == "feeds" and codes.info["feeds"] == ["loss"] and _per_step(codes) == (1, 0)
    assert loss.info["role"] == "trained" and _per_step(loss) == (1, 1)
    assert {e.layer for e in codes.entries_of("forward_function")} >= {"encoder/fc1/affine", "encoder/fc2/affine"}
    assert not any(e.layer.startswith("encoder/") for e in loss.entries_of("forward_function"))
    assert graphs["vcodes"].info["role"] == graphs["vloss"].info["role"] == "evaluation"
    assert graphs["vloss"].info["forward_per_step"] == 0.2
    _holds(profile, analysis)


def test_a_static_training_with_an_evaluation_built_in_dynamic_mode(tmp_path_factory):
    profile, analysis = _run(tmp_path_factory, "static_train_dynamic_eval", "--iterations", "30", "--val-interval", "3")
    graphs = _graphs(profile)
    assert list(graphs) == ["loss", "verr"]
    assert not graphs["loss"].info["dynamic"] and _per_step(graphs["loss"]) == (1, 1)
    assert graphs["verr"].info["dynamic"] and graphs["verr"].info["role"] == "evaluation"
    assert _per_step(graphs["verr"]) == (0.3, 0)  # steps 4, 7, ..., 19 of 2-21: 6 of 20
    _holds(profile, analysis)


def test_a_validation_under_no_grad_is_recorded_and_images_saved_between_functions_are_the_program_s(
    tmp_path_factory,
):
    """A new user's dynamic CNN: its validation every 5 iterations under ``nn.no_grad()`` is a graph as any other;
    after it two images are saved (``img * 0.5 + 0.5``, then milliseconds of the program's own Python writing
    each): each call a graph of its own, whose pass is its functions and never the program's code after them
    (no sample of the program's lines that write the image falls in any pass), which ``other`` holds by its
    lines."""
    from nnprofile.assembly.capture_file import load
    from nnprofile.assembly.passes import group_passes

    out = tmp_path_factory.mktemp("images")
    args = ("--iterations", "40", "--val-interval", "5", "--out", str(out))
    # (20 steps kept: 4 validations, and their images' lines sampled in each)
    profile, analysis = _run(tmp_path_factory, "dynamic_cnn", *args, options=("--save-events", "--active", "20"))
    graphs = _graphs(profile)
    vpred = graphs["vpred"]
    assert vpred.info["role"] == "evaluation" and vpred.info["dynamic"] and _per_step(vpred) == (0.2, 0)
    calls = ("dynamic_cnn.py:63", "dynamic_cnn.py:64")  # the two lines of the loop that save an image
    saved = [s for s in graphs.values() if any(p.endswith(calls) for p in s.info["built_at"])]
    assert len(saved) == 2 and all(s.info["role"] == "evaluation" and _per_step(s) == (0.2, 0) for s in saved)
    step = next(s for s in profile.sections if s.kind == "script")
    assert any(line.function == "save_image" for line in step.info.own_lines), step.info.own_lines
    capture = load(os.path.join(profile.location, "events.json.gz"))
    spans = [(a, b) for p in group_passes(capture.events, capture.sites) for a, b, _ in p.spans()]
    writing = {
        k for k, (f, line, _, _) in enumerate(capture.sample_sites) if f.endswith("dynamic_cnn.py") and 33 <= line <= 37
    }
    inside = [t for t, k in capture.samples if k in writing and any(a <= t < b for a, b in spans)]
    assert writing and not inside
    _holds(profile, analysis)
