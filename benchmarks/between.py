"""Section 10: long trainings: the program's own steps between nnprofile's windows against the same run alone
(10 windows, alternating runs), the light wrappers' cost timed directly, memory and files over 100 windows."""

from __future__ import annotations

import json
import os
import sys

from common import HERE, ROOT, Target, median, met, nnprofile_cmd, paired_ratio, run

LONG = os.path.join(ROOT, "tests", "scripts", "long_train.py")
LONG_ARGS = ["--units", "256", "--batch-size", "64"]
TARGET_BETWEEN = 0.01  # the steps outside the windows within 1% of the unprofiled run's
WINDOW_SCHEDULE = ["--wait", "90", "--warmup", "1", "--active", "9", "--repeat", "10"]


def _steps_outside(view, steps_ns):
    """The program's own step times (from 1) but those of the windows and the step after each (its files are
    written as it closes, inside the program's step)."""
    inside = set()
    for w in view["windows"]:
        calibration = 20 if w["window"] == 1 else 0
        inside.update(range(w["first_step"] - 1, w["last_step"] + calibration + 2))
    return [d for step, d in enumerate(steps_ns, start=1) if step not in inside]


def measure(work, repeat):
    """10 windows across a run of 1,200 steps against the same run unprofiled (alternating): the median step
    outside the windows, as the program times it. Then 100 windows: the memory, and the files per window."""
    plain, between = [], []
    for i in range(max(repeat, 3)):
        report = os.path.join(work, "plain%d.json" % i)
        run([sys.executable, LONG, "--iterations", "1200", *LONG_ARGS, "--report", report], cwd=work)
        with open(report) as f:
            plain.append(median(json.load(f)["steps_ns"][1:]))
        out, report = os.path.join(work, "windows%d" % i), os.path.join(work, "windows%d.json" % i)
        run(
            nnprofile_cmd(
                "run", "-q", "-o", out, *WINDOW_SCHEDULE, LONG, "--iterations", "1200", *LONG_ARGS, "--report", report
            ),
            cwd=work,
        )
        with open(report) as f:
            steps = json.load(f)["steps_ns"]
        with open(os.path.join(out, "result.json")) as f:
            view = json.load(f)
        between.append(median(_steps_outside(view, steps)[1:]))
    out, report = os.path.join(work, "hundred"), os.path.join(work, "hundred.json")
    wall = run(
        nnprofile_cmd(
            "run",
            "-q",
            "-o",
            out,
            "--wait",
            "5",
            "--warmup",
            "0",
            "--active",
            "5",
            "--repeat",
            "0",
            LONG,
            "--iterations",
            "1100",
            *LONG_ARGS,
            "--report",
            report,
        ),
        cwd=work,
    )[0]
    with open(report) as f:
        rss = json.load(f)["rss_kib"]
    with open(os.path.join(out, "result.json")) as f:
        windows = len(json.load(f)["windows"])
    sizes = []
    for entry in os.listdir(out):
        if entry.startswith("window-"):
            folder = os.path.join(out, entry)
            sizes.append(sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)))
    light = json.loads(run([sys.executable, os.path.join(HERE, "light_wrappers.py")])[2].strip().splitlines()[-1])
    return {
        "plain_ms": median(plain) / 1e6,
        "between_ms": median(between) / 1e6,
        "wrappers_us": light["light_us"] - light["plain_us"],
        "calls_us": light["plain_us"],
        "ratio": paired_ratio(between, plain),
        "ratios": [b / p for b, p in zip(between, plain)],
        "windows": windows,
        "rss_first_kib": rss[1] if len(rss) > 1 else rss[0],
        "rss_last_kib": rss[-1],
        "folder_kib": median(sizes) / 1024 if sizes else 0.0,
        "hundred_wall_s": wall,
    }


def targets(w):
    return [
        Target(
            "steps between windows within %d%% of the run alone (10 windows)" % (100 * TARGET_BETWEEN),
            "%s; the light wrappers alone %+.2f µs a step (%.2f%%)"
            % (w["ratio"], w["wrappers_us"], 100 * w["wrappers_us"] / 1e3 / w["plain_ms"]),
            abs(w["ratio"].value - 1) <= TARGET_BETWEEN,
        )
    ]


def lines(w):
    return [
        "## 10. Long trainings: the steps between windows, memory over 100 windows",
        "",
        "`tests/scripts/long_train.py --iterations 1200 --units 256 --batch-size 64`, alternating runs, the "
        "program timing its own steps: alone, and under `nnprofile run %s` (10 windows; the steps of "
        "each window and the one after it, which writes its files, left out)." % " ".join(WINDOW_SCHEDULE),
        "",
        "| | median step |",
        "|---|---|",
        "| alone | %.4f ms |" % w["plain_ms"],
        "| between the windows | %.4f ms |" % w["between_ms"],
        "",
        "Between windows / alone: **%s** (each pair: %s; target within %d%%: %s). The light wrappers alone, "
        "timed directly (`benchmarks/light_wrappers.py`: a step's `data.next()`, `solver.zero_grad()` and "
        "`solver.update()` of %.2f µs): **%+.2f µs a step**, %.2f%% of the step alone."
        % (
            w["ratio"],
            ", ".join("%.3f" % r for r in w["ratios"]),
            100 * TARGET_BETWEEN,
            met(abs(w["ratio"].value - 1) <= TARGET_BETWEEN),
            w["calls_us"],
            w["wrappers_us"],
            100 * w["wrappers_us"] / 1e3 / w["plain_ms"],
        ),
        "",
        "100 windows (`--wait 5 --warmup 0 --active 5 --repeat 0`, %d windows written in %.1f s): resident "
        "memory %.1f MiB after 200 steps, %.1f MiB at the end; each window's folder %.0f KiB."
        % (w["windows"], w["hundred_wall_s"], w["rss_first_kib"] / 1024, w["rss_last_kib"] / 1024, w["folder_kib"]),
        "",
    ]
