"""Section 11: right on a busy machine. The same program and project profiled quiet and beside processes of the
benchmark's own that keep every core busy; what must hold between them, and the gate's verdicts under that load.

For a training program (examples/lenet_train.py, recorded by ``nnprofile run``) and a project (projects/lenet):
quiet once, then twice beside the spinners, and a heavier variant (its convolutions doing 1.5x the work) beside them
too. Between each busy run and the quiet one: every part of the step keeps its share within 5 points, the three
largest layers stay the same, every entry of 3% of the step or more reads within 25% of its quiet figure (a ratio
with its 95% interval from both sides' own standard errors), the advice is the same; ``nnprofile check`` of the busy
run against the quiet one passes (exit 0), and of the heavier variant fails (exit 1) naming the layers that slowed.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from typing import Dict, List, Tuple

from common import ROOT, Target, lenet_copy, met, nnprofile_cmd, run

SHARE_POINTS = 5.0  # a part's share of the step, busy against quiet: within this many points
ENTRY_RATIO = 0.25  # an entry of ENTRY_SHARE of the step or more: within 25% of its quiet figure
ENTRY_SHARE = 0.03
KINDS = ("input", "forward", "backward", "update", "monitor", "communication", "eager", "other")
ITERATIONS = "80"


class Spinners:
    """Processes of the benchmark's own that keep the machine's cores busy (one a core), ended on exit: the
    benchmark signals only them."""

    def __init__(self, n: int = 0):
        self.n = n or os.cpu_count() or 2
        self.procs: List[subprocess.Popen] = []

    def __enter__(self) -> "Spinners":
        code = "while True:\n    pass\n"
        self.procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(self.n)]
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait()


def _program_copies(work: str) -> Tuple[str, str]:
    """examples/lenet_train.py as it is, and a variant whose first convolution has 1.5x the maps (both
    convolutions then do 1.5x the work), in the work folder beside their copy of examples/digits.py."""
    examples = os.path.join(ROOT, "examples")
    with open(os.path.join(examples, "digits.py")) as f:
        digits = f.read().replace(
            'os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "projects", "lenet", "digits")',
            repr(os.path.join(ROOT, "projects", "lenet", "digits")),
        )
    with open(os.path.join(work, "digits.py"), "w") as f:
        f.write(digits)
    with open(os.path.join(examples, "lenet_train.py")) as f:
        plain = f.read()
    heavy = plain.replace("PF.convolution(x, 16, (5, 5))", "PF.convolution(x, 24, (5, 5))")
    assert heavy != plain
    paths = []
    for name, text in (("lenet_train.py", plain), ("lenet_train_heavy.py", heavy)):
        paths.append(os.path.join(work, name))
        with open(paths[-1], "w") as f:
            f.write(text)
    return paths[0], paths[1]


def _project_copies(work: str) -> Tuple[str, str]:
    """projects/lenet (absolute dataset paths) and a variant whose first convolution has 24 maps, not 16."""
    plain = lenet_copy(work)
    with open(plain) as f:
        text = f.read()
    heavy = (
        text.replace("dim: 16 dim: 1 dim: 5 dim: 5", "dim: 24 dim: 1 dim: 5 dim: 5")
        .replace("dim: 16 }", "dim: 24 }")
        .replace("dim: 30 dim: 16 dim: 3", "dim: 30 dim: 24 dim: 3")
        .replace("dim:-1 dim: 16 dim:", "dim:-1 dim: 24 dim:")
    )
    path = os.path.join(work, "lenet_heavy.nntxt")
    with open(path, "w") as f:
        f.write(heavy)
    return plain, path


def _profile(kind: str, target: str, out: str) -> str:
    if kind == "program":
        run(nnprofile_cmd("run", "-q", "-o", out, target, "--iterations", ITERATIONS))
    else:
        run(nnprofile_cmd(target, "-q", "-o", out, "--synthetic"))
    return out


def _check(a: str, b: str) -> Tuple[int, str]:
    p = subprocess.run(nnprofile_cmd("check", a, b), capture_output=True, text=True)
    if p.returncode not in (0, 1, 3):
        raise SystemExit("nnprofile check failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return p.returncode, p.stdout


def _view(folder: str) -> Dict[str, object]:
    """What the judge compares, from a result: the step's parts as shares of the step, the layers largest first,
    every entry's mean and standard error, the advice (numbers masked), and what other work took."""
    import nnprofile

    profile = nnprofile.load(folder)
    analysis = nnprofile.analyze(profile)
    step = [a for a in analysis.sections if a.step is not None][-1].step
    shares = {k: 100.0 * step.share(k) for k in KINDS}
    layers = [t.layer for t in sorted(step.layers, key=lambda t: -(t.total_ms * (t.per_step or 1)))]
    entries = {}
    for s in profile.sections:
        for e in s.entries:
            st = e.stats
            entries["%s | %s" % (s.title, e.label)] = (st.mean / 1e6, st.rse if st.rse_known else None)
    advice = sorted(re.sub(r"\d+(\.\d+)?", "#", "%s: %s" % (a.rule, a.text)) for a in step.advice)
    found = profile.interference()
    taken = found.share if found is not None and found.measured else None
    return {
        "shares": shares,
        "layers": layers,
        "entries": entries,
        "step_ms": step.step_ms,
        "advice": advice,
        "taken": taken,
    }


def _ratio(busy: Tuple[float, object], quiet: Tuple[float, object]) -> Tuple[float, float, float]:
    """busy/quiet with a 95% interval from both sides' relative standard errors (log-normal)."""
    r = busy[0] / quiet[0]
    se = math.sqrt(sum(float(x) ** 2 for x in (busy[1], quiet[1]) if x is not None))
    return r, r * math.exp(-1.96 * se), r * math.exp(1.96 * se)


def compare(quiet: Dict, busy: Dict) -> Dict[str, object]:
    """What must hold between a busy run and the quiet one, as figures."""
    points = max(abs(busy["shares"][k] - quiet["shares"][k]) for k in KINDS)
    worst_part = max(KINDS, key=lambda k: abs(busy["shares"][k] - quiet["shares"][k]))
    big = [
        k
        for k, (ms, _) in quiet["entries"].items()
        if ms >= ENTRY_SHARE * quiet["step_ms"]
        and k in busy["entries"]
        and not k.split(" | ")[1].startswith("setup_function")
    ]
    ratios = {k: _ratio(busy["entries"][k], quiet["entries"][k]) for k in big}
    worst = max(ratios, key=lambda k: abs(math.log(ratios[k][0]))) if ratios else None
    return {
        "points": points,
        "worst_part": worst_part,
        "top3": busy["layers"][:3] == quiet["layers"][:3],
        "entries": len(big),
        "outside": sorted(k for k, r in ratios.items() if abs(r[0] - 1) > ENTRY_RATIO),
        "worst": worst,
        "worst_ratio": ratios[worst] if worst else None,
        "advice": busy["advice"] == quiet["advice"],
        "taken": busy["taken"],
    }


def measure_one(work: str, kind: str) -> Dict[str, object]:
    plain, heavy = _program_copies(work) if kind == "program" else _project_copies(work)
    quiet = _profile(kind, plain, os.path.join(work, "%s_quiet" % kind))
    with Spinners() as spinners:
        busy = [_profile(kind, plain, os.path.join(work, "%s_busy%d" % (kind, i))) for i in (1, 2)]
        heavier = _profile(kind, heavy, os.path.join(work, "%s_heavy" % kind))
        n = spinners.n
    q = _view(quiet)
    rows = [compare(q, _view(b)) for b in busy]
    checks = [_check(quiet, b)[0] for b in busy]
    code, said = _check(quiet, heavier)
    slowed = said.split("layers that slowed:", 1)[1].splitlines()[0] if "layers that slowed:" in said else ""
    named = [name.strip(" .'\"") for name in slowed.split(",") if "conv" in name.lower()]
    return {
        "kind": kind,
        "spinners": n,
        "rows": rows,
        "checks": checks,
        "heavy_code": code,
        "named": named,
        "quiet_taken": q["taken"],
    }


def measure(work: str) -> List[Dict[str, object]]:
    return [measure_one(work, "program"), measure_one(work, "project")]


def _holds(row: Dict) -> bool:
    return row["points"] <= SHARE_POINTS and row["top3"] and not row["outside"] and row["advice"]


def targets(figures: List[Dict]) -> List[Target]:
    out = []
    for f in figures:
        what = "examples/lenet_train.py" if f["kind"] == "program" else "projects/lenet"
        worst = max(r["points"] for r in f["rows"])
        out.append(
            Target(
                "%s beside %d spinners: parts' shares within 5 points, top 3 layers, entries ≥3%% within "
                "25%%, same advice (both busy runs)" % (what, f["spinners"]),
                "%.1f points; %s" % (worst, "; ".join(_said(r) for r in f["rows"])),
                all(_holds(r) for r in f["rows"]),
            )
        )
        out.append(
            Target(
                "%s: check busy against quiet passes (both)" % what,
                "exit %s" % f["checks"],
                all(c == 0 for c in f["checks"]),
            )
        )
        out.append(
            Target(
                "%s: check of the 1.5x convolutions fails naming them" % what,
                "exit %d, named %s" % (f["heavy_code"], ", ".join(f["named"]) or "none"),
                f["heavy_code"] == 1 and bool(f["named"]),
            )
        )
    return out


def _said(r: Dict) -> str:
    worst = ""
    if r["worst"]:
        v, lo, hi = r["worst_ratio"]
        worst = "worst entry %s %.3f [%.3f, %.3f]" % (r["worst"].split(" | ")[1], v, lo, hi)
    return "%s%s%s%s" % (
        worst,
        "" if r["top3"] else ", top 3 changed",
        "" if r["advice"] else ", advice changed",
        ", %d entries beyond 25%%" % len(r["outside"]) if r["outside"] else "",
    )


def lines(figures: List[Dict]) -> List[str]:
    out = [
        "## 11. On a busy machine (`nnprofile run`, `nnprofile PROJECT`, `nnprofile check`)",
        "",
        "Each profiled quiet, then twice beside processes of the benchmark's own spinning on every core, and a "
        "variant whose convolutions do 1.5x the work beside them too (`benchmarks/busy.py`). Ratios are busy "
        "over quiet, with 95% intervals from both sides' own standard errors.",
        "",
        "| what | run | other work took | largest share change | top 3 layers | entries ≥3% | worst entry "
        "(busy/quiet) | advice | check |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        what = "examples/lenet_train.py" if f["kind"] == "program" else "projects/lenet"
        for i, (r, code) in enumerate(zip(f["rows"], f["checks"]), start=1):
            worst = "—"
            if r["worst"]:
                v, lo, hi = r["worst_ratio"]
                worst = "%s %.3f [%.3f, %.3f]" % (r["worst"].split(" | ")[1], v, lo, hi)
            out.append(
                "| %s | busy %d | %s | %.1f points (%s) | %s | %d, %d beyond 25%% | %s | %s | exit %d |"
                % (
                    what,
                    i,
                    "—" if r["taken"] is None else "%.0f%%" % (100 * r["taken"]),
                    r["points"],
                    r["worst_part"],
                    "same" if r["top3"] else "changed",
                    r["entries"],
                    len(r["outside"]),
                    worst,
                    "same" if r["advice"] else "changed",
                    code,
                )
            )
        out.append(
            "| %s | heavier, busy | | | | | | | exit %d, layers named: %s |"
            % (what, f["heavy_code"], ", ".join(f["named"]) or "none")
        )
    return out + [""]


if __name__ == "__main__":
    import tempfile

    folder = tempfile.mkdtemp(prefix="nnprofile-busy-")
    found = measure(folder)
    print("\n".join(lines(found)))
    for t in targets(found):
        print("%s: %s (%s)" % (t.name, t.figure, met(t.met)))
