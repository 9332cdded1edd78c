"""The corpus's fact checker (``tests/corpus_facts.py``) can fail: a checked-in profile of a program that trains
``loss`` and validates with ``vpred`` (tests/golden/result_v11.json) meets its facts, and each wrong fact, or each
profile that says otherwise than its source, is a problem the checker names."""

import copy
import os

import pytest

import nnprofile
from conftest import GOLDEN
from corpus_facts import check, places, solver_matches
from nnprofile.result.details import SolverSummary

FACTS = {
    "steps": 40,
    "graphs": [
        {"name": "loss", "role": "trained", "solver": "Adam", "when": "every iteration"},
        {"name": "vpred", "role": "evaluation", "when": "i = 0, 10, 20: 2 forward passes each"},
    ],
    "solvers": [{"class": "Adam", "module": "nnabla.solvers", "parameters": "all", "updates_per_iteration": 1}],
    "data_iterators": ["data_iterator_simple(train) -> data", "data_iterator_simple(valid) -> vdata"],
    "scopes": ["conv1/conv"],
    "python_functions": False,
    "nn_grad": False,
    "auto_forward": False,
}


@pytest.fixture
def profile():
    p = nnprofile.load(os.path.join(GOLDEN, "result_v11.json"))
    step = next(s for s in p.sections if s.kind == "script")
    step.info.solvers = [
        SolverSummary("Adam", "Adam", 6, ["conv1/conv", "conv2/conv", "fc/affine"], 1.0, ["loss"], "nnabla.solver")
    ]
    return p


def _log(profile):
    return "Timing: 20 of %d (the whole run)" % profile.header.run_steps


def test_a_profile_that_shows_its_program_meets_its_facts(profile):
    assert check("p", FACTS, profile, _log(profile)) == []


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda f: f.update(steps=41), "41 iterations run"),
        (lambda f: f["graphs"][1].update(role="forward"), "graph 'vpred' (forward)"),
        (lambda f: f["graphs"][0].update(solver="Momentum"), "graph 'loss' (trained by Momentum)"),
        (lambda f: f["graphs"].pop(1), "section 'vpred' is no graph"),
        (lambda f: f["solvers"][0].update(updates_per_iteration=2), "updates 1.0 a step, 2 in the source"),
        (lambda f: f["solvers"][0].update(parameters="scope gen"), "held by"),
        (lambda f: f["solvers"].append(dict(f["solvers"][0])), "1 solvers of class Adam, 2"),
        (lambda f: f["data_iterators"].append("data_iterator_simple(train) -> more"), "for 3 iterators"),
        (lambda f: f.update(data_iterators=["a(train)", "b(train)"]), "1 iterators feed the training"),
        (lambda f: f["scopes"].append("conv9/conv"), "no layer named 'conv9/conv'"),
        (lambda f: f.update(auto_forward=True), "auto_forward, but sections"),
        (lambda f: f.update(nn_grad=True), "nn_grad True"),
        (lambda f: f.update(python_functions=True), "python_functions True"),
        (lambda f: f["data_iterators"].__setitem__(0, "a(train) -> train_data"), "no input entry named 'train_data'"),
        (lambda f: f["solvers"][0].update(module="the program's own subclass"), "the program's own in the source"),
        (lambda f: f["graphs"][1].update(when="every iteration"), "graph 'vpred' runs"),
        (lambda f: f["graphs"][0].update(when="after training: 20 forward passes"), "graph 'loss' runs"),
        (lambda f: f["graphs"][0].update(when="2 per iteration"), "graph 'loss' runs [1.0] a step"),
        (lambda f: f["graphs"][1].update(when="i = 27: 2 forward passes"), "2 passes in steps 26..28"),
        (
            lambda f: f["graphs"][1].update(when="i = 0, 10, 20: 2 forward passes each, and 2 after the loop"),
            "2 passes outside the steps; the source: 8",
        ),
        (lambda f: f["graphs"][1].update(when="after training: 3 forward passes"), "the source: 3"),
    ],
)
def test_each_fact_the_profile_does_not_show_is_named(profile, change, said):
    facts = copy.deepcopy(FACTS)
    change(facts)
    problems = check("p", facts, profile, _log(profile))
    assert any(said in p for p in problems), problems


def test_a_solver_that_holds_less_than_its_graphs_read_is_named(profile):
    step = next(s for s in profile.sections if s.kind == "script")
    step.info.solvers = [SolverSummary("Adam", "Adam", 4, ["conv2/conv", "fc/affine"], 1.0, ["loss"], "nnabla.solver")]
    assert any("does not hold ['conv1/conv']" in p for p in check("p", FACTS, profile, _log(profile)))


def test_a_graph_trained_by_a_second_solver_too_is_named(profile):
    loss = next(s for s in profile.sections if s.name == "loss")
    loss.info.trained_by = list(loss.info.trained_by) + ["Sgd"]
    assert any("graph 'loss' (trained by Adam)" in p for p in check("p", FACTS, profile, _log(profile)))


def test_a_scoped_solver_holds_all_of_its_scope(profile):
    facts = copy.deepcopy(FACTS)
    facts["solvers"][0]["parameters"] = "scope conv"
    step = next(s for s in profile.sections if s.kind == "script")
    step.info.solvers = [SolverSummary("Adam", "Adam", 2, ["conv2/conv"], 1.0, ["loss"], "nnabla.solver")]
    assert any("does not hold ['conv1/conv']" in p for p in check("p", facts, profile, _log(profile)))


def test_an_evaluation_that_reads_the_training_data_is_named(profile):
    step = next(s for s in profile.sections if s.kind == "script")
    step.info.inputs_of = {"data": "vpred"}
    assert any("0 iterators feed the training" in p for p in check("p", FACTS, profile, _log(profile)))


def test_places_and_solvers_as_the_corpus_writes_them():
    assert places("save_image in train (trainers/vq_vae_train.py:91 and :93)") == [
        "trainers/vq_vae_train.py:91",
        "trainers/vq_vae_train.py:93",
    ]
    assert solver_matches("critic_solver (Adam)", ["Adam: trainable/critic"])
    assert not solver_matches("critic_solver (Adam)", ["Adam: trainable/actor"])
    assert solver_matches("Adam (nnabla.solver)", ["Adam"]) and not solver_matches("Sgd", ["Adam"])


def test_the_steps_loop_is_the_one_the_source_begins_with(profile):
    facts = dict(copy.deepcopy(FACTS), loop="for i in range(max_iter): validation if i % 10 == 0, then one step")
    source = "\n" * 86 + "    for i in range(args.iterations):\n"  # train_validate.py:87, as the profile says
    assert check("p", facts, profile, _log(profile), {"train_validate.py": source}) == []
    other = "\n" * 86 + "    for batch in loader:\n"
    [said] = check("p", facts, profile, _log(profile), {"train_validate.py": other})
    assert said.startswith("the steps' loop at train_validate.py:87 reads 'for batch in loader:'")
    epochs = dict(facts, loop="for epoch in range(2): 10 training batches")  # the steps' loop is inside it
    assert check("p", epochs, profile, _log(profile), {"train_validate.py": other}) == []


def test_a_graphs_code_run_again_in_another_role_is_that_graphs(profile):
    """The trained graph's code, called again by a validation, may be a section of its own (an evaluation): the
    fact's place claims it, and only where the fact's role holds for one of them too."""
    for s in profile.sections:
        if s.name in ("loss", "vpred"):
            s.info.built_at = ["/home/u/train.py:30"]
    facts = copy.deepcopy(FACTS)
    facts["graphs"] = [dict(facts["graphs"][0], name="loss (train.py:30)")]
    assert check("p", facts, profile, _log(profile)) == []
    facts["graphs"][0]["role"] = "feeds"
    assert any("graph 'loss (train.py:30)' (feeds" in p for p in check("p", facts, profile, _log(profile)))


def test_an_evaluations_passes_as_its_iterations_count_them(profile):
    """vpred's 2 passes ran before the kept steps 26 to 28 (step k is iteration k - 1)."""
    for when in (
        "i = 0: 2 forward passes, and 0 after the loop",
        "i = 0, 26: 2 forward passes each",
        "after training: 2 forward passes",
    ):
        facts = copy.deepcopy(FACTS)
        facts["graphs"][1]["when"] = when
        problems = check("p", facts, profile, _log(profile))
        assert (problems == []) == (when != "i = 0, 26: 2 forward passes each"), (when, problems)
