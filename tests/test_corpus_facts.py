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
        {"name": "loss", "role": "trained", "solver": "Adam"},
        {"name": "vpred", "role": "evaluation"},
    ],
    "solvers": [{"class": "Adam", "parameters": "all", "updates_per_iteration": 1}],
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
    step.info.solvers = [SolverSummary("Adam", "Adam", 6, ["conv1/conv", "conv2/conv", "fc/affine"], 1.0, ["loss"])]
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
    ],
)
def test_each_fact_the_profile_does_not_show_is_named(profile, change, said):
    facts = copy.deepcopy(FACTS)
    change(facts)
    problems = check("p", facts, profile, _log(profile))
    assert any(said in p for p in problems), problems


def test_a_solver_that_holds_less_than_its_graphs_read_is_named(profile):
    step = next(s for s in profile.sections if s.kind == "script")
    step.info.solvers = [SolverSummary("Adam", "Adam", 4, ["conv2/conv", "fc/affine"], 1.0, ["loss"])]
    assert any("does not hold ['conv1/conv']" in p for p in check("p", FACTS, profile, _log(profile)))


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
