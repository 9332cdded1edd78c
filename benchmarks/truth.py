"""nnprofile's step against the program's own, for the real-program corpus: each program run alone with the
instrument of tests/truth (its solvers' updates as they returned, no part of nnprofile), then under
``nnprofile run``, in alternating pairs; the ratio of nnprofile's mean step to the program's over the same steps,
with its interval over the pairs.

    python benchmarks/truth.py [--pairs N] [--only ID ...] [--work DIR] [--busy N]

``--busy N`` runs N spinning processes of the benchmark's own beside every run (a busy machine: a laptop, a CI
runner). Needs ../shared/corpus (or NNPROFILE_PROGRAMS).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import corpus  # noqa: E402
import truth  # noqa: E402


def _spin(stop):  # a process of the benchmark's own that keeps a core busy
    x = 0
    while not stop.is_set():
        x += 1


def measure(program: dict, work: str, pairs: int) -> dict:
    prepared = corpus.prepare(program, work)
    facts = program["facts"]
    ratios, notes, phases = [], [], {}
    for k in range(pairs):
        path = os.path.join(prepared.work, "truth-%d.json" % k)
        env = truth.environment(prepared.environment(), path, prepared.places["src"])
        runner = corpus._runner()
        args = truth.command(runner.script(program)) + list(program["argv"])
        subprocess.run(args, cwd=prepared.places["cwd"], env=env, capture_output=True, timeout=corpus.TIMEOUT)
        measured = truth.load(path, facts["solvers"])
        out = os.path.join(prepared.work, "out-%d" % k)
        run = prepared.profiled(out)
        if run.code != 0 or measured is None:
            notes.append("pair %d: %s" % (k, "no result" if run.code else "no truth"))
            continue
        got = truth.figures(out)
        first, last = got["steps"]
        # (the step is the lean steps' where any ran: the same steps of the program alone)
        want = measured.mean_over(got["lean"]) if got["lean"] else measured.mean_ms(first, last) if first else None
        if want:
            ratios.append(got["step"] / want)
            notes.append("step %.3f / %.3f ms" % (got["step"], want))
            for phase in ("forward", "backward"):
                have = measured.phase_ms(first, last, phase)
                if have and got[phase]:
                    phases.setdefault(phase, []).append(got[phase] / have)
                    notes.append("%s %.3f / %.3f" % (phase, got[phase], have))
    return {"id": program["id"], "ratios": ratios, "phases": phases, "notes": notes}


def interval(ratios):
    """The mean ratio and its 95% interval over the pairs (Student's t on the logs)."""
    if not ratios:
        return None, None, None
    logs = [math.log(r) for r in ratios]
    m = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(m), None, None
    half = (
        2.776 * statistics.stdev(logs) / math.sqrt(len(logs))
        if len(logs) <= 5
        else 2.0 * statistics.stdev(logs) / math.sqrt(len(logs))
    )
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def _said(ratio, low, high) -> str:
    if not ratio:
        return "no figure"
    return "%.3f [%s, %s]" % (ratio, "%.3f" % low if low else "-", "%.3f" % high if high else "-")


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
            ratio, low, high = interval(row["ratios"])
            rows.append(dict(row, ratio=ratio, low=low, high=high))
            said = [_said(ratio, low, high)] + [
                "%s %s" % (phase, _said(*interval(r))) for phase, r in sorted(row["phases"].items())
            ]
            print("%-16s %s  (%s)" % (row["id"], "  ".join(said), "; ".join(row["notes"])), flush=True)
    finally:
        stop.set()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    within = sum(1 for r in rows if r["ratio"] and abs(r["ratio"] - 1) <= 0.05)
    print("within 5%%: %d of %d programs" % (within, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
