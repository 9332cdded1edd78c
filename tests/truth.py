"""What nnprofile's step is held to: the program's own steps, run without nnprofile, as the instrument of
tests/truth/sitecustomize.py noted them (each solver's update as it returned), over the same steps nnprofile kept.

A step is an iteration of the program's loop, and every iteration of the corpus's programs updates one solver a
fixed number of times (``corpus.json``: ``updates_per_iteration``): the instrument's iterations end at every such
update, and the mean step over steps ``a`` to ``b`` is the time from the end of iteration ``a - 1`` to the end of
iteration ``b``, divided by their number, whatever the iteration does between (a validation, an environment's
steps). nnprofile numbers its steps the same way (the first iteration that updates is step 1)."""

import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from conftest import ROOT

INSTRUMENT = os.path.join(ROOT, "tests", "truth")
# How far a recorded step may read from the program's own, at least, in CI (a shared machine's runs differ by this
# much from one run to the next; the comparison's own spread widens it where larger): ``bound``.
FLOOR = 0.10
SPREADS = 3.0


def environment(env: dict, path: str, sources: Optional[str] = None) -> dict:
    """``env`` with the instrument loaded first (the program's own sitecustomize runs after it); ``sources``: the
    program's folder, whose files have their passes noted."""
    out = dict(env)
    out["NNPROFILE_TRUTH"] = path
    out.pop("NNPROFILE_TRUTH_OWNER", None)
    if sources:
        out["NNPROFILE_TRUTH_SOURCES"] = sources
    out["PYTHONPATH"] = os.pathsep.join([INSTRUMENT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return out


def command(script: str) -> List[str]:
    """How the program's main script is run with its passes noted: as ``python SCRIPT`` runs it."""
    return [sys.executable, os.path.join(INSTRUMENT, "truth_main.py"), script]


@dataclass
class Pass:
    """A pass as the program called it: where (file:line:method), forward or backward, its start and end (ns)."""

    site: str
    phase: str
    start: int
    end: int


@dataclass
class Truth:
    """The program's iterations as the instrument saw them: each one's end (ns), the passes it called, and what a
    note costs (ns): an update's, a pass's."""

    ends: List[int]
    note_ns: float
    passes: List[Pass] = field(default_factory=list)
    pass_ns: float = 0.0

    def phase_ms(self, first: int, last: int, phase: str) -> Optional[float]:
        """The passes of a phase the program called in steps ``first`` to ``last``: their time a step (ms)."""
        if first < 2 or last > len(self.ends):
            return None
        lo, hi = self.ends[first - 2], self.ends[last - 1]
        total = sum(p.end - p.start for p in self.passes if p.phase == phase and lo < p.end <= hi)
        return total / (last - first + 1) / 1e6

    def mean_ms(self, first: int, last: int) -> Optional[float]:
        """The mean step over steps ``first`` to ``last`` (numbered from 1), None where they are not all there."""
        if first < 2 or last > len(self.ends):
            return None
        return (self.ends[last - 1] - self.ends[first - 2]) / (last - first + 1) / 1e6

    def mean_over(self, steps: Sequence[int]) -> Optional[float]:
        """The mean of the given steps (numbered from 1; each from the end of the one before), None where one is not
        there."""
        if not steps or min(steps) < 2 or max(steps) > len(self.ends):
            return None
        return statistics.fmean(self._steps(steps))

    def rse_over(self, steps: Sequence[int]) -> float:
        """The relative standard error of that mean, from the steps' own spread."""
        values = self._steps(steps) if steps and min(steps) >= 2 and max(steps) <= len(self.ends) else []
        if len(values) < 2:
            return 0.0
        mean = statistics.fmean(values)
        return statistics.stdev(values) / math.sqrt(len(values)) / mean if mean > 0 else 0.0

    def _steps(self, steps: Sequence[int]) -> List[float]:
        return [(self.ends[k - 1] - self.ends[k - 2]) / 1e6 for k in steps]

    def rse(self, first: int, last: int) -> float:
        """The relative standard error of that mean, from the steps' own spread."""
        steps = [(b - a) / 1e6 for a, b in zip(self.ends[first - 2 : last - 1], self.ends[first - 1 : last])]
        if len(steps) < 2:
            return 0.0
        mean = statistics.fmean(steps)
        return statistics.stdev(steps) / math.sqrt(len(steps)) / mean if mean > 0 else 0.0


def load(path: str, solvers: Sequence[dict]) -> Optional[Truth]:
    """The instrument's file, read for the solver the steps are counted by: the first of the facts' ``solvers`` that
    updates a whole number of times an iteration (the k-th made of its class), its every such update an
    iteration's end. None where the file or the solver is missing."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    counting = next((s for s in solvers if isinstance(s["updates_per_iteration"], int)), None)
    if counting is None:
        return None
    nth = [s for s in solvers if s["class"] == counting["class"]].index(counting)
    made = [ends for name, ends in data["solvers"] if name == counting["class"]]
    if nth >= len(made):
        return None
    per = counting["updates_per_iteration"]
    found = data.get("passes") or {"sites": [], "calls": []}
    sites = found["sites"]
    passes = [
        Pass(sites[k], "backward" if sites[k].endswith(":backward") else "forward", a, b) for k, a, b in found["calls"]
    ]
    return Truth(made[nth][per - 1 :: per], float(data.get("note_ns", 0.0)), passes, float(data.get("pass_ns", 0.0)))


def bound(*rses: float) -> float:
    """How far two figures of one step may differ, relatively: FLOOR, or SPREADS times their combined spread."""
    return max(FLOOR, SPREADS * math.sqrt(sum(r * r for r in rses)))


def figures(out: str) -> dict:
    """nnprofile's figures for the program's step, from the result in ``out``: the steps they are over (first and last,
    numbered from 1), the step and each phase's passes a step (ms), as the step's breakdown reads them."""
    import nnprofile
    from nnprofile.analysis import analyze

    profile = nnprofile.load(out)
    steps = list(profile.header.kept_steps or [])
    step = analyze(profile).sections[-1].step
    if step is None or not steps:
        return {"steps": (None, None), "lean": [], "step": None, "step_rse": 0.0, "forward": None, "backward": None}
    lean = list(getattr(profile.header, "plain_steps", None) or [])
    entry = profile.sections[-1].entries_of("step")
    samples = list(entry[0].samples_ns) if entry else []
    rse = 0.0
    if len(samples) > 1 and statistics.fmean(samples) > 0:
        rse = statistics.stdev(samples) / math.sqrt(len(samples)) / statistics.fmean(samples)
    return {
        "steps": (min(steps), max(steps)),
        "lean": lean if set(lean) <= set(steps) else [],  # (a result before version 13: its plain steps apart)
        "step": sum(p.ms for p in step.parts),
        "step_rse": rse,
        "forward": sum(g.forward_ms for g in step.graphs),
        "backward": sum(g.backward_ms for g in step.graphs),
    }
