"""nnprofile compare: configurations of a project, or saved results, with statistics and intervals."""

from __future__ import annotations

import argparse
import os

from ..base.errors import ProfileError
from ..base.options import ProfileOptions
from ..compare import compare_configurations, compare_results, parse_set
from ..render.comparison import write as write_comparison
from .common import folder, Parser, Printer, claimed, positive_int, said
from .progress import Progress


# The profiling options a comparison hands on to each of its profiles.
PASSED = ("runs", "mode", "synthetic", "inference")
SUMMARY = "compare configurations of a project, or saved results, with confidence intervals"


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="nnprofile compare",
        description="Compare configurations of a project (run each --set, --repeat times, in fresh "
        "processes) or saved results (folders with result.json), with statistics, ratios "
        "with 95% confidence intervals, compare.csv, compare.xlsx and box plots.",
        epilog="Examples: nnprofile compare net.nntxt --set type_config=float --set type_config=half "
        "--repeat 5 -o cmp;  nnprofile compare results/a results/b",
    )
    p.add_argument(
        "targets",
        nargs="+",
        metavar="PROJECT_OR_RESULT",
        help="a project (and parameter files), or two or more result folders",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE[,KEY=VALUE]",
        help="one configuration (keys: type_config, context, batch_size); repeat for each",
    )
    p.add_argument(
        "--repeat",
        type=positive_int,
        default=3,
        help="runs per configuration at least (default 3); more follow until --resolve holds",
    )
    _add_resolve(p)
    p.add_argument("-o", "--outdir", type=folder, help="output folder (default: results/compare_<project>)")
    p.add_argument(
        "--train-epochs",
        type=positive_int,
        metavar="N",
        help="also train each configuration N epochs (NNabla's training loop) and compare "
        "time to train and validation error",
    )
    ProfileOptions.add_arguments(p, PASSED, suffix=" (passed to each profile)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _add_resolve(p: argparse.ArgumentParser) -> None:
    """How many runs a comparison of configurations takes: until its ratios are resolved, within a budget."""
    p.add_argument(
        "--resolve",
        type=_share,
        default=0.05,
        metavar="PERCENT",
        help="configurations: run more rounds until every headline ratio's 95%% interval is within this "
        "of it (default 5%%; 0 for exactly --repeat runs)",
    )
    p.add_argument(
        "--max-runs",
        type=positive_int,
        default=10,
        metavar="N",
        help="the most runs per configuration --resolve may take (default 10)",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="the most seconds --resolve may take in all (default 300)",
    )


def _share(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is no share (examples: 5%%, 0.05)" % text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError("'%s' is out of range (0 to under 100%%)" % text)
    return value


def _is_result(path: str) -> bool:
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, "result.json"))) or (
        os.path.isfile(path) and path.endswith(".json")
    )


def run(args) -> int:
    out = Printer(args.quiet)
    if all(_is_result(t) for t in args.targets):
        if args.set or args.train_epochs:
            raise ProfileError("--set and --train-epochs need a project, not saved results")
        if len(args.targets) < 2:
            raise ProfileError("give two or more result folders to compare")
        comparison = compare_results(*args.targets)
        outdir = args.outdir or os.path.join("results", "compare")
        with claimed(outdir):
            written = write_comparison(outdir, comparison)
    else:
        bad = [t for t in args.targets if os.path.isdir(t)]
        if bad:
            raise ProfileError("%s: a folder without result.json" % bad[0])
        if not args.set:
            raise ProfileError(
                "give the configurations to compare with --set, e.g. --set type_config=float --set type_config=half"
            )
        configs = [parse_set(s) for s in args.set]
        main_file = args.targets[0]
        if not os.path.isfile(main_file):
            raise ProfileError("%s: no such file" % main_file)
        name = os.path.splitext(os.path.basename(main_file))[0]
        outdir = args.outdir or os.path.join("results", "compare_" + name)
        extra = ProfileOptions.from_args(args).argv()
        progress = Progress.for_terminal(args.quiet)
        out.progress = progress
        try:
            with claimed(outdir):  # the runs go into folders of their own inside it
                comparison = compare_configurations(
                    args.targets,
                    configs,
                    args.repeat,
                    outdir,
                    extra,
                    train_epochs=args.train_epochs,
                    progress=out,
                    on_run=progress.run,
                    resolve=args.resolve or None,
                    max_runs=max(args.repeat, args.max_runs),
                    max_seconds=args.max_seconds,
                )
                written = write_comparison(outdir, comparison)
        finally:
            progress.close()
            out.progress = None
    with open(os.path.join(outdir, "compare.log")) as f:
        out.write(f.read())
    said(out, "Written to %s: %s" % (outdir, ", ".join(os.path.relpath(p, outdir) for p in written)))
    return 0
