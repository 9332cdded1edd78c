"""Programs by others, profiled right: every program of the real-program corpus (``../shared/corpus``), run
unmodified under ``nnprofile run``, shows the facts ``corpus.json`` gives for it, read from its source: its steps,
one section per graph with its role, an update entry for every solver, its scopes among the layer names, an input
entry for each of its iterators, every section's coverage within 90-110 % (or the rest named), and the program's
own exit status and output, as the program prints them alone.

A fact is read through the public API (``nnprofile.load``, ``analyze``) and the files. Where nnprofile names a
graph by what the program runs it on and the corpus names it otherwise (a dict's key, a prose description), the
name the program's call gives is in ``NAMES``, with why. ``make corpus`` runs just these; ``make test-fast``
leaves them out.
"""

import os
import re

import pytest

import nnprofile
from conftest import require
from corpus import CORPUS, available, differences, named, own_lines, own_text, prepare, programs, progress_bar
from nnprofile.analysis import analyze

pytestmark = [pytest.mark.slow, pytest.mark.corpus]

# Roles as corpus.json says them -> as a section's info says them. "forward" (an acting policy, a tutorial's demo)
# is a forward-only graph no backward reads: nnprofile calls every such graph an evaluation (no structure tells
# the two apart).
ROLES = {
    "trained": ("trained",),
    "evaluation": ("evaluation",),
    "feeds": ("feeds",),
    "forward": ("evaluation",),
    "assign": ("updates",),
    "backward-only-grad": ("backward",),
}

# Graphs the corpus names otherwise than the program's own call does (nnprofile names a graph by the variable the
# program calls forward/backward on): (program, the fact's name) -> the name of that call.
NAMES = {
    # Trainer.run calls `metric.forward()` for each of its metrics: the dict's keys are not at the call.
    ("s4-attention", "PPL = np.e ** loss"): "metric",
    ("s4-fasttext", "accuracy"): "metric",
    # The tutorial's demos run on several variables: any graph run before the first step.
    ("s2-python-api", "demo graphs"): None,
    # Validation tasks run the same code as the training tasks: the sink forwarded, then the accuracies.
    ("s3-maml", "validation tasks"): "result_all",
}


# Runs alone a program's output is compared with, at most, where it differs under nnprofile.
RUNS_ALONE = 3


def _stem(name):
    """The program's name in a fact's name: ``loss`` of "loss (1st)", ``result_all`` of "result_all = F.sink(...)"."""
    found = re.match(r"[A-Za-z_][\w.]*(\[[^\]]*\])?", name)
    return found.group(0) if found else name


def _ids():
    return [p["id"] for p in programs()] or ["corpus-missing"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return str(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(params=_ids())
def run(request, base, tmp_path):
    require(available(), "the real-program corpus folder %s (set NNPROFILE_PROGRAMS)" % CORPUS)
    program = next(p for p in programs() if p["id"] == request.param)
    prepared = prepare(program, base)
    alone = prepared.alone()
    out = str(tmp_path / "out")
    profiled = prepared.profiled(out)
    return program, prepared, alone, profiled, out


def test_a_program_by_others_profiles_as_its_source_shows(run):
    program, prepared, alone, profiled, out = run
    facts = program["facts"]
    assert alone.code == 0, alone.stderr[-3000:]
    assert profiled.code == alone.code, profiled.stderr[-3000:]
    profile = nnprofile.load(out)
    analysis = analyze(profile)
    log = open(os.path.join(out, "profile.log"), encoding="utf-8").read()
    problems = []
    problems += _steps(profile, log, facts["steps"])
    problems += _graphs(program["id"], profile, facts["graphs"])
    problems += _solvers(profile, facts["solvers"])
    problems += _scopes(profile, facts["scopes"])
    problems += _inputs(profile, facts["data_iterators"])
    problems += _coverage(analysis)
    problems += _output(prepared, alone, profiled)
    assert not problems, "%s:\n  %s\n\nsections: %s\nsteps: %s" % (
        program["id"],
        "\n  ".join(problems),
        [(s.name, s.info.get("role")) for s in profile.sections],
        profile.header.steps,
    )


def _steps(profile, log, steps):
    out = []
    if profile.header.run_steps != steps:
        out.append("%s steps in result.json, %d iterations run" % (profile.header.run_steps, steps))
    if "of %d (the whole run)" % steps not in log:
        out.append(
            "profile.log does not say the run's %d steps: %s"
            % (steps, next((line for line in log.splitlines() if line.startswith("Timing:")), "")[:200])
        )
    return out


def _graphs(pid, profile, graphs):
    out = []
    for g in graphs:
        name = NAMES.get((pid, g["name"]), _stem(g["name"]))
        roles = ROLES[g["role"]]
        candidates = [s for s in profile.sections if s.kind == "graph" and (name is None or named(s, name))]
        right = [
            s
            for s in candidates
            if s.info.get("role") in roles
            and (
                g["role"] != "trained"
                or any(label.split(":")[0] == _solver_class(g["solver"]) for label in s.info.get("trained_by", []))
            )
        ]
        if not right:
            out.append(
                "no section for graph %r (%s%s): %s"
                % (
                    g["name"],
                    g["role"],
                    " by %s" % g["solver"] if g.get("solver") else "",
                    [(s.name, s.info.get("role"), s.info.get("trained_by")) for s in candidates]
                    or "no section named so",
                )
            )
    return out


def _solver_class(text):
    """``Adam`` of "solver_dis (Adam)", "Adam (nnabla.solver)" and "Adam"."""
    inner = re.search(r"\((\w+)\)", text)
    return inner.group(1) if inner and not text.startswith(inner.group(1)) else text.split()[0]


def _entries(profile):
    return [e for s in profile.sections if s.kind != "graph" for e in s.entries]


def _solvers(profile, solvers):
    updates = {e.label for e in _entries(profile) if e.phase == "update"}
    out = []
    classes = {}
    for s in solvers:
        classes[s["class"]] = classes.get(s["class"], 0) + 1
    for kind, n in classes.items():
        found = sorted(u for u in updates if re.fullmatch(r"update \(%s(: .+)?\)" % kind, u))
        if len(found) != n:
            out.append("%d update entries for %s, %d solvers: %s" % (len(found), kind, n, sorted(updates)))
    return out


def _scopes(profile, scopes):
    layers = {e.layer for s in profile.sections for e in s.entries if e.layer}
    return [
        "no layer named %r among %d layers" % (scope, len(layers))
        for scope in scopes
        if not any(scope in layer for layer in layers)
    ]


def _inputs(profile, iterators):
    reads = {e.label for e in _entries(profile) if e.phase == "load_dataset"}
    if len(reads) < len(iterators):
        return ["%d input entries (%s) for %d iterators" % (len(reads), sorted(reads), len(iterators))]
    return []


def _coverage(analysis):
    out = []
    for a in analysis.sections:
        for c in a.coverage:
            share, named = c.share, c.named_share
            if share is None:
                continue
            if share > 1.1 or not 0.9 <= (named or 0) <= 1.1:
                out.append(
                    "%s: %s covered %.1f%% (%.1f%% named)"
                    % (a.section.name, c.whole_phase, 100 * share, 100 * (named or 0))
                )
    return out


def _output(prepared, alone, profiled):
    """What the program printed under nnprofile against what it prints alone. A program's first run in its folder
    can print what later runs do not ("Extracting the dataset...", a font cache made), and a program can print a
    line on what it computed (a learning rate quartered when its validation got worse, from an unseeded start or
    buffers read before they are written): where the two differ, the program runs alone again, up to RUNS_ALONE
    times. A line none of them printed is the program's doing, not nnprofile's, only where its words are in the
    program's own source; a line every run alone printed must be there under nnprofile."""
    runs = [alone]
    found = _printed(runs, profiled)
    while found and len(runs) < RUNS_ALONE:
        runs.append(prepared.alone())
        found = _printed(runs, profiled)
    if found:
        sources = prepared.sources()
        found = [
            d
            for d in found
            if "only profiled" not in d.split(": ", 1)[0] or not own_text(d.split(": ", 1)[-1], sources)
        ]
    return found


def _printed(alone, profiled):
    out = ["stdout " + d for d in differences([a.stdout for a in alone], profiled.stdout, counted=True)]
    err = [
        d
        for d in differences([a.stderr for a in alone], own_lines(profiled.stderr), counted=False)
        if not progress_bar(d.split(": ", 1)[-1])
    ]
    return out + ["stderr " + d for d in err]
