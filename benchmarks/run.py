"""nnprofile's benchmarks: each of the issues' figures as a ratio with its interval, and whether its target is met.

    python benchmarks/run.py [--quick] [--only PART ...]     (or: make bench)

Prints the targets first, then each part's tables, and writes benchmarks/results.md. Every figure is
measured in this run, on this machine; comparisons are ratios of figures taken in the same run, in
alternating pairs, since absolute times on a shared machine drift (common.py says how the intervals
are made).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import against_cli  # noqa: E402
import between  # noqa: E402
import busy  # noqa: E402
import gate  # noqa: E402
import large  # noqa: E402
import programs  # noqa: E402
import project_costs  # noqa: E402
from common import Target, target_lines  # noqa: E402

PARTS = ("truth", "cli", "costs", "programs", "gate", "large", "ranks", "windows", "busy")


def _truth(work, quick):
    import importlib.util

    # (benchmarks/truth.py imports tests/truth.py as ``truth``: it is loaded here under a name of its own)
    spec = importlib.util.spec_from_file_location("bench_truth", os.path.join(HERE, "truth.py"))
    truth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(truth)
    corpus = truth.corpus
    if not corpus.available():
        return ["## The corpus against the program alone: not measured (no %s here)" % corpus.CORPUS, ""], []
    pairs = 1 if quick else 3
    rows = [truth.measure(program, work, pairs) for program in corpus.programs()]
    n = truth.counts(rows)
    targets = [
        Target(
            "every corpus program's %s within 5%% of the program alone (its ratio)" % figure,
            "%d of %d" % (n["within"][figure], n["have"][figure]),
            n["within"][figure] == n["have"][figure] == len(rows),
        )
        for figure in truth.PHASES
    ]
    targets.append(
        Target(
            "every profiled run within %.1fx + %g s of the program alone" % truth.BUDGET,
            "%d of %d" % n["budget"],
            n["budget"][0] == n["budget"][1] == len(rows),
        )
    )
    return truth.lines(rows, pairs), targets


def _cli(work, quick):
    figures = against_cli.measure(work, 1 if quick else 3, ours_per_cli=1 if quick else 2)
    return against_cli.lines(figures), against_cli.targets(figures)


def _costs(work, quick):
    hooks = project_costs.hooks(work)
    scaling = project_costs.scaling(work, (10, 50, 100) if quick else (10, 25, 50, 100, 150, 200))
    modes = project_costs.modes(work, 1 if quick else 3)
    return project_costs.lines(hooks, scaling, modes), project_costs.targets(hooks, scaling)


def _programs(work, quick):
    figures = programs.measure(work, least=2 if quick else 5, most=2 if quick else 10)
    return programs.lines(figures), programs.targets(figures)


def _gate(work, quick):
    figures = gate.measure(work, 5 if quick else 20)
    return gate.lines(figures), gate.targets(figures)


def _large(work, quick):
    stages = large.stages(5)
    figures = large.measure(work, 1 if quick else 3)
    return large.stage_lines(stages) + large.lines(figures), large.targets(figures)


def _ranks(work, quick):
    from ranks import SIZES, STEPS, lines, time_merges

    best = time_merges(SIZES, 3)
    return (
        [
            "## 9. Merging the ranks of a distributed run (`nnprofile merge`)",
            "",
            "Synthetic rank results shaped as a recorded LeNet's under mpirun (10 layers, %d steps, its timeline), "
            "merged as `nnprofile merge` does (load, pool, align, analyse, render, write); the fastest of 3 runs per "
            "world size, interleaved (`benchmarks/ranks.py`)." % STEPS,
            "",
        ]
        + lines(best)
        + [""],
        [],
    )


def _busy(work, quick):
    figures = busy.measure(work)
    return busy.lines(figures), busy.targets(figures)


def _windows(work, quick):
    figures = between.measure(work, 1 if quick else 3)
    return between.lines(figures), between.targets(figures)


STEPS = {
    "truth": ("the corpus's step and passes against the program alone (tests/truth)", _truth),
    "cli": ("nnprofile against nnabla_cli profile on projects/lenet", _cli),
    "costs": ("the hooks in graph mode, scaling with layers, isolated against graph mode", _costs),
    "programs": ("programs recorded by nnprofile run, each against itself alone", _programs),
    "gate": ("the regression gate: A/A pairs and a wider layer", _gate),
    "large": ("every stage on synthetic profiles; large real projects against LeNet", _large),
    "ranks": ("merging 16 and 128 synthetic ranks", _ranks),
    "windows": ("long trainings: 10 windows against the run alone, 100 windows", _windows),
    "busy": ("quiet against busy: a program and a project beside spinning processes; the gate", _busy),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    parser.add_argument(
        "--only", nargs="+", choices=PARTS, metavar="PART", help="run only these parts: %s" % ", ".join(PARTS)
    )
    parser.add_argument(
        "--output",
        help="where to write the results (default: benchmarks/results.md; with --only, nowhere unless given)",
    )
    args = parser.parse_args(argv)
    import nnabla
    import nnprofile

    parts = args.only or PARTS
    output = args.output or (None if args.only else os.path.join(HERE, "results.md"))
    body, targets = [], []
    work = tempfile.mkdtemp(prefix="nnprofile-bench-")
    try:
        for n, part in enumerate(parts, start=1):
            title, step = STEPS[part]
            print("%d/%d %s ..." % (n, len(parts), title), flush=True)
            try:
                lines, met = step(work, args.quick)
            except (Exception, SystemExit) as e:  # one part failing leaves the others' figures standing
                print("   %s failed: %s" % (part, str(e).splitlines()[0] if str(e) else type(e).__name__), flush=True)
                lines, met = (
                    ["## %s: failed" % title, "", "```", str(e)[-3000:], "```", ""],
                    [Target("the part '%s' ran" % part, type(e).__name__, False)],
                )
            body += lines
            targets += met
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = [
        "# nnprofile benchmarks",
        "",
        "Measured %s on %s (%s, %d cores, Python %s), nnabla %s, nnprofile %s. Produced by `make bench`%s; every "
        "figure comes from this one run. Ratios are geometric means over alternating pairs, with 95%% intervals "
        "in brackets."
        % (
            datetime.datetime.now().astimezone().isoformat(timespec="minutes"),
            platform.node(),
            platform.machine(),
            os.cpu_count(),
            platform.python_version(),
            nnabla.__version__,
            nnprofile.__version__,
            " --only " + " ".join(parts) if args.only else "",
        ),
        "",
        "## Targets",
        "",
        "%d of %d met." % (sum(t.met for t in targets), len(targets)),
        "",
    ]
    text = "\n".join(head + target_lines(targets) + [""] + body) + "\n"
    print()
    print(text)
    if output:
        with open(output, "w") as f:
            f.write(text)
        print("written to %s" % os.path.relpath(output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
