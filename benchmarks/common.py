"""What every benchmark shares: running commands, reading logs, and the statistics of ratios.

Every comparison is a ratio of figures taken in the same run of ``make bench``, in alternating
pairs, so that the machine's slow spells hit both sides alike; its interval is the 95% Student's t
interval of the pairs' mean log-ratio (the geometric mean of the pairs' ratios), which needs no
assumption about either side's own spread.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (ROOT, os.path.join(ROOT, "tests")):  # nntxt_writer: NNC-style projects for fixtures and benchmarks
    if _path not in sys.path:
        sys.path.insert(0, _path)
from nnprofile.base.stats import median  # noqa: E402,F401 (the parts' median: the package's own)

LENET = os.path.join(ROOT, "projects", "lenet", "lenet.nntxt")
ENTRY = re.compile(r"^(?:\S+ \S+ \[nnabla\]\[[^\]]+\]: )?(?P<label>.*) (?P<ms>-?\d+\.\d{6})\(ms\)$")
AGREEMENT_FLOOR_MS = 0.05


def run(cmd, cwd=None, env=None):
    """Run a command; return (wall seconds, None, stdout, stderr)."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("benchmark command failed (%s): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return wall, None, p.stdout, p.stderr


def run_measured(cmd, cwd=None):
    """Like run, with the child's own peak RSS in MiB (os.wait4 returns that child's rusage)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        raise SystemExit("benchmark command failed (%s): %s\n%s" % (p.returncode, " ".join(cmd), stderr[-2000:]))
    return wall, usage.ru_maxrss / 1024.0, stdout, stderr


def nnprofile_cmd(*args):
    return [sys.executable, "-m", "nnprofile", *args]


def log_entries(text, section_prefix=None):
    """[(label, ms)] of a log; with a prefix, only that section's (NNC's log has one)."""
    entries, inside = [], section_prefix is None
    for line in text.splitlines():
        core = re.sub(r"^\S+ \S+ \[nnabla\]\[[^\]]+\]: ", "", line)
        if core.startswith("Profiling "):
            if section_prefix is not None:
                if entries and inside:
                    break
                inside = core.startswith("Profiling " + section_prefix)
            continue
        m = ENTRY.match(core)
        if m and inside:
            entries.append((m.group("label"), float(m.group("ms"))))
    return entries


def phase(label):
    return label.split(" ", 1)[0].split("(", 1)[0]


def lenet_copy(work):
    """LeNet with absolute dataset paths and caches in the work folder, for nnabla_cli."""
    digits = os.path.join(ROOT, "projects", "lenet", "digits")
    with open(LENET) as f:
        text = f.read()
    for name in ("training", "validation"):
        text = text.replace('uri: "digits/%s.csv"' % name, 'uri: "%s"' % os.path.join(digits, name + ".csv"))
        text = text.replace(
            'cache_dir: "digits/%s.cache"' % name, 'cache_dir: "%s"' % os.path.join(work, name + ".cache")
        )
    path = os.path.join(work, "lenet.nntxt")
    with open(path, "w") as f:
        f.write(text)
    return path


def cv(values):
    m = sum(values) / len(values)
    if len(values) < 2 or m <= 0:
        return 0.0
    return (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5 / m


class Ratio(NamedTuple):
    """The geometric mean of paired ratios with its 95% interval (None with a single pair)."""

    value: float
    low: Optional[float]
    high: Optional[float]
    pairs: int

    def __str__(self) -> str:
        if self.low is None:
            return "%.3f (one pair, no interval)" % self.value
        return "%.3f [%.3f, %.3f]" % (self.value, self.low, self.high)

    def within(self, target: float) -> bool:
        """The whole interval within ``target`` of 1 (with one pair, the figure itself)."""
        low = self.value if self.low is None else self.low
        high = self.value if self.high is None else self.high
        return 1 - target <= low and high <= 1 + target

    def at_most(self, bound: float) -> bool:
        """The interval's upper end at most ``bound`` (with one pair, the figure itself)."""
        return (self.value if self.high is None else self.high) <= bound


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> Ratio:
    """numerator/denominator over pairs taken one after the other: the mean log-ratio's t interval."""
    from nnprofile.base.student import mean_ci

    logs = [math.log(a / b) for a, b in zip(numerators, denominators)]
    centre, low, high = mean_ci(logs)
    if low is None or high is None:
        return Ratio(math.exp(centre), None, None, len(logs))
    return Ratio(math.exp(centre), math.exp(low), math.exp(high), len(logs))


class Target(NamedTuple):
    """One of the issue's targets: what it asks, the figure measured, and whether it is met."""

    name: str
    figure: str
    met: bool


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def target_lines(targets: List[Target]) -> List[str]:
    lines = ["| target | measured | |", "|---|---|---|"]
    lines += ["| %s | %s | %s |" % (t.name, t.figure, "met" if t.met else "**NOT met**") for t in targets]
    return lines
