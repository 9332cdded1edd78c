"""The corpus's ``special`` notes are each read (``tests/corpus_special.py``), and each rule that reads them can
fail: on a checked-in profile of a program that trains ``loss`` with Adam and validates with ``vpred`` before
its kept steps (tests/golden/result_v11.json)."""

import json
import os

import pytest

import nnprofile
import special_rules as r
from conftest import GOLDEN
from corpus import CORPUS, available
from corpus_special import SPECIAL, problems
from nnprofile.result.details import SolverSummary


@pytest.fixture
def profile():
    p = nnprofile.load(os.path.join(GOLDEN, "result_v11.json"))
    step = next(s for s in p.sections if s.kind == "script")
    step.info.solvers = [SolverSummary("Adam", "Adam", 6, ["conv1/conv", "fc/affine"], 1.0, ["loss"], "nnabla.solver")]
    return p


def test_every_note_of_the_corpus_is_read_once():
    if not available():
        pytest.skip("no corpus: %s is absent" % CORPUS)
    with open(os.path.join(CORPUS, "corpus.json"), encoding="utf-8") as f:
        data = json.load(f)
    listed = data["programs"] if isinstance(data, dict) else data
    unread = [
        p
        for program in listed
        for p in problems(program["id"], program["facts"].get("special", []), None, only_entries=True)
    ]
    assert not unread
    assert sum(len(program["facts"].get("special", [])) for program in listed) == sum(map(len, SPECIAL.values()))


def test_a_note_without_an_entry_is_a_problem(profile):
    [said] = problems("s1-lenet", ["a note nobody wrote a rule for"], profile)
    assert "0 entries" in said


@pytest.mark.parametrize(
    "rule, holds",
    [
        (r.solvers(1, 1.0), True),
        (r.run_steps(40), True),
        (r.run_steps(2000), False),
        (r.solvers(2, 1.0), False),
        (r.solvers(1, 2.0), False),
        (r.role("vpred", "evaluation"), True),
        (r.role("vpred", "feeds"), False),
        (r.role("loss", "trained", trained=True), True),
        (r.role("loss", "trained"), False),
        (r.per_step("loss", 1.0), True),
        (r.per_step("vpred", 0.0), False),
        (r.outside("vpred", "before the first kept step", 2), True),
        (r.outside("vpred", "before the first kept step", 3), False),
        (r.outside("loss", "before the first kept step"), False),
        (r.passes_in_steps("loss", 3), True),
        (r.passes_in_steps("vpred", 1), False),
        (r.module(False, "nnabla.solver"), True),
        (r.module(True), False),
        (r.holds("conv1"), True),
        (r.holds("conv1", "teacher"), False),
        (r.layers("loss", "Convolution"), True),
        (r.layers("loss", "Sink"), False),
        (r.layers("loss", "Convolution", second_use=True), False),
        (r.static(), True),
        (r.evaluation_every_step(), False),
        (r.grad_layers("loss"), False),
        (r.update_on_ndarrays(), False),
        (r.fewer_than("loss", 2.0), True),
        (r.trained_outside("Adam", "before the first kept step"), False),
    ],
)
def test_each_rule_reads_the_profile(profile, rule, holds):
    assert (rule(profile) == []) == holds, rule(profile)
