"""nnprofile's step against the program's own, for the real-program corpus: each program run alone with the
instrument of tests/truth (its solvers' updates as they returned, no part of nnprofile), then under
``nnprofile run``, in alternating pairs; the ratio of nnprofile's mean step to the program's over the same steps,
with its 95% interval over the pairs (``common.paired_ratio``: Student's t on the pairs' log-ratios).

    python benchmarks/truth.py [--pairs N] [--only ID ...] [--work DIR] [--busy N]

``make bench`` runs it first (its "truth" part, the table ``lines`` makes).

``--busy N`` runs N spinning processes of the benchmark's own beside every run (a busy machine: a laptop, a CI
runner). Needs ../shared/corpus (or NNPROFILE_PROGRAMS).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import corpus  # noqa: E402
import truth  # noqa: E402
from common import paired_ratio  # noqa: E402


def _spin(stop):  # a process of the benchmark's own that keeps a core busy
    x = 0
    while not stop.is_set():
        x += 1


def measure(program: dict, work: str, pairs: int) -> dict:
    """Each pair: the program alone under the instrument, then under nnprofile; nnprofile's figures and the program's
    over the same steps, kept as (nnprofile's, the program's) per figure: the step, each phase's passes a step; and
    the runs' wall times ("seconds": (under nnprofile, alone) a pair)."""
    prepared = corpus.prepare(program, work)
    facts = program["facts"]
    pairs_of, notes, seconds = {}, [], []  # figure -> [(nnprofile's, the program's)]
    for k in range(pairs):
        path = os.path.join(prepared.work, "truth-%d.json" % k)
        alone = prepared.noted(path)
        measured = truth.load(path, facts["solvers"])
        out = os.path.join(prepared.work, "out-%d" % k)
        run = prepared.profiled(out)
        seconds.append((run.seconds, alone.seconds))
        if run.code != 0 or measured is None:
            notes.append("pair %d: %s" % (k, "no result" if run.code else "no truth"))
            continue
        got = truth.figures(out)
        first, last = got["steps"]
        want = measured.mean_ms(first, last) if first else None
        if not want:
            continue
        pairs_of.setdefault("step", []).append((got["step"], want))
        notes.append("step %.3f / %.3f ms" % (got["step"], want))
        for phase in ("forward", "backward"):
            have = measured.phase_ms(first, last, phase)
            if have and got[phase]:
                pairs_of.setdefault(phase, []).append((got[phase], have))
                notes.append("%s %.3f / %.3f" % (phase, got[phase], have))
    ratios = {name: paired_ratio(*zip(*p)) for name, p in pairs_of.items()}
    return {"id": program["id"], "ratios": ratios, "notes": notes, "seconds": seconds}


PHASES = ("step", "forward", "backward")
WITHIN = 0.05  # the issue's: a ratio within 5 % of the program alone counts as right
BUDGET = corpus.BUDGET  # a profiled run at most this (ratio, seconds) of the program alone


def lines(rows: list, pairs: int) -> list:
    """The table of ``make bench``: each program's step and passes against the program alone, with their intervals,
    and the profiled run's time against the run alone."""
    out = [
        "## The corpus against the program alone (`benchmarks/truth.py`)",
        "",
        "Each program of ../shared/corpus run alone under the instrument of tests/truth (no part of nnprofile: its "
        "solvers' updates, its own calls of forward/backward), then under `nnprofile run`, in %d alternating pairs; "
        "nnprofile's mean step and passes a step over its kept steps against the program's over the same steps. "
        "Geometric mean of the pairs' ratios, 95%% interval in brackets; `*` where the ratio lies outside 5%%. "
        "Run time: the profiled run against the run alone (mean of the pairs), and whether it is within %.1fx + %g s."
        % (pairs, BUDGET[0], BUDGET[1]),
        "",
        "| program | step | forward | backward | run time |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        cells = []
        for phase in PHASES:
            r = row["ratios"].get(phase)
            cells.append("" if r is None else "%s%s" % (r, "" if abs(r.value - 1) <= WITHIN else " *"))
        s = row["seconds"]
        if s:
            prof, alone = (sum(x) / len(s) for x in zip(*s))
            over = "" if prof <= BUDGET[0] * alone + BUDGET[1] else " (over)"
            cells.append("%.1f s / %.1f s%s" % (prof, alone, over))
        else:
            cells.append("")
        out.append("| %s | %s |" % (row["id"], " | ".join(cells)))
    return out + [""]


def counts(rows: list) -> dict:
    """How many programs have each figure within 5 % (its ratio), how many have it, and how many runs kept to the
    budget of time."""
    have = {p: [r["ratios"][p] for r in rows if p in r["ratios"]] for p in PHASES}
    within = {p: sum(1 for r in have[p] if abs(r.value - 1) <= WITHIN) for p in PHASES}
    timed = [r["seconds"] for r in rows if r["seconds"]]
    budget = sum(
        1 for s in timed if sum(a for a, _ in s) / len(s) <= BUDGET[0] * sum(b for _, b in s) / len(s) + BUDGET[1]
    )
    return {"have": {p: len(v) for p, v in have.items()}, "within": within, "budget": (budget, len(timed))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--only", nargs="*")
    p.add_argument("--work")
    p.add_argument("--busy", type=int, default=0)
    p.add_argument("--json")
    args = p.parse_args(argv)
    if not corpus.available():
        print("the corpus is not here (%s): nothing to measure" % corpus.CORPUS)
        return 0
    work = args.work or tempfile.mkdtemp(prefix="truth-")
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for s in spinners:
        s.start()
    rows = []
    try:
        for program in corpus.programs():
            if args.only and program["id"] not in args.only:
                continue
            row = measure(program, work, args.pairs)
            rows.append(row)
            r = row["ratios"]
            said = [str(r["step"]) if "step" in r else "no figure"]
            said += ["%s %s" % (phase, r[phase]) for phase in ("backward", "forward") if phase in r]
            print("%-16s %s  (%s)" % (row["id"], "  ".join(said), "; ".join(row["notes"])), flush=True)
    finally:
        stop.set()
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(r, ratios={k: v._asdict() for k, v in r["ratios"].items()}) for r in rows], f, indent=1)
    print()
    print("\n".join(lines(rows, args.pairs)))
    n = counts(rows)
    print(
        "within 5%%: step %d of %d, forward %d of %d, backward %d of %d; within the time budget: %d of %d"
        % tuple([x for p in PHASES for x in (n["within"][p], n["have"][p])] + list(n["budget"]))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
