"""nnprofile's step against the program's own, for the real-program corpus: each program run alone with the
instrument of tests/truth (its solvers' updates as they returned, no part of nnprofile), then under
``nnprofile run``, in alternating pairs; the ratio of nnprofile's mean step to the program's over the same steps,
with its 95% interval over the pairs (``common.paired_ratio``: Student's t on the pairs' log-ratios).

    python benchmarks/truth.py [--pairs N] [--only ID ...] [--work DIR] [--busy N]

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
    over the same steps, kept as (nnprofile's, the program's) per figure: the step, each phase's passes a step."""
    prepared = corpus.prepare(program, work)
    facts = program["facts"]
    pairs_of, notes = {}, []  # figure -> [(nnprofile's, the program's)]
    for k in range(pairs):
        path = os.path.join(prepared.work, "truth-%d.json" % k)
        prepared.noted(path)
        measured = truth.load(path, facts["solvers"])
        out = os.path.join(prepared.work, "out-%d" % k)
        run = prepared.profiled(out)
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
    return {"id": program["id"], "ratios": ratios, "notes": notes}


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
    within = sum(1 for r in rows if "step" in r["ratios"] and r["ratios"]["step"].within(0.05))
    print("within 5%% (the whole interval): %d of %d programs" % (within, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
