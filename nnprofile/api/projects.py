"""The Python API: one call profiles a project; results load back as the same objects.

    import nnprofile
    p = nnprofile.profile("projects/lenet/lenet.nntxt", outdir="results/lenet")
    p.to_dataframe()                       # one row per entry, in log order
    q = nnprofile.load("results/lenet")   # the same Profile, from result.json

The command line (``nnprofile.cli``) is a thin layer over these functions.
"""

from __future__ import annotations

import dataclasses
import functools
import datetime
import os
import platform
import shutil
import tempfile
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence, Tuple, Union

from ..base.outdir import named
from .._version import __version__
from ..analysis import SectionAnalysis, analyze_section
from ..base.choices import MODES
from ..base.options import ProfileOptions
from ..base import machine
from ..base.errors import ProfileError
from ..measure.rounds import EntryCallback
from ..measure.session import Selection, plan, run as run_sections
from ..base.clock import Clock
from ..measure.timing import Sampling, Timer
from ..base.outdir import listed
from ..render.files import claim_outdir, release_outdir
from ..base.quiet import quiet_nnabla
from ..result import Profile, Section, file as result_file
from ..result.header import ProjectHeader
from ..result.notes import Note

PathLike = Union[str, "os.PathLike[str]"]
SectionCallback = Callable[[Section], None]
SectionEndCallback = Callable[[Section, SectionAnalysis], None]


def _batch_sizes(project: Any) -> Union[int, Dict[str, int]]:
    """The networks' batch size: one number if they agree, else network -> size."""
    sizes = {n.name: n.batch_size for n in project.info.proto.network}
    distinct = set(sizes.values())
    return distinct.pop() if len(distinct) == 1 else sizes


def _header(project: Any, sampling: Sampling, options: ProfileOptions) -> ProjectHeader:
    import nnabla

    return ProjectHeader(
        mode=options.mode,
        target_rse=sampling.target_rse if sampling.adaptive else None,
        drift_threshold=sampling.drift_threshold,
        nnprofile=__version__,
        nnabla=nnabla.__version__,
        project=" ".join(project.files),
        project_sha256=project.sha256,
        context=project.run_context.description,
        requested_context=project.run_context.requested,
        batch_size=project.batch_size or _batch_sizes(project),
        sampling=sampling.header_note(),
        machine="%s, %s, Python %s" % (platform.node(), platform.machine(), platform.python_version()),
        date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        data="synthetic" if options.synthetic else "datasets",
        machine_rates=machine.measure(),
    )


def profile_project(
    project: PathLike,
    *params: PathLike,
    outdir: Optional[PathLike] = None,
    on_start: Optional[Callable[[Profile], None]] = None,
    on_section: Optional[SectionCallback] = None,
    on_entry: Optional[EntryCallback] = None,
    on_section_end: Optional[SectionEndCallback] = None,
    on_round: Optional[Callable[[Section, float], None]] = None,
    on_run: Optional[Callable[[int, int], None]] = None,
    on_progress: Optional[Callable[[str], None]] = None,
    clock: Optional[Clock] = None,
    overhead_ns: Optional[float] = None,
    probe: Any = None,
    **options: Any,
) -> Profile:
    """Profile an NNC project (.nntxt or .nnp, plus parameter files) as NNC's Profile command does.

    Every option of the command line is a keyword here (``nnprofile.base.options.ProfileOptions``
    defines them once): ``runs`` fixes the number of rounds of one timed run per entry; otherwise
    sampling is adaptive (``target_rse``, ``min_rounds``, the time budgets ``max_seconds`` per
    section and ``max_seconds_per_entry``, and ``drift_threshold``); ``synthetic``, ``context``,
    ``type_config``, ``batch_size``, ``mode`` ("isolated" or "graph"), ``layers``, ``zero_weights``,
    ``optimizers``, ``executors``, ``training``, ``inference``, ``repeat`` and ``memory_limit``
    (bytes, or a size such as "8GiB": the largest batch whose estimated peak fits in it). With an
    ``outdir``, every file is written there (also after a failure or Ctrl-C, marked incomplete);
    without one, nothing is written (NNabla's dataset cache goes to a temporary folder, removed
    afterwards).

    The callbacks let a caller show progress: ``on_start(profile)`` once the header is known,
    ``on_section(section)``, ``on_entry(section, entry)`` when an entry is final (in log order),
    ``on_section_end(section, analysis)``, ``on_round(section, done)`` after each round of sampling
    (``done``: how far it has got, 0 to 1), and with ``repeat``, ``on_run(done, total)`` as each
    fresh process starts (``on_progress`` hears a line for each).

    ``repeat`` > 1 profiles in that many fresh processes (their files in OUTDIR/runs/<n>/) and pools
    the results (``nnprofile.merging``): samples and rounds per entry, the machine's usual speed
    taken over all runs, each run's mean kept for the run-to-run spread.

    ``clock`` replaces the monotonic clock (tests drive it with a scripted one); ``overhead_ns`` sets
    the timing overhead taken off every sample (and graph mode's hook cost inside a function)
    instead of measuring it at start-up; ``probe`` replaces the kernel's accounting of other work
    (``nnprofile.base.interference``; tests inject interruptions with a ``FakeProbe``).

    Raises ``ProfileError`` (``Interrupted`` for Ctrl-C) with the partial profile as its ``profile``
    attribute; any other exception carries it too.
    """
    opts, limit = _checked(options)
    from ..project.loader import resolve_files

    files = resolve_files([os.fspath(project)] + [os.fspath(p) for p in params])
    if opts.repeat > 1:
        return _repeated(files, opts, outdir, on_progress, on_run)
    out = named(outdir) if outdir is not None else None
    lock = claim_outdir(out) if out is not None else None
    try:
        listeners = Listeners(on_start, on_section, on_entry, on_section_end, on_round)
        return _profile_into(files, opts, out, limit, (clock, probe), overhead_ns, listeners)
    finally:
        release_outdir(lock)


class Listeners(NamedTuple):
    """A project's callbacks (``profile_project``), handed to the run as one."""

    on_start: Optional[Callable[[Profile], None]]
    on_section: Optional[SectionCallback]
    on_entry: Optional[EntryCallback]
    on_section_end: Optional[SectionEndCallback]
    on_round: Optional[Callable[[Section, float], None]]


def _checked(options: Dict[str, Any]) -> Tuple[ProfileOptions, Optional[int]]:
    """The options, and the memory limit in bytes: a bad value is one line, before any work."""
    try:
        opts = ProfileOptions.of(**options)
    except ValueError as e:
        raise ProfileError(str(e))
    if opts.mode not in MODES:
        raise ProfileError("unknown mode '%s' (choose from %s)" % (opts.mode, ", ".join(MODES)))
    return opts, _memory_limit(opts.memory_limit)


def _profile_into(
    files: Sequence[str],
    opts: ProfileOptions,
    out: Optional[str],
    limit: Optional[int],
    clocks: Tuple[Optional[Clock], Any],
    overhead_ns: Optional[float],
    listeners: Listeners,
) -> Profile:
    from ..project import load_project, zero_weights as zero

    loaded = load_project(files, backend=opts.context, type_config=opts.type_config, batch_size=opts.batch_size)
    if opts.zero_weights:
        zero()
    chosen = Selection(
        optimizers=list(opts.optimizers) if opts.optimizers else None,
        executors=list(opts.executors) if opts.executors else None,
        training=opts.training,
        inference=opts.inference,
    )
    timer, result = _timed_profile(loaded, opts, Sampling.of(opts), clocks, overhead_ns, limit)
    if listeners.on_start is not None:
        listeners.on_start(result)
    cache = os.path.join(out, "cache") if out is not None else tempfile.mkdtemp(prefix="nnprofile-cache-")
    try:
        _run(loaded, plan(loaded, chosen), timer, result, cache, opts, listeners)
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


def _run(
    loaded: Any, sections: Any, timer: Timer, result: Profile, cache: str, opts: ProfileOptions, listeners: Listeners
) -> None:
    """The project's sections measured into ``result``, the listeners told as they go."""

    def section_end(section: Section) -> None:
        if listeners.on_section_end is not None:
            listeners.on_section_end(section, analyze_section(section, result.header))

    run_sections(
        loaded,
        sections,
        timer,
        cache_root=cache,
        profile=result,
        on_section=listeners.on_section,
        on_entry=listeners.on_entry,
        synthetic=opts.synthetic,
        mode=opts.mode,
        layers=opts.layers,
        on_section_end=section_end,
        on_round=listeners.on_round,
    )


def _timed_profile(
    loaded: Any,
    opts: ProfileOptions,
    sampling: Sampling,
    clocks: Tuple[Optional[Clock], Any],
    overhead_ns: Optional[float],
    limit: Optional[int],
) -> Tuple[Timer, Profile]:
    """The timer, calibrated (and, in graph mode, the hooks' cost measured), and the profile its header starts."""
    clock, probe = clocks
    timer = Timer(sampling, clock=clock or Clock(), sync=loaded.run_context.synchronize, probe=probe)
    calibration = timer.calibrate()
    if overhead_ns is not None:
        timer.overhead_ns = overhead_ns
        calibration = dataclasses.replace(calibration, overhead_ns=overhead_ns)
    header = _header(loaded, sampling, opts)
    header.clock, header.clock_resolution_ns = calibration.name, calibration.resolution_ns
    header.timing_overhead_ns = round(calibration.overhead_ns, 1)
    header.memory_limit = limit
    result = Profile(header=header, notes=list(loaded.run_context.notes))
    if opts.mode == "graph":
        from ..measure.graph_mode import calibrate_hooks

        total, inside = calibrate_hooks(timer)
        timer.hook_inside_ns = inside if overhead_ns is None else overhead_ns
        header.hook_overhead_ns, header.hook_inside_ns = round(total, 1), round(inside, 1)
    if not opts.layers:
        result.notes.append(Note("no_layers"))
    if opts.zero_weights:
        result.notes.append(Note("zero_weights"))
    if opts.synthetic:
        result.notes.append(Note("synthetic"))
    return timer, result


@functools.wraps(profile_project)
def profile(project: PathLike, *params: PathLike, **kwargs: Any) -> Profile:
    with quiet_nnabla():  # NNabla's INFO log quiet meanwhile, as on the command line
        return profile_project(project, *params, **kwargs)


def _memory_limit(value: Optional[Union[int, str]]) -> Optional[int]:
    if value is None or isinstance(value, int):
        return value
    from ..base.sizes import parse_size

    try:
        return parse_size(value)
    except ValueError as e:
        raise ProfileError("--memory-limit: %s" % e)


def _repeated(
    files: Sequence[str],
    options: ProfileOptions,
    outdir: Optional[PathLike],
    on_progress: Optional[Callable[[str], None]],
    on_run: Optional[Callable[[int, int], None]] = None,
) -> Profile:
    from ..merging.profiles import repeat_profiles
    from ..render import write_all

    out = named(outdir) if outdir is not None else tempfile.mkdtemp(prefix="nnprofile-repeat-")
    lock = claim_outdir(out)
    try:
        merged = repeat_profiles(files, options, out, progress=on_progress or (lambda line: None), on_run=on_run)
        if outdir is not None:
            runs = os.path.join(out, "runs")
            also = (
                ["runs/%s/%s" % (d, f) for d in sorted(os.listdir(runs)) for f in listed(os.path.join(runs, d))]
                if os.path.isdir(runs)
                else []
            )
            write_all(merged, out, also=also)
        return merged
    finally:
        release_outdir(lock)
        if outdir is None:
            shutil.rmtree(out, ignore_errors=True)


def load(outdir_or_result_json: PathLike) -> Profile:
    """A saved profile: OUTDIR (with result.json) or the file itself, of any format version."""
    return result_file.load(os.fspath(outdir_or_result_json))
