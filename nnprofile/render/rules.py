"""What a header says of how a run was measured, in words: how each figure was sampled (``sampling_*``: a
project's rounds, a program's steps), when a program's windows were recorded (``schedule*``), and how its steps
were found (``steps_*``, one kind per rule, from ``nnprofile.assembly.steps.rule_figures``): the log's
``Timing:``, ``Schedule:`` and ``Steps:`` lines, the workbook's Info rows, the report's header."""

from __future__ import annotations

from typing import Any, Callable, Dict, Sequence

from .words import listed, plural

Figures = Dict[str, Any]

ONE = (
    "one step: no solver update, no nnprofile.step(), no repeating pass (the structure does not say "
    "where a step ends: call nnprofile.step() at each step's end)"
)
NO_PATTERN = (
    "solver updates: one step per update (the updates form no repeating pattern, and no loop holds them: "
    "where a step is more than one update, call nnprofile.step() at each step's end)"
)


def _listed(names: Sequence[str]) -> str:
    """Names quoted, in the order of their quoted text."""
    return listed(sorted("'%s'" % n for n in names))


def _plural(n: int, word: str) -> str:
    return "%d %s" % (n, plural(n, word))


def _iterations(f: Figures) -> str:
    said = "one step per iteration of the program's loop at %s" % f["where"]
    if f.get("updates"):
        said += " (updates a step: %s)" % ", ".join(
            "%s %s" % (label, ("%.2f" % per).rstrip("0").rstrip(".")) for label, per in f["updates"]
        )
    before, idle = f.get("before", 0), f.get("idle", 0)
    no_steps = []
    if before:
        no_steps.append(
            "the %s before its first update %s before the first step"
            % (_plural(before, "iteration"), "is" if before == 1 else "are")
        )
    if idle:
        no_steps.append(
            "%s in runs of the loop without an update (a validation through the same loop) %s no step"
            % (_plural(idle, "iteration"), "is" if idle == 1 else "are")
        )
    return said + ("; %s" % "; ".join(no_steps) if no_steps else "")


def _before(f: Figures, unit: str) -> str:
    """The updates (or passes) before the pattern began, which are no step."""
    n = f.get("offset", 0)
    if not n:
        return ""
    noun = unit if n == 1 else unit + ("s" if unit == "update" else "es")
    return " (the first %d %s, before the pattern began, %s before the first step)" % (
        n,
        noun,
        "is" if n == 1 else "are",
    )


def _passes(f: Figures) -> str:
    per = "one step per pass" if f["period"] == 1 else "one step per %d passes" % f["period"]
    return "passes without a solver: %s%s" % (per, _before(f, "pass"))


def _part(part: Figures) -> str:
    """One update of the pattern: its solver, the graphs whose backward it follows, what feeds it."""
    if not part:
        return "an update the hooks did not see"
    if "after" not in part:
        return str(part["solver"])
    if part["after"]:
        said = "%s after the backward of %s" % (part["solver"], _listed(part["after"]))
    else:
        said = "%s with no backward before it" % part["solver"]
    return said + (" fed by %s" % _listed(part["fed_by"]) if part.get("fed_by") else "")


def _updates(f: Figures) -> str:
    if not f["found"]:
        return NO_PATTERN
    if f["period"] == 1:
        return "solver updates: one step per update" + _before(f, "update")
    return "solver updates: one step per %d updates%s (the loop's repeating pattern: %s)%s" % (
        f["period"],
        " of %d solvers" % f["solvers"] if f["solvers"] > 1 else " of one solver",
        "; ".join(_part(p) for p in f["pattern"]),
        _before(f, "update"),
    )


EACH_FIGURE = (
    "each figure (the time of one call) is the mean of its round means, leaving out rounds the machine ran slow in"
)


def _rounds(f: Figures) -> str:
    return (
        "%d warm-up, then rounds over all entries (at least %d) until every entry's relative "
        "standard error is below %g%% and the machine's speed holds within %g%%, or %g s "
        "per section (or %g s by one entry) are spent; %s"
        % (
            f["warmup"],
            f["min_rounds"],
            f["target_rse"] * 100,
            f["drift_threshold"] * 100,
            f["max_seconds"],
            f["max_seconds_per_entry"],
            EACH_FIGURE,
        )
    )


def span(steps: Sequence[int]) -> str:
    """Steps as a reader says them: "steps 3 to 22", "step 3", "no steps"."""
    if not steps:
        return "no steps"
    return "step %d" % steps[0] if len(steps) == 1 else "steps %d to %d" % (steps[0], steps[-1])


def _recorded_steps(f: Figures) -> str:
    """A program's kept steps of those recorded, and those run without the hooks."""
    plain = f.get("plain") or []
    return (
        "%s%s of %d%s recorded (%s %d, active %d)%s; each figure (the time of one call) is the mean over those "
        "steps (the Drift line says which steps, if any, it leaves out)"
        % (
            "window %d: " % f["window"] if f["windowed"] else "",
            span(f["kept"]),
            f["recorded"],
            " (the whole run)" if f.get("whole_run") else "",
            "warmup" if f["windowed"] else "skip first",
            f["skip"],
            f["active"],
            "; steps %s ran without the hooks, the program as it runs alone (a Note says what they set)"
            % (", ".join(str(s) for s in plain[:6]) + (", ..." if len(plain) > 6 else ""))
            if plain
            else "",
        )
    )


def _schedule(f: Figures) -> str:
    repeat = f["repeat"]
    windows = "until the program ends" if repeat == 0 else _plural(repeat, "window")
    return "wait %d, warmup %d, active %d, repeat %d (%s)" % (f["wait"], f["warmup"], f["active"], repeat, windows)


SAY: Dict[str, Callable[[Figures], str]] = {
    "sampling_runs": lambda f: (
        "%d warm-up + %d rounds of one timed run per entry; %s" % (f["warmup"], f["runs"], EACH_FIGURE)
    ),
    "sampling_rounds": _rounds,
    "sampling_steps": _recorded_steps,
    "schedule": _schedule,
    "schedule_on_demand": lambda f: (
        "on demand (SIG%s or nnprofile capture PID): each time, warmup %d and active %d "
        "steps" % (f["signal"], f["warmup"], f["active"])
    ),
    "steps_marks": lambda f: "marked by nnprofile.step(): %d" % f["steps"],
    "steps_iterations": _iterations,
    "steps_one": lambda f: ONE,
    "steps_none": lambda f: "nothing recorded",
    "steps_passes": _passes,
    "steps_updates": _updates,
}
