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
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from conftest import ROOT

INSTRUMENT = os.path.join(ROOT, "tests", "truth")


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


def command() -> List[str]:
    """How the program's main script is run with its passes noted, as ``python SCRIPT`` runs it: ``command() +
    [SCRIPT, ARGS...]``."""
    return [sys.executable, os.path.join(INSTRUMENT, "truth_main.py")]


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

    def spread(self, first: int, last: int, phase: Optional[str] = None) -> Optional[float]:
        """How far the mean step over steps ``first`` to ``last`` may be off, as a share of it: the half-width of its
        95 % interval (Student's t over the steps' own durations), None where there are fewer than 3 steps. It is
        the instrument's own noise (the program's steps vary run to run, and step to step): a figure of nnprofile's
        off by less than this is off by no more than the program alone would be, run again. ``phase``: the same for
        the passes of that phase a step."""
        if first < 2 or last > len(self.ends) or last - first < 2:
            return None
        bounds = list(zip(self.ends[first - 2 : last - 1], self.ends[first - 1 : last]))
        if phase is None:
            steps = [float(b - a) for a, b in bounds]
        else:
            steps = [
                float(sum(p.end - p.start for p in self.passes if p.phase == phase and a < p.end <= b))
                for a, b in bounds
            ]
        n = len(steps)
        mean = sum(steps) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in steps) / (n - 1))
        return _t95(n - 1) * sd / math.sqrt(n) / mean if mean > 0 else None

    def mean_ms(self, first: int, last: int) -> Optional[float]:
        """The mean step over steps ``first`` to ``last`` (numbered from 1), None where they are not all there."""
        if first < 2 or last > len(self.ends):
            return None
        return (self.ends[last - 1] - self.ends[first - 2]) / (last - first + 1) / 1e6


_T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 15: 2.13, 20: 2.09}


def _t95(df: int) -> float:
    """Student's t for a two-sided 95 % interval at ``df`` degrees of freedom, from a table (no SciPy in the tests):
    between two rows, the row below (the wider interval); from 30 on, 2."""
    if df >= 30:
        return 2.0
    return _T95[max(k for k in _T95 if k <= max(1, df))]


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


def figures(out: str) -> dict:
    """nnprofile's figures for the program's step, from the result in ``out`` (``figures_of``)."""
    import nnprofile
    from nnprofile.analysis import analyze

    profile = nnprofile.load(out)
    return figures_of(profile, analyze(profile))


def figures_of(profile, analysis) -> dict:
    """nnprofile's figures for the program's step, from a loaded result and its analysis: the steps they are over
    (first and last, numbered from 1), the step and each phase's passes a step (ms), as the step's breakdown reads
    them."""
    steps = list(profile.header.kept_steps or [])
    step = analysis.sections[-1].step
    if step is None or not steps:
        return {"steps": (None, None), "step": None, "forward": None, "backward": None}
    return {
        "steps": (min(steps), max(steps)),
        "step": sum(p.ms for p in step.parts),
        "forward": sum(g.forward_ms for g in step.graphs),
        "backward": sum(g.backward_ms for g in step.graphs),
    }
