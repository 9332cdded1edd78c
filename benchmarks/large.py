"""Sections 7 and 8: every stage linear in entries (synthetic profiles), and a large network: the 800-function
LSTM autoencoder against LeNet, its stages, its report in Chromium, and the precision its budget reached."""
from __future__ import annotations

import json
import os
import sys

from common import HERE, LENET, Target, median, met, nnprofile_cmd, paired_ratio, run

TARGET_LARGE_S = 5.0
TARGET_LARGE_RATIO = 2.0
TARGET_STAGE_SHARE = 0.25


def stages(repeat):
    from stages import SIZES, linear, result_json_bytes, time_stages
    times = time_stages(SIZES, repeat)
    return {"sizes": SIZES, "times": times, "linear": {stage: linear(t) for stage, t in times.items()},
            "json_bytes_per_entry": {n: result_json_bytes(n) / n for n in SIZES}}


def _precision(folder):
    """Per section: its title, entries, how they were sampled, and which entries missed their target."""
    import nnprofile
    from nnprofile.analysis import analyze
    out = []
    for a in analyze(nnprofile.load(folder)).sections:
        p = a.precision
        out.append({"title": a.section.title, "entries": len(a.section.entries), "sampling": a.section.sampling,
                    "missed": len(a.missed_target), "whole": p.whole if p else [],
                    "main_layers": p.main_layers if p else 0, "main_layers_rse": p.main_layers_rse if p else None})
    return out


def measure(work, repeat):
    """The LSTM (--synthetic) and LeNet, alternating; one more LSTM run with each stage timed."""
    from nntxt_writer import lstm_autoencoder
    project = os.path.join(work, "lstm800.nntxt")
    with open(project, "w") as f:
        f.write(lstm_autoencoder(steps=53))
    run(nnprofile_cmd(LENET, "--runs", "1", "-q", "-o", os.path.join(work, "large_warm")))  # dataset cache
    lenet, lstm, precision = [], [], {"lenet": [], "lstm": []}
    for i in range(repeat):
        for name, args, into in (("lenet", [LENET], lenet), ("lstm", [project, "--synthetic"], lstm)):
            folder = os.path.join(work, "large_%s%d" % (name, i))
            into.append(run(nnprofile_cmd(*args, "-q", "-o", folder))[0])
            precision[name].append(_precision(folder))
    out = os.path.join(work, "large_stages")
    timed = json.loads(run([sys.executable, os.path.join(HERE, "stage_times.py"), project, "--synthetic", "-q",
                            "-o", out])[2].strip().splitlines()[-1])
    html = json.loads(run([sys.executable, os.path.join(HERE, "html_timing.py"),
                           os.path.join(out, "report.html")])[2].strip().splitlines()[-1])
    with open(os.path.join(out, "result.json")) as f:
        entries = sum(len(s["entries"]) for s in json.load(f)["sections"])
    return {"repeat": repeat, "lenet_s": median(lenet), "lstm_s": median(lstm), "lenet_runs": lenet, "lstm_runs": lstm,
            "ratio": paired_ratio(lstm, lenet), "stages": timed, "html": html, "precision": precision,
            "json_bytes_per_entry": os.path.getsize(os.path.join(out, "result.json")) / entries, "entries": entries}


def _missed(runs):
    """'missed/entries' per section, run by run."""
    return "; ".join(", ".join("%d/%d" % (s["missed"], s["entries"]) for s in sections) for sections in runs)


def targets(large):
    return [Target("the LSTM autoencoder in ≤ %.0f s" % TARGET_LARGE_S, "%.2f s (median; runs %s)" % (
                large["lstm_s"], ", ".join("%.2f" % x for x in large["lstm_runs"])),
                   large["lstm_s"] <= TARGET_LARGE_S),
            Target("the LSTM autoencoder in ≤ %.0fx LeNet's wall time" % TARGET_LARGE_RATIO, str(large["ratio"]),
                   large["ratio"].value <= TARGET_LARGE_RATIO),
            Target("every entry at its precision target or flagged with its figure",
                   "entries short of their target, per section and run: LSTM %s; LeNet %s (each named in its log)"
                   % (_missed(large["precision"]["lstm"]), _missed(large["precision"]["lenet"])), True)]


def stage_lines(figures):
    from stages import table
    out = ["## 7. Every stage linear in entries (synthetic profiles)", "",
           "Each stage on synthetic training sections of 100, 1,000 and 5,000 entries (`benchmarks/stages.py`), "
           "the fastest of several runs. Measuring is the round scheduler and the statistics on a fake clock "
           "with entries that do nothing. Linear: the marginal cost from 1,000 to 5,000 entries at most 1.5 "
           "times that from 100 to 1,000.", ""]
    out += table(figures["times"], figures["sizes"])
    out += ["", "Every stage linear: %s. result.json: %s bytes per entry." % (
        met(all(figures["linear"].values())),
        ", ".join("%.0f at %s entries" % (b, format(n, ",")) for n, b in figures["json_bytes_per_entry"].items())), ""]
    return out


def _section_line(s):
    sampling = s["sampling"]
    rse = ", ".join("%s %s" % (w, "%.1f%%" % (100 * r) if r is not None else "unknown") for w, r in s["whole"])
    main = "%.1f%% (%s)" % (100 * s["main_layers_rse"][1], s["main_layers_rse"][0]) if s["main_layers_rse"] else "n/a"
    return ("- %s, %d entries: %s rounds in %s s (budget %s s), %s; %d entries short of their target; relative "
            "standard error: %s; the %d layers that make up 80%% of the step (unrolled copies summed): at most %s."
            % (s["title"], s["entries"], sampling.get("rounds"), sampling.get("seconds"), sampling.get("budget_seconds"),
               sampling.get("plan"), s["missed"], rse, s["main_layers"], main))


def lines(large):
    wall = large["stages"]["wall"]
    shares = {k: v / wall for k, v in large["stages"]["stages"].items()}
    worst = max((v, k) for k, v in shares.items() if k != "measure")
    out = ["## 8. A large network: an LSTM autoencoder unrolled into 798 functions (`--synthetic`)", "",
           "%d alternating runs of it and of LeNet (`nnprofile projects/lenet/lenet.nntxt`); medians; the ratio is the "
           "geometric mean of the pairs' ratios with its 95%% interval." % large["repeat"], "",
           "| | wall time (runs) | entries short of their precision target, per section and run |", "|---|---|---|",
           "| LeNet | %.2f s (%s) | %s |" % (large["lenet_s"], ", ".join("%.2f" % x for x in large["lenet_runs"]),
                                          _missed(large["precision"]["lenet"])),
           "| LSTM, %d entries in all | %.2f s (%s) | %s |" % (
               large["entries"], large["lstm_s"], ", ".join("%.2f" % x for x in large["lstm_runs"]),
               _missed(large["precision"]["lstm"])), "",
           "LSTM / LeNet: **%s** (target at most %.0fx: %s); LSTM at most %.0f s: %s."
           % (large["ratio"], TARGET_LARGE_RATIO, met(large["ratio"].value <= TARGET_LARGE_RATIO), TARGET_LARGE_S,
              met(large["lstm_s"] <= TARGET_LARGE_S)), "",
           "One more run with each stage timed (%.2f s in all):" % wall, "",
           "| stage | seconds | share |", "|---|---|---|"]
    out += ["| %s | %.2f | %.0f%% |" % (k, v, 100 * shares[k]) for k, v in large["stages"]["stages"].items()]
    out += ["", "No stage but measuring above %.0f%% of the wall time: %s (the largest: %s, %.0f%%)."
            % (100 * TARGET_STAGE_SHARE, met(worst[0] <= TARGET_STAGE_SHARE), worst[1], 100 * worst[0]), "",
            "The last LSTM run of the pairs, section by section:", ""]
    out += [_section_line(s) for s in large["precision"]["lstm"][-1]]
    h = large["html"]
    out += ["", "Its report.html, %d bytes, in headless Chromium: opens in %.2f s (target under 2 s: %s), shows "
            "the first %d of %d layers; filter %.3f s, sort %.3f s (target under 0.5 s: %s), show all %.3f s. "
            "result.json: %.0f bytes per entry." % (
                h["bytes"], h["open_s"], met(h["open_s"] < 2), h["rows_shown"], h["rows_all"], h["filter_s"],
                h["sort_s"], met(max(h["filter_s"], h["sort_s"]) < 0.5), h["show_all_s"],
                large["json_bytes_per_entry"]), ""]
    return out
