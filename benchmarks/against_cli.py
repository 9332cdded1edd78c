"""Section 1: nnprofile against ``nnabla_cli profile`` on LeNet: agreement per entry, per kind and per run, the
wall time, load_dataset both ways, and run-to-run reproducibility."""

from __future__ import annotations

import json
import os
import sys

from common import (
    AGREEMENT_FLOOR_MS,
    Target,
    cv,
    lenet_copy,
    log_entries,
    median,
    met,
    nnprofile_cmd,
    paired_ratio,
    phase,
    run,
)

TARGET_WALL_RATIO = 0.1
TARGET_AGREEMENT = 0.15
TARGET_SINGLE_RUN = 0.8
TARGET_CV = 0.05


def _burst_ms(folder):
    """load_dataset timed as nnabla_cli times it (reads in a row), from the run's result.json."""
    with open(os.path.join(folder, "result.json")) as f:
        for section in json.load(f)["sections"]:
            burst = (section.get("info") or {}).get("load_dataset_burst")
            if burst:
                return burst["mean_ms"]
    return None


def measure(work, repeat, ours_per_cli=2):
    """Alternating rounds: nnabla_cli, ``ours_per_cli`` runs of nnprofile in its scope, one full nnprofile run
    (training and inference). Per-entry medians over the runs for the agreement; each run against its round's
    nnabla_cli run for the single-run figure; every run for the reproducibility."""
    project = lenet_copy(work)
    cli = [sys.executable, "-m", "nnabla.utils.cli.cli"]  # nnabla_cli, wherever scripts are installed
    run(nnprofile_cmd(project, "--runs", "1", "-q", "-o", os.path.join(work, "warm")))  # the dataset cache
    walls_cli, walls_ours, walls_full, cli_runs, our_runs, drift, rounds, bursts = [], [], [], [], [], [], [], []
    for i in range(repeat):
        out_cli = os.path.join(work, "nnabla_cli%d" % i)
        os.makedirs(out_cli)
        wall, _, out, err = run(cli + ["profile", "-c", project, "-o", out_cli], cwd=work)
        walls_cli.append(wall)
        cli_runs.append(log_entries(out + err))
        for k in range(ours_per_cli):
            folder = os.path.join(work, "ours%d_%d" % (i, k))
            wall, _, text, _ = run(nnprofile_cmd(project, "--no-inference", "--zero-weights", "-o", folder))
            walls_ours.append(wall)
            our_runs.append([e for e in log_entries(text, "optimizer") if phase(e[0]) != "setup_function"])
            rounds.append(i)
            drift.append("Drift: the machine's speed drifted" in text)
            bursts.append(_burst_ms(folder))
        walls_full.append(run(nnprofile_cmd(project, "-o", os.path.join(work, "full%d" % i)))[0])
    for ours in our_runs:
        if [phase(label) for label, _ in ours] != [phase(label) for label, _ in cli_runs[0]]:
            raise SystemExit("the two logs list different entries:\n%s\n%s" % (ours, cli_runs[0]))
    return _figures(
        dict(
            cli_runs=cli_runs,
            our_runs=our_runs,
            rounds=rounds,
            bursts=bursts,
            walls_cli=walls_cli,
            walls_ours=walls_ours,
            walls_full=walls_full,
            drift=drift,
        )
    )


def _figures(m):
    cli_runs, our_runs = m["cli_runs"], m["our_runs"]
    pairs = []
    for j, (label, _) in enumerate(our_runs[0]):
        theirs = median([r[j][1] for r in cli_runs])
        if theirs > AGREEMENT_FLOOR_MS:
            pairs.append((label, median([r[j][1] for r in our_runs]) / theirs, j))
    single = []  # each run of ours against its own round's nnabla_cli run
    for ours, i in zip(our_runs, m["rounds"]):
        theirs = cli_runs[i]
        compared = [
            abs(ours[j][1] / theirs[j][1] - 1) <= TARGET_AGREEMENT
            for j in range(len(theirs))
            if theirs[j][1] > AGREEMENT_FLOOR_MS
        ]
        single.append(sum(compared) / len(compared))
    kinds = {}
    for label, r, _ in pairs:
        kinds.setdefault(phase(label), []).append(r)
    load = [j for j, (label, _) in enumerate(our_runs[0]) if phase(label) == "load_dataset"]
    bursts = [b for b in m["bursts"] if b is not None]
    theirs_load = median([r[load[0]][1] for r in m["cli_runs"]]) if load else None
    per_round_cli = m["walls_cli"]
    ours_first = [
        m["walls_ours"][k] for k in range(0, len(m["walls_ours"]), len(m["walls_ours"]) // len(per_round_cli))
    ]
    return {
        "repeat": len(cli_runs),
        "runs": len(our_runs),
        "wall_cli_s": median(per_round_cli),
        "wall_ours_s": median(m["walls_ours"]),
        "wall_ours_full_s": median(m["walls_full"]),
        "wall_full": paired_ratio(m["walls_full"], per_round_cli),
        "wall_scope": paired_ratio(ours_first, per_round_cli),
        "compared": len(pairs),
        "median_ratio": median([r for _, r, _ in pairs]),
        "within": sum(1 for _, r, _ in pairs if abs(r - 1) <= TARGET_AGREEMENT),
        "pairs": [p[:2] for p in pairs],
        "single": single,
        "kinds": {k: median(v) for k, v in kinds.items()},
        "load_cli_ms": theirs_load,
        "load_ours_ms": median([r[load[0]][1] for r in our_runs]) if load else None,
        "load_burst_ms": median(bursts) if bursts else None,
        "reproducibility": {
            "nnprofile": reproducibility(our_runs, m["drift"]),
            "nnabla_cli": reproducibility(cli_runs, [False] * len(cli_runs)),
        },
    }


def reproducibility(runs, flagged):
    """Run-to-run coefficients of variation: of each entry's mean (entries over the floor), over the
    runs that did not flag drift, and of each layer's share of the forward and backward time."""
    labels = [label for label, _ in runs[0]]  # by position: nnabla_cli names two layers of one type alike
    steady = [r for r, f in zip(runs, flagged) if not f] or runs
    entry_cvs = [
        cv([r[j][1] for r in steady])
        for j in range(len(labels))
        if median([r[j][1] for r in runs]) > AGREEMENT_FLOOR_MS
    ]
    layers = [j for j, label in enumerate(labels) if phase(label) in ("forward_function", "backward_function")]
    sums = [sum(r[j][1] for j in layers) for r in runs]
    share_cvs = [cv([r[j][1] / s for r, s in zip(runs, sums)]) for j in layers]
    middle = median(sums)
    off = [abs(s / middle - 1) > 0.10 for s in sums]
    return {
        "runs": len(runs),
        "flagged": sum(flagged),
        "entry_cv": median(entry_cvs),
        "share_cv": median(share_cvs),
        "layer_sums": sums,
        "off_runs": sum(off),
        "off_and_flagged": sum(1 for o, f in zip(off, flagged) if o and f),
    }


def _kind_ok(kind, ratio, c):
    if kind == "load_dataset" and c["load_burst_ms"] and c["load_cli_ms"]:
        return abs(c["load_burst_ms"] / c["load_cli_ms"] - 1) <= TARGET_AGREEMENT
    return abs(ratio - 1) <= TARGET_AGREEMENT


def _kind_figure(kind, ratio, c):
    if kind == "load_dataset" and c["load_burst_ms"] and c["load_cli_ms"]:
        return "load_dataset %.3f (its burst %.3f)" % (ratio, c["load_burst_ms"] / c["load_cli_ms"])
    return "%s %.3f" % (kind, ratio)


def targets(c):
    ours = c["reproducibility"]["nnprofile"]
    kinds_ok = all(_kind_ok(k, r, c) for k, r in c["kinds"].items())
    return [
        Target(
            "wall time, training and inference, ≤ %.2f of nnabla_cli's" % TARGET_WALL_RATIO,
            str(c["wall_full"]),
            c["wall_full"].at_most(TARGET_WALL_RATIO),
        ),
        Target(
            "≥ %d%% of entries within %d%% of nnabla_cli in a single run"
            % (100 * TARGET_SINGLE_RUN, 100 * TARGET_AGREEMENT),
            "%d of %d runs (lowest %.0f%%)"
            % (sum(s >= TARGET_SINGLE_RUN for s in c["single"]), len(c["single"]), 100 * min(c["single"])),
            all(s >= TARGET_SINGLE_RUN for s in c["single"]),
        ),
        Target(
            "every entry kind within %d%% of nnabla_cli in the median over runs (load_dataset: its burst)"
            % (100 * TARGET_AGREEMENT),
            ", ".join(_kind_figure(k, r, c) for k, r in sorted(c["kinds"].items())),
            kinds_ok,
        ),
        Target(
            "run-to-run CV of layer shares ≤ %.2f" % TARGET_CV, "%.3f" % ours["share_cv"], ours["share_cv"] <= TARGET_CV
        ),
    ]


def lines(c):
    out = [
        "## 1. Against `nnabla_cli profile` (projects/lenet, training section)",
        "",
        "%d alternating rounds: nnabla_cli, %d runs of nnprofile in its scope, one full nnprofile run. Wall times "
        "are medians; ratios are the geometric means of each round's ratios, with their 95%% intervals."
        % (c["repeat"], c["runs"] // c["repeat"]),
        "",
        "| | wall time |",
        "|---|---|",
        "| `nnabla_cli profile` | %.1f s |" % c["wall_cli_s"],
        "| `nnprofile --no-inference --zero-weights` (same scope, same weights) | %.1f s |" % c["wall_ours_s"],
        "| `nnprofile` (training and inference) | %.1f s |" % c["wall_ours_full_s"],
        "",
        "Wall-time ratio, training and inference against nnabla_cli's training: **%s** (target at most %.2f: %s); "
        "in nnabla_cli's scope: %s."
        % (c["wall_full"], TARGET_WALL_RATIO, met(c["wall_full"].at_most(TARGET_WALL_RATIO)), c["wall_scope"]),
        "",
        "Agreement of per-entry means, %d entries above %.2f ms in nnabla_cli's log: median ratio "
        "nnprofile/nnabla_cli **%.3f**; %d of %d within ±%d%% in the medians over runs. In single runs (each "
        "against its round's nnabla_cli run): %s within (target at least %d%% in every run: %s)."
        % (
            c["compared"],
            AGREEMENT_FLOOR_MS,
            c["median_ratio"],
            c["within"],
            c["compared"],
            100 * TARGET_AGREEMENT,
            ", ".join("%.0f%%" % (100 * s) for s in c["single"]),
            100 * TARGET_SINGLE_RUN,
            met(all(s >= TARGET_SINGLE_RUN for s in c["single"])),
        ),
        "",
        "| entry kind | median of its entries' ratios | within ±%d%% |" % (100 * TARGET_AGREEMENT),
        "|---|---|---|",
    ]
    out += ["| %s | %.3f | %s |" % (k, r, "yes" if _kind_ok(k, r, c) else "no") for k, r in sorted(c["kinds"].items())]
    if c["load_cli_ms"]:
        burst = c["load_burst_ms"]
        out += [
            "",
            "load_dataset two ways (the log's footer says both): nnabla_cli %.3f ms; nnprofile's entry, a read "
            "as training makes it (waiting for the batch the prefetching iterator loads next) %.3f ms (%.2fx); "
            "nnprofile's burst of reads in a row, as nnabla_cli times it: %s."
            % (
                c["load_cli_ms"],
                c["load_ours_ms"],
                c["load_ours_ms"] / c["load_cli_ms"],
                "%.3f ms (%.2fx)" % (burst, burst / c["load_cli_ms"]) if burst else "not timed",
            ),
        ]
    out += ["", "| entry | nnprofile / nnabla_cli |", "|---|---|"]
    out += ["| %s | %.3f |" % (label, r) for label, r in c["pairs"]]
    ours, theirs = c["reproducibility"]["nnprofile"], c["reproducibility"]["nnabla_cli"]
    out += [
        "",
        "## 1b. Run to run: the same profile again and again (projects/lenet, training section)",
        "",
        "Coefficient of variation across runs of each entry's mean (entries above %.2f ms; for "
        "nnprofile over the runs that did not flag drift) and of each layer's share of the forward "
        "and backward time; medians over entries and layers." % AGREEMENT_FLOOR_MS,
        "",
        "| tool | runs | median CV of entry means | median CV of layer shares | runs flagging drift | "
        "runs >10% off the median run (flagged) | layer sums (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in (("nnprofile", ours), ("nnabla_cli profile", theirs)):
        out.append(
            "| %s | %d | %.3f | %.3f | %s | %d (%s) | %s |"
            % (
                name,
                r["runs"],
                r["entry_cv"],
                r["share_cv"],
                r["flagged"] if name == "nnprofile" else "n/a",
                r["off_runs"],
                r["off_and_flagged"] if name == "nnprofile" else "n/a",
                ", ".join("%.2f" % x for x in r["layer_sums"]),
            )
        )
    out += [
        "",
        "Targets: layer shares ≤ %.2f: %s; entry means ≤ %.2f over unflagged runs: %s; every run "
        "more than 10%% off the median run flags drift: %s."
        % (
            TARGET_CV,
            met(ours["share_cv"] <= TARGET_CV),
            TARGET_CV,
            met(ours["entry_cv"] <= TARGET_CV),
            met(ours["off_runs"] == ours["off_and_flagged"]),
        ),
        "",
    ]
    return out
