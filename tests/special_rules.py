"""Rules that read what a profile says of a program (its solvers, a graph's role and passes, its layers, its
iterators), each made into a check: a function of the profile giving the problems it finds
(``tests/corpus_special.py`` holds which note of the corpus each reads)."""

from __future__ import annotations

import re
from typing import Callable, List

Check = Callable[[object], List[str]]


def _graphs(profile, name: str) -> list:
    return [s for s in profile.sections if s.kind == "graph" and (s.name == name or s.name.startswith(name + " ("))]


def _step(profile):
    return next(s for s in profile.sections if s.kind == "script")


def _labels(profile, phase: str, where: str = "script") -> List[str]:
    return [e.label for s in profile.sections if s.kind == where for e in s.entries if e.phase == phase]


def solvers(count: int, per_step: float) -> Check:
    """``count`` solvers, each updating ``per_step`` times a step, each its own update entry."""

    def check(profile) -> List[str]:
        found = _step(profile).info.solvers or []
        rates = [x.updates_per_step for x in found]
        updates = [x for x in _labels(profile, "update") if x.startswith("update")]
        if len(found) != count or any(abs(r - per_step) > 1e-6 for r in rates) or len(set(updates)) != count:
            return [
                "solvers updating %s a step, update entries %s; the note: %d, %s each"
                % (rates, updates, count, per_step)
            ]
        return []

    return check


def role(graph: str, kind: str, trained: bool = False) -> Check:
    """The graph's sections are all of the role, and trained by a solver or by none."""

    def check(profile) -> List[str]:
        found = _graphs(profile, graph)
        wrong = [(s.name, s.info.get("role"), s.info.get("trained_by")) for s in found]
        if not found or any(s.info.get("role") != kind or bool(s.info.get("trained_by")) != trained for s in found):
            return ["graph %r: %s; the note: %s%s" % (graph, wrong, kind, ", trained" if trained else ", no update")]
        return []

    return check


def per_step(graph: str, forward: float, role_: str = "") -> Check:
    """The graph runs ``forward`` passes in every kept step (at least one where ``forward`` is 0)."""

    def check(profile) -> List[str]:
        found = [s for s in _graphs(profile, graph) if not role_ or s.info.get("role") == role_]
        runs = [s.info.get("forward_per_step") or 0.0 for s in found]
        if not any((r >= 1 if not forward else abs(r - forward) < 1e-6) for r in runs):
            return [
                "graph %r (%s) runs %s a step; the note: %s" % (graph, role_ or "any", runs, forward or "every step")
            ]
        return []

    return check


def evaluation_every_step() -> Check:
    def check(profile) -> List[str]:
        runs = [s.info.get("forward_per_step") or 0.0 for s in profile.sections if s.info.get("role") == "evaluation"]
        return [] if any(r >= 1 for r in runs) else ["no evaluation runs in every step: %s" % runs]

    return check


def iterators(present: bool) -> Check:
    """NNabla data iterators read (load_dataset entries), or none anywhere."""

    def check(profile) -> List[str]:
        reads = [e.label for s in profile.sections for e in s.entries if e.phase == "load_dataset"]
        if bool(reads) != present:
            return ["iterator reads %s; the note: %s" % (reads, "an NNabla DataIterator" if present else "none")]
        return []

    return check


def eager(*types: str, where: str = "script") -> Check:
    """NNabla functions run on NdArrays (``eager (Type at file:line)``) of each type, in the steps or outside."""

    def check(profile) -> List[str]:
        seen = {m.group(1) for m in (re.match(r"eager \((\w+) at ", x) for x in _labels(profile, "eager", where)) if m}
        missing = [t for t in types if t not in seen]
        return ["no eager %s %s (eager: %s)" % (missing, where, sorted(seen))] if missing else []

    return check


def module(own: bool, name: str = "") -> Check:
    """Every solver's class from NNabla's module ``name``, or the program's own (``own``)."""

    def check(profile) -> List[str]:
        found = [x.module for x in _step(profile).info.solvers or []]
        ok = found and all((not m.startswith("nnabla.")) if own else m == name for m in found)
        return [] if ok else ["solver modules %s; the note: %s" % (found, "the program's own" if own else name)]

    return check


def layers(graph: str, kind: str, count: int = 0, second_use: bool = False) -> Check:
    """Layers of the type in the graph's forward pass (``count`` of them exactly, where given); ``second_use``:
    one of them is a parameter's second use (``e1/embed[2]``)."""

    def check(profile) -> List[str]:
        found = [
            e.layer
            for s in _graphs(profile, graph)
            for e in s.entries_of("forward_function")
            if e.layer_type == kind or (kind == "*" and e.layer)
        ]
        if second_use:
            found = [x for x in found if re.search(r"\[\d+\]$", x or "")]
        if not found or (count and len(found) != count):
            return [
                "graph %r: %d %s layers%s; the note: %s"
                % (graph, len(found), kind, " used again" if second_use else "", count or "some")
            ]
        return []

    return check


def grad_layers(graph: str) -> Check:
    """Functions nn.grad made among a graph's forward functions (``AffineDataGrad``, ...)."""

    def check(profile) -> List[str]:
        found = [
            e.layer_type
            for s in _graphs(profile, graph)
            for e in s.entries_of("forward_function")
            if "Grad" in (e.layer_type or "")
        ]
        return [] if found else ["graph %r holds no functions nn.grad makes" % graph]

    return check


def forward_only_work(graph: str, under: str = "") -> Check:
    """More forward functions than backward ones in the trained graph (a branch no backward reaches); with
    ``under``: none of the layers under that scope has a backward entry."""

    def check(profile) -> List[str]:
        out = []
        for s in _graphs(profile, graph):
            fw, bw = s.entries_of("forward_function"), s.entries_of("backward_function")
            if len(fw) <= len(bw):
                out.append("graph %r: %d forward, %d backward functions" % (s.name, len(fw), len(bw)))
            back = [e.layer for e in bw if (e.layer or "").startswith(under)] if under else []
            fore = [e.layer for e in fw if (e.layer or "").startswith(under)] if under else [1]
            if back or not fore:
                out.append("graph %r: %s's layers forward %d, backward %s" % (s.name, under, len(fore), back[:3]))
        return out or ([] if _graphs(profile, graph) else ["no graph %r" % graph])

    return check


def backward_reaches(graph: str, scope: str, solver_scope: str) -> Check:
    """The graph's backward reaches layers under ``scope``, while its solver holds only ``solver_scope``."""

    def check(profile) -> List[str]:
        reached = [
            e.layer
            for s in _graphs(profile, graph)
            for e in s.entries_of("backward_function")
            if (e.layer or "").startswith(scope)
        ]
        held = [
            x.scopes for x in _step(profile).info.solvers or [] if any(sc.startswith(solver_scope) for sc in x.scopes)
        ]
        wrong = [sc for scopes in held for sc in scopes if not sc.startswith(solver_scope)]
        if not reached or not held or wrong:
            return ["graph %r's backward reaches %s under %r; its solver holds %s" % (graph, reached[:3], scope, held)]
        return []

    return check


def holds(*scopes: str) -> Check:
    """One solver holds parameters under each scope."""

    def check(profile) -> List[str]:
        found = [x.scopes for x in _step(profile).info.solvers or []]
        ok = any(all(any(sc.startswith(p) for sc in scopes_) for p in scopes) for scopes_ in found)
        return [] if ok else ["no solver holds %s: %s" % (list(scopes), [x[:5] for x in found])]

    return check


def monitors(count: int) -> Check:
    """``count`` monitors written in the steps (their entries)."""

    def check(profile) -> List[str]:
        found = [x for x in _labels(profile, "monitor_loss") + _labels(profile, "monitor") if x.startswith("monitor (")]
        return [] if len(set(found)) >= count else ["monitor entries %s; the note: %d" % (found, count)]

    return check


def outside(graph: str, where: str, passes: int = 0) -> Check:
    """The graph runs only outside the kept steps, there (and ``passes`` forward passes, where given)."""

    def check(profile) -> List[str]:
        found = _graphs(profile, graph)
        said = [(s.info.get("outside"), (s.info.get("passes") or {}).get("forward")) for s in found]
        ok = found and all(s.info.get("outside") == where for s in found)
        if not ok or (passes and sum(p or 0 for _, p in said) != passes):
            return ["graph %r runs %s; the note: %s%s" % (graph, said, where, ", %d passes" % passes if passes else "")]
        return []

    return check


def note(kind: str) -> Check:
    def check(profile) -> List[str]:
        kinds = [n.kind for n in profile.notes]
        return [] if kind in kinds else ["no note %r: %s" % (kind, kinds)]

    return check


def run_steps(count: int) -> Check:
    """The header counts ``count`` steps over the whole run (work before the loop is no step of it)."""

    def check(profile) -> List[str]:
        steps = getattr(profile.header, "run_steps", None)
        return [] if steps == count else ["the run's steps: %s, not %d" % (steps, count)]

    return check


def update_on_ndarrays() -> Check:
    """A solver whose update runs NNabla functions on NdArrays (a solver written in Python): the update entry's
    children."""

    def check(profile) -> List[str]:
        kids = [c.label for e in _step(profile).entries if e.phase == "update" for c in e.children or []]
        return (
            []
            if any(k.endswith("(on NdArrays)") for k in kids)
            else ["no update runs functions on NdArrays: %s" % kids]
        )

    return check


def functions(graph: str, least: int, most: int) -> Check:
    """The graph's forward and backward functions together."""

    def check(profile) -> List[str]:
        n = sum(
            len(s.entries_of("forward_function")) + len(s.entries_of("backward_function"))
            for s in _graphs(profile, graph)
        )
        return [] if least <= n <= most else ["graph %r: %d functions; the note: %d to %d" % (graph, n, least, most)]

    return check


def fewer_than(graph: str, forward: float) -> Check:
    """The graph is forwarded fewer than ``forward`` times a step (not once per metric as well)."""

    def check(profile) -> List[str]:
        runs = [s.info.get("forward_per_step") or 0.0 for s in _graphs(profile, graph)]
        return [] if runs and all(1 <= r < forward for r in runs) else ["graph %r runs %s a step" % (graph, runs)]

    return check


def passes_in_steps(graph: str, passes: int) -> Check:
    """The graph's forward passes in all the kept steps together."""

    def check(profile) -> List[str]:
        kept = len(getattr(profile.header, "kept_steps", None) or [])
        runs = sum((s.info.get("forward_per_step") or 0.0) * kept for s in _graphs(profile, graph))
        return (
            []
            if abs(runs - passes) < 0.01  # (a step's share is written to 4 places)
            else ["graph %r: %.2f passes in the kept steps; the note: %d" % (graph, runs, passes)]
        )

    return check


def trained_outside(solver: str, where: str) -> Check:
    """The graph a solver of this class trains runs only outside the kept steps, there."""

    def check(profile) -> List[str]:
        found = [s for s in profile.sections if any(t.split(":")[0] == solver for t in s.info.get("trained_by") or [])]
        said = [(s.name, s.info.get("outside")) for s in found]
        return [] if found and all(w == where for _, w in said) else ["graphs trained by %s: %s" % (solver, said)]

    return check


def evaluated_too(graph: str, iterator: str) -> Check:
    """The trained graph is forwarded more often than backward (forward only on other data), that data's
    iterator read in the steps."""

    def check(profile) -> List[str]:
        found = [
            (s.info.get("forward_per_step") or 0.0, s.info.get("backward_per_step") or 0.0)
            for s in _graphs(profile, graph)
        ]
        reads = [x for x in _labels(profile, "load_dataset") if iterator in x]
        if not reads or not any(f > b >= 1 for f, b in found):
            return [
                "graph %r forward, backward a step %s, reads %s; the note: forwarded on %s too"
                % (graph, found, reads, iterator)
            ]
        return []

    return check


def static() -> Check:
    def check(profile) -> List[str]:
        dynamic = [s.name for s in profile.sections if s.info.get("dynamic")]
        return ["sections made under auto_forward: %s" % dynamic] if dynamic else []

    return check


def all_of(*checks: Check) -> Check:
    return lambda profile: [p for c in checks for p in c(profile)]
