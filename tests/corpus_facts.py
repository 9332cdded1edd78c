"""Every fact of ``corpus.json`` that a profile can show, checked against a profile (``check``: a list of problems).

A fact is read through the public API (``nnprofile.load``) and the log. The corpus names a graph as its source
reads (a variable, a dict's key, a place in the code for a graph built under auto_forward); nnprofile names it by
what the program's call gives. Where they differ, ``NAMES`` says which section is which, and why. Where the
program's structure leaves a fact open (a demonstration's graphs computing gradients under the name "forward"),
``LOOSE`` says so, one line each; every other fact is matched exactly:

- steps: the run's steps, in result.json and the log;
- graphs: each fact a set of sections, the sets disjoint and every graph section in one (``EXTRA`` lists the
  sections a program's ``special`` notes allow beside its facts), each of the fact's role; a trained graph's
  solver of the fact's class and name;
- solvers: one summary each, of its class, holding the parameters the fact names (a scope; all those of the graphs
  it trains), updating as often per step;
- scopes: among the layers' names;
- data iterators: one input entry each, training or not as the fact reads (its data read for a validation, a
  visualisation: not the training's input);
- auto_forward (the graph sections say it), python_functions (a layer whose type no NNabla function has), nn_grad
  (the functions nn.grad makes among the layers).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

import nnabla.function

# Roles as corpus.json says them -> as a section's info says them.
ROLES = {
    "trained": ("trained",),
    "evaluation": ("evaluation",),
    "feeds": ("feeds",),
    "forward": ("forward",),
    "assign": ("updates",),
    "backward-only-grad": ("backward",),
}

# Graphs the corpus names otherwise than the program's own call does (nnprofile names a graph by the variable the
# program calls forward/backward on): (program, the fact's name) -> the name of that call.
NAMES = {
    # Trainer.run calls `metric.forward()` for each of its metrics: the dict's keys are not at the call.
    ("s4-attention", "PPL = np.e ** loss"): "metric",
    ("s4-fasttext", "accuracy"): "metric",
    # The tutorial's demos run on several variables: any graph run before the first step that is no training's.
    ("s2-python-api", "demo graphs"): None,
    # Validation tasks run the same code as the training tasks: the sink forwarded, then the accuracies.
    ("s3-maml", "validation tasks"): "result_all",
}

# Facts the program's structure leaves open, and why (each loosens one cell).
LOOSE = {
    # The tutorial's "demo graphs" are several: one forward only, two run backward to show gradients (no solver):
    # the corpus calls them all "forward"; a graph run backward without an update is "backward" by its structure.
    ("s2-python-api", "demo graphs"): ("forward", "backward"),
}

# Graph sections a program's `special` notes allow beside its graph facts (none today: every section is a fact's).
EXTRA: Dict[str, Tuple[str, ...]] = {}

_PLACE = re.compile(r"([\w./-]+\.py):(\d+)((?: and :\d+)*)")
_GRAD_TYPES = ("DataGrad", "FilterGrad", "Backward")


def check(pid: str, facts: dict, profile, log: str) -> List[str]:
    out = []
    out += steps(profile, log, facts["steps"])
    out += graphs(pid, profile, facts["graphs"])
    out += solvers(profile, facts["solvers"])
    out += scopes(profile, facts["scopes"])
    out += inputs(profile, facts["data_iterators"])
    out += kinds(profile, facts)
    return out


def steps(profile, log: str, count: int) -> List[str]:
    out = []
    if profile.header.run_steps != count:
        out.append("%s steps in result.json, %d iterations run" % (profile.header.run_steps, count))
    if "of %d (the whole run)" % count not in log:
        line = next((x for x in log.splitlines() if x.startswith("Timing:")), "")
        out.append("profile.log does not say the run's %d steps: %s" % (count, line[:200]))
    return out


def places(name: str) -> List[str]:
    """``file.py:N`` of each place a fact names (``a.py:91 and :93``: both)."""
    out = []
    for path, line, more in _PLACE.findall(name):
        out.append("%s:%s" % (path, line))
        out += ["%s:%s" % (path, n) for n in re.findall(r":(\d+)", more)]
    return out


def stem(name: str) -> str:
    """The program's name in a fact's name: ``loss`` of "loss (1st)", ``result_all`` of "result_all = F.sink(...)"."""
    found = re.match(r"[A-Za-z_][\w.]*(\[[^\]]*\])?", name)
    return found.group(0) if found else name


def named(section, name: str) -> bool:
    """Whether a section is the graph the program calls ``name`` (``loss``, or ``loss (line 98)`` of two)."""
    return section.name == name or section.name.startswith(name + " (")


def built_at(section, place: str) -> bool:
    return any(p == place or p.endswith("/" + place) for p in section.info.get("built_at") or [])


def solver_matches(text: str, labels: Sequence[str]) -> bool:
    """Whether a trained graph's solvers (their labels: ``Adam``, ``Adam: trainable/critic``) hold the fact's
    (``Adam``, ``critic_solver (Adam)``, ``Adam (nnabla.solver)``): its class, and its name's word where it has one."""
    inner = re.search(r"\((\w+)\)", text)
    if inner and not text.startswith(inner.group(1)):
        kind, word = inner.group(1), re.sub(r"_?solver_?", "", text.split()[0])
    else:
        kind, word = text.split()[0], ""
    return any(
        label.split(":")[0] == kind and (not word or word in label.split(":", 1)[-1].strip().split("/"))
        for label in labels
    )


def _candidates(pid: str, g: dict, sections) -> Tuple[list, bool]:
    """The sections a graph fact names, and whether each is of the fact's role (and solver)."""
    roles = LOOSE.get((pid, g["name"]), ROLES[g["role"]])
    where = places(g["name"])
    if where:
        found = [s for s in sections if any(built_at(s, p) for p in where)]
    else:
        name = NAMES.get((pid, g["name"]), stem(g["name"]))
        if name is None:
            found = [s for s in sections if "before the first kept step" in (s.info.get("outside") or "")]
        else:
            found = [s for s in sections if named(s, name)]
    right = [
        s
        for s in found
        if s.info.get("role") in roles
        and (g["role"] != "trained" or solver_matches(g["solver"], s.info.get("trained_by") or []))
    ]
    return (right, True) if right else (found, False)


def graphs(pid: str, profile, facts: Sequence[dict]) -> List[str]:
    sections = [s for s in profile.sections if s.kind == "graph"]
    out = []
    claimed: Dict[str, str] = {}
    for g in facts:
        found, right = _candidates(pid, g, sections)
        if not found or not right:
            out.append(
                "graph %r (%s%s): %s"
                % (
                    g["name"][:60],
                    g["role"],
                    " by %s" % g["solver"] if g.get("solver") else "",
                    [(s.name, s.info.get("role"), s.info.get("trained_by")) for s in found] or "no section",
                )
            )
        for s in found:
            if s.name in claimed and claimed[s.name] != g["name"]:
                out.append("section %r is graph %r and %r" % (s.name, claimed[s.name][:40], g["name"][:40]))
            claimed[s.name] = g["name"]
    allowed = EXTRA.get(pid, ())
    out += ["section %r is no graph of the program's" % s.name for s in sections if s.name not in claimed]
    return [p for p in out if not any(a in p for a in allowed)]


def _prefix(text: str) -> Optional[str]:
    """The scope a solver fact's parameters are under (``scope gen``, ``trainable/critic (...)``), None for all."""
    found = re.match(r"scope (\S+)", text) or re.match(r"(\w+/[\w/]+)", text)
    return found.group(1) if found else None


def _layer_scopes(profile, graph_names: Sequence[str]) -> set:
    """The scopes of the parametric layers (``conv1/conv``) of the graphs named."""
    out = set()
    for s in profile.sections:
        if s.kind == "graph" and s.name in graph_names:
            for e in s.entries_of("forward_function"):
                layer = re.sub(r"\[\d+\]$", "", e.layer or "")
                if "/" in layer and " " not in layer:
                    out.add(layer)
    return out


def _step(profile):
    return next(s for s in profile.sections if s.kind == "script")


def solvers(profile, facts: Sequence[dict]) -> List[str]:
    summaries = list(_step(profile).info.solvers or [])
    out = []
    by_class: Dict[str, list] = {}
    for s in summaries:
        by_class.setdefault(s.type, []).append(s)
    for kind in {f["class"] for f in facts}:
        wanted = [f for f in facts if f["class"] == kind]
        have = by_class.get(kind, [])
        if len(have) != len(wanted):
            out.append("%d solvers of class %s, %d in the source: %s" % (len(have), kind, len(wanted), summaries))
            continue
        for f in wanted:
            prefix = _prefix(f["parameters"])
            pool = [s for s in have if prefix is None or all(x.startswith(prefix) for x in s.scopes)]
            if prefix is not None and len(pool) != 1:
                out.append(
                    "solver %s (%s): held by %s" % (kind, f["parameters"], [(s.label, s.scopes[:3]) for s in have])
                )
                continue
            s = pool[0] if prefix is not None else have[wanted.index(f)]
            out += _solver(s, f, profile)
    return out


def _solver(s, f: dict, profile) -> List[str]:
    out = []
    if not s.parameters:
        out.append("solver %s holds no parameters" % s.label)
    if _prefix(f["parameters"]) is None:
        missing = _layer_scopes(profile, s.trains) - set(s.scopes)
        if missing:
            out.append("solver %s (%s) does not hold %s" % (s.label, f["parameters"][:40], sorted(missing)[:4]))
    updates = f["updates_per_iteration"]
    if isinstance(updates, str):  # "1 in total": made and updated before the loop, in no step
        outside = [e for x in profile.sections if x.kind == "outside" for e in x.entries_of("update")]
        if s.updates_per_step != 0 or not any(s.label in e.label for e in outside):
            out.append("solver %s updates %s a step, %s in the source" % (s.label, s.updates_per_step, updates))
    elif s.updates_per_step != updates:
        out.append("solver %s updates %s a step, %s in the source" % (s.label, s.updates_per_step, updates))
    return out


def scopes(profile, wanted: Sequence[str]) -> List[str]:
    layers = {e.layer for s in profile.sections for e in s.entries if e.layer}
    return ["no layer named %r among %d layers" % (w, len(layers)) for w in wanted if not any(w in x for x in layers)]


_NOT_TRAINING = re.compile(r"train=False|\bdev\b|\bvalid|visualize")


def inputs(profile, facts: Sequence[str]) -> List[str]:
    """One input entry per iterator, and as many feeding the training as the source says: an iterator read in the
    steps is the training's unless the step says it feeds an evaluation; one read only outside the steps (before
    the first, after the last) feeds none."""
    wanted_training = sum(_count(f) for f in facts if not _NOT_TRAINING.search(f))
    wanted = sum(_count(f) for f in facts)
    step = _step(profile)
    evaluation = set(step.info.get("inputs_of") or {})
    in_steps = [_inside(e.label) for e in step.entries_of("load_dataset")]
    outside = {_inside(e.label) for s in profile.sections if s.kind == "outside" for e in s.entries_of("load_dataset")}
    training = [n for n in in_steps if n not in evaluation]
    every = set(in_steps) | outside
    out = []
    if len(every) != wanted:
        out.append("%d input entries (%s) for %d iterators" % (len(every), sorted(every), wanted))
    if len(training) != wanted_training:
        out.append(
            "%d iterators feed the training (%s; evaluation: %s), %d in the source"
            % (len(training), training, sorted(evaluation | (outside - set(in_steps))), wanted_training)
        )
    return out


def _count(fact: str) -> int:
    return 2 if fact.startswith("two ") else 1


def _inside(label: str) -> str:
    return label[label.index("(") + 1 : label.rindex(")")]


_NNABLA_TYPES = {name for name in dir(nnabla.function) if name[:1].isupper()}


def kinds(profile, facts: dict) -> List[str]:
    out = []
    sections = [s for s in profile.sections if s.kind == "graph"]
    dynamic = [s.name for s in sections if s.info.get("dynamic")]
    if facts["auto_forward"] and not all(s.info.get("dynamic") for s in sections):
        out.append("auto_forward, but sections %s say static" % [s.name for s in sections if s.name not in dynamic])
    if not facts["auto_forward"] and dynamic:
        out.append("no auto_forward, but sections %s say it" % dynamic)
    types = {e.layer_type for s in profile.sections for e in s.entries if e.layer_type}
    grads = sorted(t for t in types if t.endswith(_GRAD_TYPES) or t == "GradEndFunction")
    own = sorted(t for t in types if t not in _NNABLA_TYPES and t not in grads)
    if bool(own) != facts["python_functions"]:
        out.append("python_functions %s, layers of types no NNabla function has: %s" % (facts["python_functions"], own))
    if bool(grads) != facts["nn_grad"]:
        out.append("nn_grad %s, the functions nn.grad makes among the layers: %s" % (facts["nn_grad"], grads))
    return out
