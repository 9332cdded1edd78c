"""Command line: parse, run, and turn every failure into one line and an exit code."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from typing import List, Optional

from . import __version__
from .errors import ProfileError

EXIT_INTERNAL = 1


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a whole number" % text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1, not %d" % value)
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be above 0, not %s" % text)
    return value


def profile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile",
        description="Profile an NNabla / Neural Network Console project layer by layer, "
                    "as NNC's Profile command does, and write profile.log, profile.csv, "
                    "profile_detail.csv, profile.xlsx and result.json.",
        epilog="Other commands: 'nnprofile report OUTDIR' re-renders a saved run; "
               "'nnprofile compare ...' compares configurations or saved runs (see --help of each).")
    p.add_argument("files", nargs="+", metavar="PROJECT",
                   help="the project (.nntxt, .nnp) and optionally parameter files (.h5, .protobuf)")
    p.add_argument("-o", "--outdir", help="output folder (default: results/<project name>)")
    p.add_argument("--context", choices=("cpu", "cuda", "cudnn"),
                   help="run on this backend instead of the project's global_config")
    p.add_argument("--type-config", choices=("float", "half"),
                   help="run in this precision instead of the project's")
    p.add_argument("--batch-size", type=_positive_int, help="override the networks' batch size")
    p.add_argument("--synthetic", action="store_true",
                   help="feed generated data of the declared shapes instead of reading the datasets")
    p.add_argument("--zero-weights", action="store_true",
                   help="zero every weight and bias first, as nnabla_cli profile does "
                        "(only to compare with it: zeros make some layers unrealistically fast)")
    p.add_argument("--mode", choices=("isolated", "graph"), default="isolated",
                   help="isolated: each function re-run on its own, as NNC measures (default); "
                        "graph: each function timed inside real forward and backward passes")
    p.add_argument("--runs", type=_positive_int,
                   help="a fixed number of timed runs per entry (default: adaptive)")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs before timing (default 1)")
    p.add_argument("--target-rse", type=_positive_float, default=0.02,
                   help="adaptive sampling stops at this relative standard error (default 0.02)")
    p.add_argument("--min-runs", type=_positive_int, default=3, help="adaptive: at least this many runs (default 3)")
    p.add_argument("--max-seconds-per-entry", type=_positive_float, default=0.25,
                   help="adaptive: stop an entry after this much timed work (default 0.25)")
    p.add_argument("--no-layers", action="store_true",
                   help="only the whole-step entries (data, forward_all, backward_all, update, ...): "
                        "no per-layer setup, forward and backward entries")
    p.add_argument("--optimizer", action="append", metavar="NAME", help="profile only this optimizer")
    p.add_argument("--executor", action="append", metavar="NAME", help="profile only this executor")
    p.add_argument("--no-training", action="store_true", help="skip the optimizers")
    p.add_argument("--no-inference", action="store_true", help="skip the executors")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks and NNabla's own log")
    p.add_argument("--version", action="version", version="nnprofile %s" % __version__)
    return p


def _prepare_outdir(outdir: str) -> None:
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ProfileError("output folder %s is a file" % outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise ProfileError("cannot create output folder %s (%s)" % (outdir, e.strerror or e))
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise ProfileError("output folder %s is not writable" % outdir)


def _printer(quiet: bool):
    """Where progress lines go: stdout as they come, or nowhere with --quiet."""
    return (lambda line: None) if quiet else (lambda line: print(line, flush=True))


def run_profile(args) -> int:
    from .project import load_project, zero_weights
    from .render import log, write_all
    from .result import Profile
    from .session import Selection, header, plan, run
    from .timing import Sampling, Timer

    main_file = args.files[0]
    name = os.path.splitext(os.path.basename(main_file))[0]
    outdir = args.outdir or os.path.join("results", name)
    sampling = Sampling(runs=args.runs, warmup=max(0, args.warmup), target_rse=args.target_rse,
                        min_runs=args.min_runs, max_seconds=args.max_seconds_per_entry)
    _prepare_outdir(outdir)
    project = load_project(args.files, backend=args.context, type_config=args.type_config,
                           batch_size=args.batch_size)
    if args.zero_weights:
        zero_weights()
    selection = Selection(optimizers=args.optimizer, executors=args.executor,
                          training=not args.no_training, inference=not args.no_inference)
    sections = plan(project, selection)

    timer = Timer(sampling, sync=project.run_context.synchronize)
    clock = timer.calibrate()
    profile = Profile(header=header(project, sampling, args.mode), notes=list(project.run_context.notes))
    profile.header.update(clock=clock.name, clock_resolution_ns=clock.resolution_ns,
                          timing_overhead_ns=round(clock.overhead_ns, 1))
    if args.mode == "graph":
        from .profiler import calibrate_hooks
        profile.header["hook_overhead_ns"] = round(calibrate_hooks(timer), 1)
    profile.header["data"] = "synthetic" if args.synthetic else "datasets"
    if args.no_layers:
        profile.notes.append("per-layer entries were skipped (--no-layers)")
    if args.zero_weights:
        profile.notes.append("weights and biases were zeroed (--zero-weights), as nnabla_cli profile does")
    if args.synthetic:
        profile.notes.append("the data was synthetic (--synthetic): random batches of the declared "
                             "shapes; load_dataset does not measure reading a dataset")
    out = _printer(args.quiet)
    for line in log.header_lines(profile):
        out(line)
    try:
        run(project, sections, timer, cache_root=os.path.join(outdir, "cache"), profile=profile,
            on_section=lambda s: out(log.section_line(s)),
            on_entry=lambda s, e: out(log.entry_line(e)), synthetic=args.synthetic, mode=args.mode,
            layers=not args.no_layers,
            on_section_end=lambda s: [out(line) for line in log.section_footer(profile, s)])
    except ProfileError as e:
        if not any(s.entries for s in profile.sections):
            raise
        raise type(e)("%s (what was measured is in %s, marked incomplete)" % (e, outdir)) from e
    finally:
        if profile.sections:
            for line in log.footer_lines(profile):
                out(line)
        if any(s.entries for s in profile.sections):
            write_all(profile, outdir)
    return 0


def report_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile report",
        description="Re-render profile.log, the CSV files and profile.xlsx from a saved result.json, "
                    "without profiling again.")
    p.add_argument("result", metavar="OUTDIR", help="a folder with result.json (or the file itself)")
    p.add_argument("-o", "--outdir", help="write the files here (default: next to result.json)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the log")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def run_report(args) -> int:
    from . import result_file
    from .render import log, write_all
    profile = result_file.load(args.result)
    source = args.result if os.path.isdir(args.result) else os.path.dirname(os.path.abspath(args.result))
    outdir = args.outdir or source
    _prepare_outdir(outdir)
    write_all(profile, outdir, save_result=os.path.abspath(outdir) != os.path.abspath(source))
    if not args.quiet:
        sys.stdout.write(log.render(profile))
    return 0


def compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="nnprofile compare",
        description="Compare configurations of a project (run each --set, --repeat times, in fresh "
                    "processes) or saved results (folders with result.json), with statistics, ratios "
                    "with 95%% confidence intervals, compare.csv, compare.xlsx and box plots.",
        epilog="Examples: nnprofile compare net.nntxt --set type_config=float --set type_config=half "
               "--repeat 5 -o cmp;  nnprofile compare results/a results/b")
    p.add_argument("targets", nargs="+", metavar="PROJECT_OR_RESULT",
                   help="a project (and parameter files), or two or more result folders")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="one configuration (keys: type_config, context, batch_size); repeat for each")
    p.add_argument("--repeat", type=_positive_int, default=3, help="runs per configuration (default 3)")
    p.add_argument("-o", "--outdir", help="output folder (default: results/compare_<project>)")
    p.add_argument("--train-epochs", type=_positive_int, metavar="N",
                   help="also train each configuration N epochs (NNabla's training loop) and compare "
                        "time to train and validation error")
    p.add_argument("--runs", type=_positive_int, help="passed to each profile: fixed timed runs per entry")
    p.add_argument("--mode", choices=("isolated", "graph"), help="passed to each profile")
    p.add_argument("--synthetic", action="store_true", help="passed to each profile")
    p.add_argument("--no-inference", action="store_true", help="passed to each profile")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    return p


def _is_result(path: str) -> bool:
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, "result.json"))) or \
        (os.path.isfile(path) and path.endswith(".json"))


def run_compare(args) -> int:
    out = _printer(args.quiet)
    if all(_is_result(t) for t in args.targets):
        outdir = _compare_saved_results(args)
    else:
        outdir = _compare_configurations(args, out)
    with open(os.path.join(outdir, "compare.log")) as f:
        text = f.read()
    if not args.quiet:
        sys.stdout.write(text)
    out("written to %s (compare.csv, compare.xlsx, box plots)" % outdir)
    return 0


def _compare_saved_results(args) -> str:
    """nnprofile compare DIR DIR ...: entry by entry and layer by layer, from saved samples."""
    from . import compare, result_file
    from .render import comparison
    if args.set or args.train_epochs:
        raise ProfileError("--set and --train-epochs need a project, not saved results")
    if len(args.targets) < 2:
        raise ProfileError("give two or more result folders to compare")
    names = compare.unique_names(args.targets)
    profiles = {n: result_file.load(t) for n, t in zip(names, args.targets)}
    entry_rows, layer_rows, metrics = compare.compare_saved(profiles)
    rows = compare.metric_rows(metrics, names)
    outdir = args.outdir or os.path.join("results", "compare")
    _prepare_outdir(outdir)
    header = ["nnprofile compare: %d saved results, each entry's per-call samples; ratios to %s"
              % (len(names), names[0])] + ["  %s: %s (%s, %s)" % (
                  n, t, profiles[n].header.get("context", "?"), profiles[n].header.get("date", "?"))
                  for n, t in zip(names, args.targets)]
    findings = compare.findings(rows, [compare.Config(n, {}) for n in names],
                                {n: str(p.header.get("context", "")) for n, p in profiles.items()})
    comparison.write(outdir, header, rows, findings, metrics, names, "per-call samples of each saved run",
                     entry_rows, layer_rows)
    return outdir


def _compare_configurations(args, out) -> str:
    """nnprofile compare PROJECT --set ... : each configuration profiled (and trained) --repeat times."""
    from . import compare
    from .render import comparison
    bad = [t for t in args.targets if os.path.isdir(t)]
    if bad:
        raise ProfileError("%s: a folder without result.json" % bad[0])
    if not args.set:
        raise ProfileError("give the configurations to compare with --set, e.g. "
                           "--set type_config=float --set type_config=half")
    configs = [compare.parse_set(s) for s in args.set]
    if len({c.name for c in configs}) != len(configs):
        raise ProfileError("the same configuration is given twice")
    main_file = args.targets[0]
    if not os.path.isfile(main_file):
        raise ProfileError("%s: no such file" % main_file)
    name = os.path.splitext(os.path.basename(main_file))[0]
    outdir = args.outdir or os.path.join("results", "compare_" + name)
    _prepare_outdir(outdir)
    extra = []
    if args.runs:
        extra += ["--runs", str(args.runs)]
    if args.mode:
        extra += ["--mode", args.mode]
    if args.synthetic:
        extra.append("--synthetic")
    if args.no_inference:
        extra.append("--no-inference")
    metrics, profiles = compare.run_configurations(args.targets, configs, args.repeat, outdir, extra,
                                                   progress=out)
    contexts = {c: str(p.header.get("context", "")) for c, p in profiles.items()}
    names = [c.name for c in configs]
    if args.train_epochs:
        metrics += _train_configurations(main_file, configs, args.repeat, args.train_epochs, outdir, out)
    rows = compare.metric_rows(metrics, names)
    header = ["nnprofile compare: %s, %d configurations x %d runs, each a fresh process, alternating; "
              "ratios to %s" % (" ".join(args.targets), len(configs), args.repeat, names[0])]
    header += ["  %s: ran on %s" % (c, contexts.get(c, "?")) for c in names]
    if args.train_epochs:
        header.append("  training: %d epochs with nnabla_cli train; 'validation error' is 1 - accuracy on "
                      "the validation dataset, 'valid_error monitor' the project's own monitor (NNabla "
                      "averages the loss for an Error monitor)" % args.train_epochs)
    findings = compare.findings(rows, configs, contexts)
    comparison.write(outdir, header, rows, findings, metrics, names, "%d runs per configuration" % args.repeat)
    return outdir


def _train_configurations(main_file, configs, repeat, epochs, outdir, out):
    """Time to train and validation error per configuration and run, as comparison metrics."""
    from . import compare
    from .training import train_once
    trained = {m: compare.Metric(m, u) for m, u in (
        ("time to train", "s"), ("validation error", "ratio"), ("valid_error monitor", "loss"))}
    for i in range(repeat):
        for c in configs:  # alternating, as the profiles
            out("training %d epochs, run %d of %d, %s ..." % (epochs, i + 1, repeat, c.name))
            t = train_once(main_file, c.settings, epochs, os.path.join(outdir, "train", c.slug, str(i + 1)))
            trained["time to train"].values.setdefault(c.name, []).append(t.train_seconds)
            if t.classification_error is not None:
                trained["validation error"].values.setdefault(c.name, []).append(t.classification_error)
            if t.monitor_valid_error is not None:
                trained["valid_error monitor"].values.setdefault(c.name, []).append(t.monitor_valid_error)
    return [m for m in trained.values() if m.values]


COMMANDS = {
    "report": (report_parser, run_report),
    "compare": (compare_parser, run_compare),
}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        make_parser, command = COMMANDS[argv[0]]
        args = make_parser().parse_args(argv[1:])
    else:
        make_parser, command = profile_parser, run_profile
        args = make_parser().parse_args(argv)
    if args.debug:
        logging.getLogger("nnabla").setLevel(logging.INFO)
    try:
        return command(args)
    except ProfileError as e:
        if args.debug:
            traceback.print_exc()
        print("nnprofile: error: %s" % e, file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("nnprofile: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug, or an NNabla failure we do not know yet
        if args.debug:
            traceback.print_exc()
        text = " ".join(str(e).split())
        print("nnprofile: error: %s%s (run with --debug for the traceback)"
              % (type(e).__name__, (": " + text[:300]) if text else ""), file=sys.stderr)
        return EXIT_INTERNAL
