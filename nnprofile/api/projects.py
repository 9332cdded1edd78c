"""The Python API: one call profiles a project; results load back as the same objects.

    import nnprofile
    p = nnprofile.profile("projects/lenet/lenet.nntxt", outdir="results/lenet")
    p.to_dataframe()                       # one row per entry, in log order
    q = nnprofile.load("results/lenet")   # the same Profile, from result.json

The command line (``nnprofile.cli``) is a thin layer over these functions.
"""
from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import shutil
import sys
import tempfile
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from .._version import __version__
from ..analysis import SectionAnalysis, analyze_section
from ..base.choices import MODES
from ..base.errors import ProfileError
from ..measure.rounds import EntryCallback
from ..measure.session import Selection, plan, run as run_sections
from ..measure.timing import Clock, Sampling, Timer
from ..render.files import prepare_outdir
from ..result import Profile, Section, file as result_file

PathLike = Union[str, "os.PathLike[str]"]
SectionCallback = Callable[[Section], None]
SectionEndCallback = Callable[[Section, SectionAnalysis], None]


def _batch_sizes(project: Any) -> Union[int, Dict[str, int]]:
    """The networks' batch size: one number if they agree, else network -> size."""
    sizes = {n.name: n.batch_size for n in project.info.proto.network}
    distinct = set(sizes.values())
    return distinct.pop() if len(distinct) == 1 else sizes


def _header(project: Any, sampling: Sampling, mode: str) -> Dict[str, object]:
    import nnabla
    return {
        "mode": mode,
        "target_rse": sampling.target_rse if sampling.adaptive else None,
        "drift_threshold": sampling.drift_threshold,
        "nnprofile": __version__,
        "nnabla": nnabla.__version__,
        "project": " ".join(project.files),
        "project_sha256": project.sha256,
        "context": project.run_context.description,
        "requested_context": project.run_context.requested,
        "batch_size": project.batch_size or _batch_sizes(project),
        "sampling": sampling.describe(),
        "machine": "%s, %s, Python %s" % (platform.node(), platform.machine(), platform.python_version()),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def profile(project: PathLike, *params: PathLike, outdir: Optional[PathLike] = None,
            runs: Optional[int] = None, warmup: int = 1, target_rse: float = 0.02, min_rounds: int = 5,
            max_seconds: float = 1.5, max_seconds_per_entry: float = 0.25, drift_threshold: float = 0.10,
            synthetic: bool = False, context: Optional[str] = None, type_config: Optional[str] = None,
            batch_size: Optional[int] = None, mode: str = "isolated", layers: bool = True,
            zero_weights: bool = False, optimizers: Optional[Sequence[str]] = None,
            executors: Optional[Sequence[str]] = None, training: bool = True, inference: bool = True,
            on_start: Optional[Callable[[Profile], None]] = None,
            on_section: Optional[SectionCallback] = None, on_entry: Optional[EntryCallback] = None,
            on_section_end: Optional[SectionEndCallback] = None,
            clock: Optional[Clock] = None, overhead_ns: Optional[float] = None, repeat: int = 1,
            memory_limit: Optional[Union[int, str]] = None,
            on_progress: Optional[Callable[[str], None]] = None,
            on_round: Optional[Callable[[Section, float], None]] = None,
            on_run: Optional[Callable[[int, int], None]] = None) -> Profile:
    """Profile an NNC project (.nntxt or .nnp, plus parameter files) as NNC's Profile command does.

    Every option of the command line is a keyword here. ``runs`` fixes the
    number of rounds of one timed run per entry; otherwise sampling is
    adaptive (``target_rse``, ``min_rounds``, the time budgets ``max_seconds``
    per section and ``max_seconds_per_entry``, and ``drift_threshold``). With an
    ``outdir``, every file is written there (also after a failure or Ctrl-C,
    marked incomplete); without one, nothing is written (NNabla's dataset cache
    goes to a temporary folder, removed afterwards).

    The callbacks let a caller show progress: ``on_start(profile)`` once the
    header is known, ``on_section(section)``, ``on_entry(section, entry)`` when
    an entry is final (in log order), ``on_section_end(section, analysis)``,
    ``on_round(section, done)`` after each round of sampling (``done``: how far
    it has got, 0 to 1), and with ``repeat``, ``on_run(done, total)`` as each
    fresh process starts.

    ``repeat`` > 1 profiles in that many fresh processes (their files in
    OUTDIR/runs/<n>/) and pools the results: samples and rounds per entry, the
    machine's usual speed taken over all runs, each run's mean kept for the
    run-to-run spread (``on_progress`` hears of each run).

    ``memory_limit`` (bytes, or a size such as "8GiB") asks for the largest
    batch whose estimated peak fits in it.

    ``clock`` replaces the monotonic clock (tests drive it with a scripted
    one); ``overhead_ns`` sets the timing overhead taken off every sample (and
    graph mode's hook cost inside a function) instead of measuring it at start-up.

    Raises ``ProfileError`` (``Interrupted`` for Ctrl-C) with the partial
    profile as its ``profile`` attribute; any other exception carries it too.
    """
    if mode not in MODES:
        raise ProfileError("unknown mode '%s' (choose from %s)" % (mode, ", ".join(MODES)))
    limit = _memory_limit(memory_limit)  # bad input fails before any work
    from ..project import load_project, zero_weights as zero
    files = [os.fspath(project)] + [os.fspath(p) for p in params]
    if repeat > 1:
        options: Dict[str, object] = dict(
            runs=runs, warmup=warmup, target_rse=target_rse, min_rounds=min_rounds, max_seconds=max_seconds,
            max_seconds_per_entry=max_seconds_per_entry, drift_threshold=drift_threshold, synthetic=synthetic,
            context=context, type_config=type_config, batch_size=batch_size, mode=mode, layers=layers,
            zero_weights=zero_weights, optimizers=optimizers, executors=executors, training=training,
            inference=inference, memory_limit=memory_limit)
        return _repeated(files, options, repeat, outdir, drift_threshold, on_progress, on_run)
    sampling = Sampling(runs=runs, warmup=max(0, warmup), target_rse=target_rse, min_rounds=min_rounds,
                        max_seconds=max_seconds, max_seconds_per_entry=max_seconds_per_entry,
                        drift_threshold=drift_threshold)
    out = os.fspath(outdir) if outdir is not None else None
    if out is not None:
        prepare_outdir(out)
    loaded = load_project(files, backend=context, type_config=type_config, batch_size=batch_size)
    if zero_weights:
        zero()
    sections = plan(loaded, Selection(optimizers=list(optimizers) if optimizers else None,
                                      executors=list(executors) if executors else None,
                                      training=training, inference=inference))
    timer = Timer(sampling, clock=clock or Clock(), sync=loaded.run_context.synchronize)
    calibration = timer.calibrate()
    if overhead_ns is not None:
        timer.overhead_ns = overhead_ns
        calibration = dataclasses.replace(calibration, overhead_ns=overhead_ns)
    result = Profile(header=_header(loaded, sampling, mode), notes=list(loaded.run_context.notes))
    result.header.update(clock=calibration.name, clock_resolution_ns=calibration.resolution_ns,
                         timing_overhead_ns=round(calibration.overhead_ns, 1))
    if mode == "graph":
        from ..measure.graph_mode import calibrate_hooks
        total, inside = calibrate_hooks(timer)
        timer.hook_inside_ns = inside if overhead_ns is None else overhead_ns
        result.header.update(hook_overhead_ns=round(total, 1), hook_inside_ns=round(inside, 1))
    result.header["data"] = "synthetic" if synthetic else "datasets"
    if limit is not None:
        result.header["memory_limit"] = limit
    if not layers:
        result.notes.append("per-layer entries were skipped (--no-layers)")
    if zero_weights:
        result.notes.append("weights and biases were zeroed (--zero-weights), as nnabla_cli profile does")
    if synthetic:
        result.notes.append("the data was synthetic (--synthetic): random batches of the declared "
                            "shapes; load_dataset does not measure reading a dataset")
    if on_start is not None:
        on_start(result)
    cache = os.path.join(out, "cache") if out is not None else tempfile.mkdtemp(prefix="nnprofile-cache-")

    def section_end(section: Section) -> None:
        if on_section_end is not None:
            on_section_end(section, analyze_section(section, result.header))
    try:
        run_sections(loaded, sections, timer, cache_root=cache, profile=result, on_section=on_section,
            on_entry=on_entry, synthetic=synthetic, mode=mode, layers=layers, on_section_end=section_end,
            on_round=on_round)
    except ProfileError as e:
        e.profile = result
        if out is not None and any(s.entries for s in result.sections):
            message = "%s (what was measured is in %s, marked incomplete)" % (e, out)
            raise type(e)(message, result) from e
        raise
    except BaseException as e:  # a bug, or an NNabla failure we do not know yet
        try:
            e.profile = result  # type: ignore[attr-defined]
        except AttributeError:
            pass
        raise
    finally:
        if out is not None and any(s.entries for s in result.sections):
            from ..render import write_all
            write_all(result, out)
        if out is None:
            shutil.rmtree(cache, ignore_errors=True)
    return result


def _memory_limit(value: Optional[Union[int, str]]) -> Optional[int]:
    if value is None or isinstance(value, int):
        return value
    from ..base.sizes import parse_size
    try:
        return parse_size(value)
    except ValueError as e:
        raise ProfileError("--memory-limit: %s" % e)


def _repeated(files: Sequence[str], options: Dict[str, object], repeat: int, outdir: Optional[PathLike],
              threshold: float, on_progress: Optional[Callable[[str], None]],
              on_run: Optional[Callable[[int, int], None]] = None) -> Profile:
    from ..pooling.profiles import merge, run_processes
    from ..render import write_all
    out = os.fspath(outdir) if outdir is not None else tempfile.mkdtemp(prefix="nnprofile-repeat-")
    prepare_outdir(out)
    try:
        runs = run_processes(files, options, repeat, out, progress=on_progress or (lambda line: None),
                             on_run=on_run)
        merged = merge(runs, threshold)
        if outdir is not None:
            write_all(merged, out)
        return merged
    finally:
        if outdir is None:
            shutil.rmtree(out, ignore_errors=True)


def load(outdir_or_result_json: PathLike) -> Profile:
    """A saved profile: OUTDIR (with result.json) or the file itself, of any format version."""
    return result_file.load(os.fspath(outdir_or_result_json))

