"""nnprofile check BASELINE NEW: exit 1 when something got slower, 3 when it cannot tell (a regression gate for CI)."""

from __future__ import annotations

import argparse
import os

from ..api.gate import gate
from ..base.errors import ProfileError
from .common import folder as folder_name, Parser, Printer, said

EXIT_ERROR = 2  # any error, internal ones included, and a wrong command line: never confused with "slower"


def _threshold(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a threshold (examples: 10%%, 0.1)" % text)
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError("'%s' is out of range" % text)
    return value


SUMMARY = "exit 1 when a result got slower than its baseline, 3 when it cannot tell: a regression gate for CI"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile check",
        description="Compare two saved results (folders or result.json) and exit 1 when something got "
        "slower: ratio above 1 + threshold and its 95% confidence interval above 1. Exit 0 when "
        "nothing did; 3 when a figure could not be judged (it looks slower but its interval holds no "
        "change, or the machine ran slower than its slow spells): a CI job may run again, with the "
        "repeats the output names; 2 on any error or a wrong command line. Figures are over the samples "
        "other work on the machine did not hold up, on both sides.",
        epilog="Examples: nnprofile check results/main results/branch --threshold 10%; nnprofile check "
        "main/lenet.nntxt branch/lenet.nntxt --repeat 5 -o results/check; nnprofile check main/train.py "
        "branch/train.py --repeat 3",
    )
    p.add_argument("baseline", metavar="BASELINE")
    p.add_argument("new", metavar="NEW")
    p.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        help="BASELINE and NEW are NNC projects or Python programs (.py, run as nnprofile run runs them): "
        "profile each N times in fresh processes, in turns (baseline, new, baseline, ...), and compare the "
        "pooled runs (the run-to-run spread then measured, not assumed)",
    )
    p.add_argument("-o", "--outdir", type=folder_name, help="with --repeat: where the runs go (default results/check)")
    p.add_argument("--threshold", type=_threshold, default=0.10, help="how much slower counts (default 10%%)")
    p.add_argument(
        "--layers",
        action="store_true",
        help="also test every layer (forward + backward), Holm-corrected for their number",
    )
    p.add_argument(
        "--strict-order",
        action="store_true",
        help="fail when the ordered list of layers changed (added, removed, reordered, another class)",
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="judge an incomplete or interrupted result too (by default it cannot be judged: exit 3)",
    )
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (for a pull-request comment)")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run(args) -> int:
    from ..render import verdicts

    result = gate(
        args.baseline,
        args.new,
        threshold=args.threshold,
        layers=args.layers,
        strict_order=args.strict_order,
        repeat=args.repeat,
        outdir=args.outdir,
        progress=Printer(args.quiet),
        allow_incomplete=args.allow_incomplete,
    )
    files = []
    for path, render in ((args.markdown, verdicts.markdown), (args.junit, verdicts.junit)):
        if path:
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(render(result))
            except OSError as e:
                raise ProfileError("cannot write %s (%s)" % (path, e.strerror or e))
            files.append(path)
    out = Printer(args.quiet)
    out.write(verdicts.text(result))
    folders = sorted({os.path.dirname(os.path.abspath(p)) for p in files})
    for folder in folders:  # (the files of --markdown and --junit, by folder)
        names = [os.path.basename(p) for p in files if os.path.dirname(os.path.abspath(p)) == folder]
        said(out, "Written to %s: %s" % (os.path.relpath(folder), ", ".join(names)))
    return result.exit_code
