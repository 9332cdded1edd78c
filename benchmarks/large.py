"""Sections 7 and 8: every stage linear in entries (synthetic profiles), and large real projects as a user runs
them: NNC's LSTM auto encoder and ``12_residual_learning`` against LeNet, and a generated 798-function LSTM with its
stages, its report in Chromium, and the precision each budget reached."""

from __future__ import annotations

import json
import os
import sys

from common import HERE, LENET, ROOT, Target, median, met, nnprofile_cmd, paired_ratio, run

TARGET_LARGE_S = 5.0
TARGET_LARGE_RATIO = 2.0
TARGET_STAGE_SHARE = 0.25


def stages(repeat):
    from stages import SIZES, linear, result_json_bytes, time_stages

    times = time_stages(SIZES, repeat)
    return {
        "sizes": SIZES,
        "times": times,
        "linear": {stage: linear(t) for stage, t in times.items()},
        "json_bytes_per_entry": {n: result_json_bytes(n) / n for n in SIZES},
    }


def _precision(folder):
    """Per section: its title, entries, how they were sampled, and which entries missed their target."""
    import nnprofile
    from nnprofile.analysis import analyze

    out = []
    for a in analyze(nnprofile.load(folder)).sections:
        p = a.precision
        out.append(
            {
                "title": a.section.title,
                "entries": len(a.section.entries),
                "sampling": a.section.sampling,
                "missed": len(a.missed_target),
                "whole": p.whole if p else [],
                "main_layers": p.main_layers if p else 0,
                "main_layers_rse": p.main_layers_rse if p else None,
            }
        )
    return out


TARGET_RESIDUAL_S = 10.0
RESIDUAL = "12_residual_learning.20180720.nntxt"


def _samples_folder():
    """NNC's sample projects (``../shared/nnc-samples``, or NNPROFILE_CORPUS), where present."""
    folder = os.environ.get("NNPROFILE_CORPUS") or os.path.join(os.path.dirname(ROOT), "shared", "nnc-samples")
    return folder if os.path.isfile(os.path.join(folder, RESIDUAL)) else None


def _projects(work):
    """The projects profiled as a user runs them (the whole process), by name: LeNet; NNC's own LSTM auto encoder
    sample as NNC lays it out (``tests/nntxt_rnn.py``); ``12_residual_learning`` from NNC's samples, where present;
    and the generated 798-function LSTM whose stages are timed."""
    from nntxt_rnn import nnc_lstm_autoencoder
    from nntxt_writer import lstm_autoencoder

    out = {"lenet": [LENET]}
    for name, text in (("lstm_ae", nnc_lstm_autoencoder()), ("lstm", lstm_autoencoder(steps=53))):
        path = os.path.join(work, "%s.nntxt" % name)
        with open(path, "w") as f:
            f.write(text)
        out[name] = [path, "--synthetic"]
    samples = _samples_folder()
    if samples:
        out["residual"] = [os.path.join(samples, RESIDUAL), "--synthetic"]
    return out


def measure(work, repeat):
    """Each project, in turns (a slow spell hits all alike); one more run of the generated LSTM with each stage
    timed."""
    run(nnprofile_cmd(LENET, "--runs", "1", "-q", "-o", os.path.join(work, "large_warm")))  # dataset cache
    projects = _projects(work)
    walls = {name: [] for name in projects}
    precision = {name: [] for name in projects}
    for i in range(repeat):
        for name, args in projects.items():
            folder = os.path.join(work, "large_%s%d" % (name, i))
            walls[name].append(run(nnprofile_cmd(*args, "-q", "-o", folder))[0])
            precision[name].append(_precision(folder))
    out = os.path.join(work, "large_stages")
    timed = json.loads(
        run(
            [sys.executable, os.path.join(HERE, "stage_times.py"), projects["lstm"][0], "--synthetic", "-q", "-o", out]
        )[2]
        .strip()
        .splitlines()[-1]
    )
    html = json.loads(
        run([sys.executable, os.path.join(HERE, "html_timing.py"), os.path.join(out, "report.html")])[2]
        .strip()
        .splitlines()[-1]
    )
    with open(os.path.join(out, "result.json")) as f:
        entries = sum(len(s["entries"]) for s in json.load(f)["sections"])
    return {
        "repeat": repeat,
        "walls": walls,
        "seconds": {k: median(v) for k, v in walls.items()},
        "ratios": {k: paired_ratio(v, walls["lenet"]) for k, v in walls.items() if k != "lenet"},
        "lenet_s": median(walls["lenet"]),
        "lstm_s": median(walls["lstm"]),
        "lenet_runs": walls["lenet"],
        "lstm_runs": walls["lstm"],
        "ratio": paired_ratio(walls["lstm"], walls["lenet"]),
        "stages": timed,
        "html": html,
        "precision": precision,
        "json_bytes_per_entry": os.path.getsize(os.path.join(out, "result.json")) / entries,
        "entries": entries,
    }


def _missed(runs):
    """'missed/entries' per section, run by run."""
    return "; ".join(", ".join("%d/%d" % (s["missed"], s["entries"]) for s in sections) for sections in runs)


def targets(large):
    sec, ratios = large["seconds"], large["ratios"]

    def runs(name):
        return "%.2f s (median; runs %s)" % (sec[name], ", ".join("%.2f" % x for x in large["walls"][name]))

    out = [
        Target(
            "NNC's LSTM auto encoder in ≤ %.0f s" % TARGET_LARGE_S, runs("lstm_ae"), sec["lstm_ae"] <= TARGET_LARGE_S
        ),
        Target(
            "NNC's LSTM auto encoder in ≤ %.0fx LeNet's wall time" % TARGET_LARGE_RATIO,
            str(ratios["lstm_ae"]),
            ratios["lstm_ae"].value <= TARGET_LARGE_RATIO,
        ),
    ]
    if "residual" in sec:
        out.append(
            Target(
                "12_residual_learning in ≤ %.0f s" % TARGET_RESIDUAL_S,
                runs("residual"),
                sec["residual"] <= TARGET_RESIDUAL_S,
            )
        )
    out += [
        Target(
            "the generated 798-function LSTM in ≤ %.0fx LeNet's wall time" % TARGET_LARGE_RATIO,
            str(ratios["lstm"]),
            ratios["lstm"].value <= TARGET_LARGE_RATIO,
        ),
        Target(
            "every entry at its precision target or flagged with its figure",
            "entries short of their target, per section and run: %s (each named in its log)"
            % "; ".join("%s %s" % (k, _missed(v)) for k, v in large["precision"].items()),
            True,
        ),
    ]
    return out


def stage_lines(figures):
    from stages import table

    out = [
        "## 7. Every stage linear in entries (synthetic profiles)",
        "",
        "Each stage on synthetic training sections of 100, 1,000 and 5,000 entries (`benchmarks/stages.py`), "
        "the fastest of several runs. Measuring is the round scheduler and the statistics on a fake clock "
        "with entries that do nothing. Linear: the marginal cost from 1,000 to 5,000 entries at most 1.5 "
        "times that from 100 to 1,000.",
        "",
    ]
    out += table(figures["times"], figures["sizes"])
    out += [
        "",
        "Every stage linear: %s. result.json: %s bytes per entry."
        % (
            met(all(figures["linear"].values())),
            ", ".join("%.0f at %s entries" % (b, format(n, ",")) for n, b in figures["json_bytes_per_entry"].items()),
        ),
        "",
    ]
    return out


def _section_line(s):
    sampling = s["sampling"]
    rse = ", ".join("%s %s" % (w, "%.1f%%" % (100 * r) if r is not None else "unknown") for w, r in s["whole"])
    main = "%.1f%% (%s)" % (100 * s["main_layers_rse"][1], s["main_layers_rse"][0]) if s["main_layers_rse"] else "n/a"
    return (
        "- %s, %d entries: %s rounds in %s s (budget %s s), %s; %d entries short of their target; relative "
        "standard error: %s; the %d layers that make up 80%% of the step (unrolled copies summed): at most %s."
        % (
            s["title"],
            s["entries"],
            sampling.get("rounds"),
            sampling.get("seconds"),
            sampling.get("budget_seconds"),
            sampling.get("plan"),
            s["missed"],
            rse,
            s["main_layers"],
            main,
        )
    )


def lines(large):
    wall = large["stages"]["wall"]
    shares = {k: v / wall for k, v in large["stages"]["stages"].items()}
    worst = max((v, k) for k, v in shares.items() if k != "measure")
    names = {
        "lenet": "LeNet (`projects/lenet/lenet.nntxt`)",
        "lstm_ae": "NNC's LSTM auto encoder sample (`tests/nntxt_rnn.py`, `--synthetic`)",
        "residual": "`12_residual_learning` (NNC's sample, `--synthetic`)",
        "lstm": "the generated LSTM, %d entries in all (`--synthetic`)" % large["entries"],
    }
    out = [
        "## 8. Large real projects, as a user runs them (the whole process)",
        "",
        "%d runs of each, in turns; medians; each ratio to LeNet is the geometric mean of the turns' ratios with "
        "its 95%% interval." % large["repeat"],
        "",
        "| project | wall time (runs) | / LeNet | entries short of their precision target, per section and run |",
        "|---|---|---|---|",
    ]
    for name, walls in large["walls"].items():
        ratio = str(large["ratios"][name]) if name in large["ratios"] else ""
        out.append(
            "| %s | %.2f s (%s) | %s | %s |"
            % (
                names[name],
                large["seconds"][name],
                ", ".join("%.2f" % x for x in walls),
                ratio,
                _missed(large["precision"][name]),
            )
        )
    out += [
        "",
        "NNC's LSTM auto encoder: at most %.0f s: %s; at most %.0fx LeNet: %s."
        % (
            TARGET_LARGE_S,
            met(large["seconds"]["lstm_ae"] <= TARGET_LARGE_S),
            TARGET_LARGE_RATIO,
            met(large["ratios"]["lstm_ae"].value <= TARGET_LARGE_RATIO),
        ),
    ]
    if "residual" in large["seconds"]:
        out += [
            "`12_residual_learning`: at most %.0f s: %s."
            % (TARGET_RESIDUAL_S, met(large["seconds"]["residual"] <= TARGET_RESIDUAL_S))
        ]
    out += [
        "",
        "One more run of the generated LSTM with each stage timed (%.2f s in all):" % wall,
        "",
        "| stage | seconds | share |",
        "|---|---|---|",
    ]
    out += ["| %s | %.2f | %.0f%% |" % (k, v, 100 * shares[k]) for k, v in large["stages"]["stages"].items()]
    out += [
        "",
        "No stage but measuring above %.0f%% of the wall time: %s (the largest: %s, %.0f%%)."
        % (100 * TARGET_STAGE_SHARE, met(worst[0] <= TARGET_STAGE_SHARE), worst[1], 100 * worst[0]),
    ]
    for name in ("lstm_ae", "residual", "lstm"):
        if name in large["precision"]:
            out += ["", "The last run of %s, section by section:" % names[name], ""]
            out += [_section_line(s) for s in large["precision"][name][-1]]
    h = large["html"]
    out += [
        "",
        "Its report.html, %d bytes, in headless Chromium: opens in %.2f s (target under 2 s: %s), shows "
        "the first %d of %d layers; filter %.3f s, sort %.3f s (target under 0.5 s: %s), show all %.3f s. "
        "result.json: %.0f bytes per entry."
        % (
            h["bytes"],
            h["open_s"],
            met(h["open_s"] < 2),
            h["rows_shown"],
            h["rows_all"],
            h["filter_s"],
            h["sort_s"],
            met(max(h["filter_s"], h["sort_s"]) < 0.5),
            h["show_all_s"],
            large["json_bytes_per_entry"],
        ),
        "",
    ]
    return out
