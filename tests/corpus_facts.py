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

# Iterators the corpus names by the variable they were made into, where the program reads them under another name
# (nnprofile names an iterator where the program reads it): (program, the fact's name) -> the name at the read.
ITERATOR_NAMES = {
    # main() makes train_loader and val_loader and hands them to its Trainer, which reads self.data_loader and
    # self.val_data_loader.
    ("s5-vqvae", "train_loader"): "trainer.data_loader",
    ("s5-vqvae", "val_loader"): "trainer.val_data_loader",
    ("s5-vqvae-prior", "train_loader"): "trainer.data_loader",
    ("s5-vqvae-prior", "val_loader"): "trainer.val_data_loader",
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


def check(pid: str, facts: dict, profile, log: str, sources: Optional[Dict[str, str]] = None) -> List[str]:
    """``sources``: the program's files' text by their names (the loop is then checked against its line)."""
    out = []
    out += steps(profile, log, facts["steps"])
    out += loop(profile, facts.get("loop", ""), sources)
    out += graphs(pid, profile, facts["graphs"])
    out += when(pid, profile, facts["graphs"])
    out += counts(pid, profile, facts["graphs"])
    out += solvers(profile, facts["solvers"])
    out += scopes(profile, facts["scopes"])
    out += inputs(profile, facts["data_iterators"], pid)
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


_HEADER = re.compile(r"^for (\w+) in range\(")


def loop(profile, text: str, sources: Optional[Dict[str, str]]) -> List[str]:
    """The loop whose iterations are the steps iterates the variable the fact's ``loop`` begins with (``for i in
    range(max_iter):``, the corpus's shorthand of ``for i in range(start_point, args.max_iter):``): its line, where
    the profile says it is, reads ``for i in ``. A loop over epochs holds the steps' loop inside it; facts in prose
    (a Trainer's epochs, an environment's loop) are the steps' and graphs' facts to check."""
    header = _HEADER.match(text)
    if header is None or header.group(1) == "epoch" or sources is None:
        return []
    s = profile.header.steps
    where = (s.figures or {}).get("where") if s is not None and s.kind == "steps_iterations" else None
    if not where:
        return ["the steps are no loop's iterations (%s); the source: %s" % (s.kind if s else None, text[:40])]
    name, line = where.rsplit(":", 1)
    lines = sources.get(name, "").splitlines()
    code = lines[int(line) - 1].strip() if 0 < int(line) <= len(lines) else ""
    if not code.startswith("for %s in " % header.group(1)):
        return ["the steps' loop at %s reads %r; the source's: %s" % (where, code[:60], text[:40])]
    return []


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


def _trained_by(text: str, labels: Sequence[str]) -> bool:
    """A trained graph's solvers are the fact's one solver, exactly: no other solver trains it too."""
    return len(labels) == 1 and solver_matches(text, labels)


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
        and (g["role"] != "trained" or _trained_by(g["solver"], s.info.get("trained_by") or []))
    ]
    return (right, True) if right else (found, False)


def _built_there(pid: str, g: dict, sections) -> list:
    """The sections built where a graph fact's places are, whatever their role: a graph's code run again in another
    part of the program (a validation that calls the trained graph's encoder) is that fact's code too."""
    where = places(g["name"])
    return [s for s in sections if any(built_at(s, p) for p in where)] if where else []


def graphs(pid: str, profile, facts: Sequence[dict]) -> List[str]:
    sections = [s for s in profile.sections if s.kind == "graph"]
    out = []
    claimed: Dict[str, str] = {}
    elsewhere: Dict[str, str] = {}  # the fact's code built a section of another role too (its validation's run)
    for g in facts:
        found, right = _candidates(pid, g, sections)
        if right:
            elsewhere.update((s.name, g["name"]) for s in _built_there(pid, g, sections) if s not in found)
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
    out += [
        "section %r is no graph of the program's" % s.name
        for s in sections
        if s.name not in claimed and s.name not in elsewhere
    ]
    return [p for p in out if not any(a in p for a in allowed)]


# What a graph's ``when`` says of the kept steps: it runs in every one (its passes a step, at least one, or the number
# said), or in none of them (only before the loop, or after it).
_EVERY = re.compile(r"^every (iteration|update step|training iteration)\b")
_PER_ITERATION = re.compile(r"^(\d+) per iteration")
_OUTSIDE = re.compile(r"^(after training|before training|once,? before the loop|after the loop)")


def when(pid: str, profile, facts: Sequence[dict]) -> List[str]:
    """Each graph's passes a kept step, as its ``when`` says them: every step (one or more, or the number said), or
    none (only outside the loop). Other words (an evaluation every N iterations: which fall in the kept window
    depends on it) are the graphs' and solvers' facts' to check."""
    from nnprofile.analysis import analyze

    steps = [a.step for a in analyze(profile).sections if a.step is not None]
    per_step = {g.name: max(g.forward_per_step, g.backward_per_step) for st in steps for g in st.graphs}
    sections = [s for s in profile.sections if s.kind == "graph"]
    out = []
    for g in facts:
        text = (g.get("when") or "").strip()
        found, _ = _candidates(pid, g, sections)
        if not found:
            continue  # (said by graphs())
        runs = [per_step.get(s.name, 0.0) for s in found]
        number = _PER_ITERATION.match(text)
        if number and not any(abs(r - int(number.group(1))) < 1e-6 for r in runs):
            out.append("graph %r runs %s a step; the source: %s" % (g["name"][:40], runs, text[:60]))
        elif _EVERY.match(text) and not any(r >= 1 for r in runs):
            out.append("graph %r runs %s a step; the source: %s" % (g["name"][:40], runs, text[:60]))
        elif _OUTSIDE.match(text) and any(r > 0 for r in runs):
            out.append("graph %r runs %s a step; the source: %s" % (g["name"][:40], runs, text[:60]))
    return out


# An evaluation's iterations as its ``when`` counts them: "i = 0, 10, 20: 2 forward passes each, and 2 after the
# loop", "i = 0 only: 10 forward passes; none after the loop", "after training: 20 forward passes".
_AT_ITERATIONS = re.compile(r"^i = (.+?):\s*(\d+) forward pass")
_AFTER_LOOP = re.compile(r"and (\d+) (?:forward )?(?:pass(?:es)? )?after the loop")
_ONLY_AFTER = re.compile(r"^after training(?: only)?: (\d+) forward passes")


def _counted(text: str) -> Optional[Tuple[Dict[int, int], Optional[int]]]:
    """The passes at each iteration ``i`` and after the loop (None: not said) that a ``when`` counts; None where
    it counts otherwise (in epochs, episodes: each program its own words)."""
    at = _AT_ITERATIONS.match(text)
    if at:
        iterations = [int(x) for x in re.findall(r"\d+", re.sub(r"\([^)]*\)", "", at.group(1)))]
        after = _AFTER_LOOP.search(text)
        return {i: int(at.group(2)) for i in iterations}, (
            int(after.group(1)) if after else 0 if "none after the loop" in text else None
        )
    only = _ONLY_AFTER.match(text)
    return ({}, int(only.group(1))) if only else None


# Where a fact's count is not the program's own arithmetic: (program, graph) -> the count the program makes.
COUNTED = {
    # ``for i in range(len(test_data)//(num_steps * t_batch_size))``: test_data is the 453 words of ptb.valid.txt
    # as read (``replace('\n', '<eos>').split()``), num_steps 10, t_batch_size 1: 45 passes, not 90.
    ("s2-lstm-lm", "tloss"): ({}, 45),
}


def counts(pid: str, profile, facts: Sequence[dict]) -> List[str]:
    """An evaluation's passes as its ``when`` counts them: those at the kept steps' iterations (step k is
    iteration i = k - 1), a kept step's share; where none fall in the kept steps, all of them, before and after
    the loop, as the passes the profile saw outside the steps."""
    kept = list(getattr(profile.header, "kept_steps", None) or [])
    sections = [s for s in profile.sections if s.kind == "graph"]
    out = []
    for g in facts:
        said = COUNTED.get((pid, g["name"])) or (
            _counted((g.get("when") or "").strip()) if g["role"] == "evaluation" else None
        )
        found, _ = _candidates(pid, g, sections)
        if said is None or not found or not kept:
            continue
        at, after = said
        inside = sum(n for i, n in at.items() if i + 1 in kept)
        per_step = sum(s.info.get("forward_per_step") or 0.0 for s in found)
        if abs(per_step * len(kept) - inside) > 1e-6:
            out.append(
                "graph %r runs %.3f a kept step; the source: %d passes in steps %s..%s"
                % (g["name"][:40], per_step, inside, kept[0], kept[-1])
            )
        elif not inside and after is not None:
            seen = sum((s.info.get("passes") or {}).get("forward", 0) for s in found)
            if seen != sum(at.values()) + after:
                out.append(
                    "graph %r: %d passes outside the steps; the source: %d"
                    % (g["name"][:40], seen, sum(at.values()) + after)
                )
    return out


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
    prefix = _prefix(f["parameters"])
    # All of its scope: every parametric layer of the graphs it trains (under its scope, where the fact names one).
    wanted = {x for x in _layer_scopes(profile, s.trains) if prefix is None or x.startswith(prefix)}
    missing = wanted - set(s.scopes)
    if missing:
        out.append("solver %s (%s) does not hold %s" % (s.label, f["parameters"][:40], sorted(missing)[:4]))
    out += _module(s, f)
    updates = f["updates_per_iteration"]
    if isinstance(updates, str):  # "1 in total": made and updated before the loop, in no step
        outside = [e for x in profile.sections if x.kind == "outside" for e in x.entries_of("update")]
        if s.updates_per_step != 0 or not any(s.label in e.label for e in outside):
            out.append("solver %s updates %s a step, %s in the source" % (s.label, s.updates_per_step, updates))
    elif s.updates_per_step != updates:
        out.append("solver %s updates %s a step, %s in the source" % (s.label, s.updates_per_step, updates))
    return out


def _module(s, f: dict) -> List[str]:
    """Its class's module: NNabla's solvers are classes of ``nnabla.solver`` (``nnabla.solvers`` and the old
    ``nnabla.solver`` give the same class: the module a program imported is no property of the solver), a class of
    the program's own is the program's."""
    nnabla_own = f["module"].startswith("nnabla.solver")
    if nnabla_own and s.module != "nnabla.solver":
        return ["solver %s: its class's module %r, NNabla's in the source (%s)" % (s.label, s.module, f["module"])]
    if not nnabla_own and (not s.module or s.module.startswith("nnabla")):
        return ["solver %s: its class's module %r, the program's own in the source" % (s.label, s.module)]
    return []


def scopes(profile, wanted: Sequence[str]) -> List[str]:
    layers = {e.layer for s in profile.sections for e in s.entries if e.layer}
    return ["no layer named %r among %d layers" % (w, len(layers)) for w in wanted if not any(w in x for x in layers)]


_NOT_TRAINING = re.compile(r"train=False|\bdev\b|\bvalid|visualize")


def inputs(profile, facts: Sequence[str], pid: str = "") -> List[str]:
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
    named = [m.group(1) for m in (re.search(r"-> (\w+)", f) for f in facts) if m]
    named = [ITERATOR_NAMES.get((pid, n), n) for n in named]
    out += ["no input entry named %r (its variable): %s" % (n, sorted(every)) for n in named if n not in every]
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
