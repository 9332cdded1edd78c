"""The real-program corpus (``../shared/corpus``): NNabla programs written by others, run unmodified, alone and
under ``nnprofile run``. Its own ``run.py`` (standard library only) lays each program out, makes its data and
gives its environment; this module runs it both ways and keeps what each run printed, so that the tests
(``tests/test_corpus.py``) assert the program's facts (``corpus.json``) through the public API and the files.

CI points ``NNPROFILE_PROGRAMS`` at the corpus (``.ci/run``); elsewhere it is looked for beside the clone.
"""

import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from functools import reduce
from typing import Dict, Iterable, List, Optional, Sequence

from conftest import ROOT

CORPUS = os.environ.get("NNPROFILE_PROGRAMS") or os.path.join(os.path.dirname(ROOT), "shared", "corpus")
TIMEOUT = 900
# The property each corpus test records: (its program's run alone, its run under nnprofile), wall seconds, side by
# side (``summary`` sums them over a session).
SECONDS = "corpus_seconds"
# What a profiled run may take: this times the program's own, plus these seconds (issue 59; printed, never asserted:
# a wall-clock bound in a test fails on a busy machine).
BUDGET = (1.3, 2.0)
TRUTH = "corpus_against_alone"  # nnprofile's step and passes over the program's own, run alone (tests/truth)


def available() -> bool:
    return os.path.isfile(os.path.join(CORPUS, "corpus.json")) and os.path.isfile(os.path.join(CORPUS, "run.py"))


def programs() -> List[dict]:
    if not available():
        return []
    with open(os.path.join(CORPUS, "corpus.json"), encoding="utf-8") as f:
        return json.load(f)["programs"]


def _runner():
    spec = importlib.util.spec_from_file_location("corpus_run", os.path.join(CORPUS, "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float = 0.0  # its wall time, on the harness's clock (no part of nnprofile's)


@dataclass
class Prepared:
    program: dict
    work: str

    @property
    def places(self) -> Dict[str, str]:
        return _runner().places(self.program, self.work)

    def environment(self) -> Dict[str, str]:
        env = _runner().environment(self.program, self.places)
        env.pop("CI", None)  # the program runs as a user runs it
        return env

    def _run(self, head: List[str], env: Optional[Dict[str, str]] = None) -> Run:
        runner = _runner()
        args = head + [runner.script(self.program)] + list(self.program["argv"])
        start = time.perf_counter()
        proc = subprocess.run(
            args,
            cwd=self.places["cwd"],
            env=env or self.environment(),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT,
        )
        # The folder the program was laid out in, as one name: two runs in folders prepared alike print the same.
        took = time.perf_counter() - start
        return Run(
            proc.returncode, proc.stdout.replace(self.work, "{work}"), proc.stderr.replace(self.work, "{work}"), took
        )

    def alone(self) -> Run:
        return self._run([sys.executable])

    def noted(self, path: str) -> Run:
        """The program alone, as ``python SCRIPT`` runs it, with the instrument of ``tests/truth`` noting its updates
        and passes into ``path`` (a part of no nnprofile's: the standard library's alone)."""
        import truth

        return self._run(truth.command(), truth.environment(self.environment(), path, self.places["src"]))

    def sources(self) -> List[str]:
        """The program's own files, as text."""
        out = []
        for name in self.program["files"]:
            with open(os.path.join(self.places["src"], name), encoding="utf-8", errors="replace") as f:
                out.append(f.read())
        return out

    def profiled(self, out: str, *options: str) -> Run:
        """The program under ``nnprofile run -q`` (its stdout the program's alone: with -q, nnprofile says where it
        wrote on stderr, as ``nnprofile:`` lines and its ``Written to`` line)."""
        return self._run([sys.executable, "-m", "nnprofile", "run", "-q", "-o", out, *options], self.with_nnprofile())

    def with_nnprofile(self) -> Dict[str, str]:
        """The program's environment with this clone's nnprofile first on the path (the program's own path may set
        PYTHONPATH, which would leave the installed one, or none, to run it)."""
        env = self.environment()
        env["PYTHONPATH"] = os.pathsep.join([ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        return env


def prepare(program: dict, base: str, like: Optional[Prepared] = None, memo: Optional[str] = None) -> Prepared:
    """The program laid out in ``base/<id>`` with its data (once per folder); ``like``: a copy of that folder, as
    prepared and never run (its data made once: the corpus's makers write no path into what they make); ``memo``: a
    folder where each data maker's output is kept for the other programs that make the same (``maker_memo.py``)."""
    work = os.path.join(base, program["id"])
    done = os.path.join(work, "prepared.json")
    if like is not None and not os.path.isfile(done):
        shutil.copytree(like.work, work, symlinks=True, dirs_exist_ok=True)
    if not os.path.isfile(done):
        env = dict(os.environ, NNPROFILE_MEMO_WORK=work, NNPROFILE_MEMO_DIR=memo or "")
        proc = subprocess.run(
            [
                sys.executable,
                os.path.join(CORPUS, "run.py"),
                "prepare",
                program["id"],
                work,
                "--python",
                _shim(memo) if memo else sys.executable,
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=env,
        )
        if proc.returncode != 0:
            raise RuntimeError("preparing %s failed:\n%s%s" % (program["id"], proc.stdout[-3000:], proc.stderr[-3000:]))
    return Prepared(program, work)


def _shim(memo: str) -> str:
    """An executable the corpus's runner takes for Python: a data maker through ``maker_memo.py``, the rest as is."""
    path = os.path.join(memo, "python")
    if not os.path.isfile(path):
        os.makedirs(memo, exist_ok=True)
        memo_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "maker_memo.py")
        text = '#!/bin/sh\ncase "$1" in\n  %s/make_*) exec %s %s %s "$@" ;;\nesac\nexec %s "$@"\n' % (
            shlex.quote(os.path.join(os.path.abspath(CORPUS), "data")),
            shlex.quote(sys.executable),
            shlex.quote(memo_script),
            shlex.quote(sys.executable),
            shlex.quote(sys.executable),
        )
        part = "%s.%d" % (path, os.getpid())
        with open(part, "w") as f:
            f.write(text)
        os.chmod(part, 0o755)
        os.replace(part, path)
    return path


# -- what a program printed, as it compares between two runs ------------------------------------------------------

_NUMBER = re.compile(r"0x[0-9a-fA-F]+|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?\.\d+")


def lines(text: str) -> List[str]:
    """A run's output as lines with every number masked (times, losses, addresses, dates differ from run to run) and
    the spaces that align them collapsed; progress bars' redrawn lines (``\\r``) are lines of their own."""
    out = []
    for line in re.split(r"[\r\n]+", text):
        line = " ".join(_NUMBER.sub("#", line).split())
        if line:
            out.append(line)
    return out


def differences(alone: Sequence[str], profiled: str, counted: bool) -> List[str]:
    """Lines the profiled run printed that no run alone did, and lines every run alone printed that it did not
    (``counted``: also how many times each was printed, against the fewest and the most of the runs alone). Text
    the same but for where it wraps (NumPy wraps an array's rows by the width of its numbers) is the same."""
    squeezed = "".join(lines(profiled)).replace(" ", "")
    if counted and any("".join(lines(a)).replace(" ", "") == squeezed for a in alone):
        return []
    runs = [Counter(lines(a)) for a in alone]
    b = Counter(lines(profiled))
    if not counted:
        runs, b = [Counter(set(a)) for a in runs], Counter(set(b))
    fewest = reduce(lambda x, y: x & y, runs)
    most = reduce(lambda x, y: x | y, runs)
    missing = ["only alone (%d): %s" % (n, line) for line, n in (fewest - b).items()]
    extra = ["only profiled (%d): %s" % (n, line) for line, n in (b - most).items()]
    return missing + extra


def own_text(line: str, sources: Iterable[str]) -> bool:
    """Whether a printed line's words (its longest run of them: "Decreased learning rate to" of
    ``### #:#:#,# [nnabla][INFO]: Decreased learning rate to #``) are written in the program's own source."""
    runs = re.findall(r"[A-Za-z][A-Za-z ,'()-]*[A-Za-z)]", line)
    words = max(runs, key=len, default="")
    return len(words.split()) >= 2 and any(words in text for text in sources)


def progress_bar(line: str) -> bool:
    """A progress bar's line (tqdm's): how often it is redrawn depends on time, not on the program."""
    return bool(re.search(r"\|[^|]*\| *#/#|#it \[|it/s\]|s/it\]", line))


def own_lines(stderr: str) -> str:
    """stderr without nnprofile's own lines (``nnprofile: ...``, and its ``Written to`` line, wrapped)."""
    out, ours = [], False
    for line in stderr.splitlines():
        ours = line.startswith(("nnprofile:", "Written to ")) or (ours and line.startswith("  "))
        if not ours:
            out.append(line)
    return "\n".join(out)


def summary(reports: Iterable[object], most: int = 5) -> Optional[str]:
    """What the programs took alone and under nnprofile, over the corpus tests of a session (their reports), on the
    harness's clock: how much of ``make corpus`` is the programs' own and how much nnprofile's, and the ``most``
    programs it added the most to."""
    pairs, ratios = {}, {}
    for r in reports:
        for name, value in getattr(r, "user_properties", ()):
            key = getattr(r, "nodeid", "").rsplit("[", 1)[-1].rstrip("]")
            if name == SECONDS:
                pairs[key] = value
            elif name == TRUTH:
                ratios[key] = value
    if not pairs:
        return None
    alone, profiled = sum(a for a, _ in pairs.values()), sum(p for _, p in pairs.values())
    added = sorted(pairs.items(), key=lambda kv: kv[1][0] - kv[1][1])[:most]
    held = sum(1 for a, p in pairs.values() if p <= BUDGET[0] * a + BUDGET[1])
    said = (
        "corpus: %d programs took %.0f s alone and %.0f s under nnprofile (%.2fx), each pair in turns; %d within "
        "%.1fx + %.0f s of their own\n"
        "corpus: nnprofile added most to %s"
        % (
            len(pairs),
            alone,
            profiled,
            profiled / alone if alone else float("nan"),
            held,
            BUDGET[0],
            BUDGET[1],
            ", ".join("%s (%.1f s to %.1f s)" % (k, a, p) for k, (a, p) in added),
        )
    )
    return said + ("\n" + against_alone(ratios, most) if ratios else "")


def against_alone(ratios: Dict[str, Dict[str, float]], most: int = 5) -> str:
    """nnprofile's step (and passes) over the program's own run alone, over the programs: how many within 5 %, how
    many within the instrument's own 95 % interval of the program's step (``spread``: what the program alone would
    move by, run again), and the ``most`` furthest off, each with that interval."""
    steps = {k: r["step"] for k, r in ratios.items() if "step" in r}
    within = sum(1 for v in steps.values() if abs(v - 1) <= 0.05)
    noise = sum(1 for k, v in steps.items() if "spread" in ratios[k] and abs(v - 1) <= ratios[k]["spread"])
    off = sorted(steps, key=lambda k: -abs(math.log(steps[k])))[:most]
    return (
        "corpus: nnprofile's step against the program alone (tests/truth): %d of %d within 5%%, %d within the "
        "program's own 95%% interval%s; furthest: %s"
        % (
            within,
            len(steps),
            noise,
            over_programs(ratios),
            ", ".join(
                "%s %.2fx%s%s"
                % (
                    k,
                    steps[k],
                    " (alone +-%.0f%%)" % (100 * ratios[k]["spread"]) if "spread" in ratios[k] else "",
                    "".join(" %s %.2fx" % (p, ratios[k][p]) for p in ("forward", "backward") if p in ratios[k]),
                )
                for k in off
            ),
        )
    )


def over_programs(ratios: Dict[str, Dict[str, float]]) -> str:
    """Each figure's ratio over the programs: the geometric mean and its 95 % interval (Student's t over the
    programs' log-ratios: each program one pair of processes, so the interval holds the spread between processes
    that no one pair's can), where 3 or more programs have it."""
    from nnprofile.base.student import mean_ci

    out = []
    for figure in ("step", "forward", "backward"):
        logs = [math.log(r[figure]) for r in ratios.values() if r.get(figure, 0) > 0]
        if len(logs) < 3:
            continue
        centre, low, high = mean_ci(logs)
        assert low is not None and high is not None
        out.append("%s %.2fx [%.2f, %.2f]" % (figure, math.exp(centre), math.exp(low), math.exp(high)))
    return "; over the programs, geometric means %s" % ", ".join(out) if out else ""


# How far a figure may lie from the program alone, beside the instrument's own 95 % spread of it in that run: the
# program's mean step moves between two processes with nothing else changed (the tutorial's 20 kept steps, run alone
# 6 times, quiet: 0.248 to 0.271 ms, 9 %; more beside CI's other work), and the steps nnprofile runs without the hooks
# still carry some of its work (Poincare's, of NdArray functions: 1.02x to 1.22x in quiet pairs). Tutorial steps read
# 2.30x before the steps without the hooks set them.
BETWEEN = 0.35


def held(figure, ratio, spread):
    """What is wrong with nnprofile's ``figure`` at ``ratio`` to the program alone, if anything ("" where it holds)."""
    bound = 1 + BETWEEN + (spread or 0.0)
    if max(ratio, 1 / ratio) <= bound:
        return ""
    return (
        "%s: %.2fx the program alone, outside 1/%.2f to %.2fx (%.0f%% between processes + the instrument's %.0f%%)"
        % (
            figure,
            ratio,
            bound,
            bound,
            100 * BETWEEN,
            100 * (spread or 0.0),
        )
    )
