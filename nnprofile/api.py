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

from . import __version__
from .analysis import SectionAnalysis, analyze_section
from .choices import MODES
from .errors import ProfileError
from .measure.rounds import EntryCallback
from .measure.session import Selection, plan, run as run_sections
from .measure.timing import Clock, Sampling, Timer
from .result import Profile, Section, file as result_file

PathLike = Union[str, "os.PathLike[str]"]
SectionCallback = Callable[[Section], None]
SectionEndCallback = Callable[[Section, SectionAnalysis], None]


def prepare_outdir(outdir: str) -> None:
    """Create the output folder, or say in one line why it cannot be used."""
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise ProfileError("output folder %s is a file" % outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise ProfileError("cannot create output folder %s (%s)" % (outdir, e.strerror or e))
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise ProfileError("output folder %s is not writable" % outdir)


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
            on_progress: Optional[Callable[[str], None]] = None) -> Profile:
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
    an entry is final (in log order), ``on_section_end(section, analysis)``.

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
    from .project import load_project, zero_weights as zero
    files = [os.fspath(project)] + [os.fspath(p) for p in params]
    if repeat > 1:
        options: Dict[str, object] = dict(
            runs=runs, warmup=warmup, target_rse=target_rse, min_rounds=min_rounds, max_seconds=max_seconds,
            max_seconds_per_entry=max_seconds_per_entry, drift_threshold=drift_threshold, synthetic=synthetic,
            context=context, type_config=type_config, batch_size=batch_size, mode=mode, layers=layers,
            zero_weights=zero_weights, optimizers=optimizers, executors=executors, training=training,
            inference=inference, memory_limit=memory_limit)
        return _repeated(files, options, repeat, outdir, drift_threshold, on_progress)
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
        from .measure.graph import calibrate_hooks
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
            on_entry=on_entry, synthetic=synthetic, mode=mode, layers=layers, on_section_end=section_end)
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
            from .render import write_all
            write_all(result, out)
        if out is None:
            shutil.rmtree(cache, ignore_errors=True)
    return result


def _memory_limit(value: Optional[Union[int, str]]) -> Optional[int]:
    if value is None or isinstance(value, int):
        return value
    from .measure.memory import parse_size
    try:
        return parse_size(value)
    except ValueError as e:
        raise ProfileError("--memory-limit: %s" % e)


def _repeated(files: Sequence[str], options: Dict[str, object], repeat: int, outdir: Optional[PathLike],
              threshold: float, on_progress: Optional[Callable[[str], None]]) -> Profile:
    from .measure.repeat import merge, run_processes
    from .render import write_all
    out = os.fspath(outdir) if outdir is not None else tempfile.mkdtemp(prefix="nnprofile-repeat-")
    prepare_outdir(out)
    try:
        runs = run_processes(files, options, repeat, out, progress=on_progress or (lambda line: None))
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


__all__ = ["profile", "load", "prepare_outdir", "record", "run", "step", "Recording"]


# -- recording programs ----------------------------------------------------------------

_ACTIVE: list = []  # the recordings in progress, innermost last


def step() -> None:
    """Mark the end of a training step of the program being recorded (no-op when none is)."""
    if _ACTIVE:
        _ACTIVE[-1].step()


class Recording:
    """``with nnprofile.record(outdir=...) as rec:`` around a program's own loop.

    Every NNabla function's forward and backward and every solver call inside
    the block is recorded; a step ends at each solver ``update`` or at
    ``rec.step()``. After the block, ``rec.profile`` is the same ``Profile`` as
    ``nnprofile.profile`` gives (and the files are in ``outdir``, if given).
    """

    def __init__(self, outdir: Optional[PathLike] = None, skip_first: int = 1, active: int = 20,
                 name: str = "recording", command: Optional[str] = None,
                 clock: Optional[Callable[[], int]] = None, hook_costs: Optional[Any] = None):
        from .measure.recorder import Recorder
        self.outdir = os.fspath(outdir) if outdir is not None else None
        self.name = name
        self.command = command or name
        self.skip_first, self.active = skip_first, active
        self._new = lambda: Recorder(skip_first=skip_first, active=active, clock=clock)
        self.hook_costs = hook_costs
        self.recorder = self._new()
        self.profile: Optional[Profile] = None

    def __enter__(self) -> "Recording":
        from .measure.script import calibrate
        if self.outdir is not None:
            prepare_outdir(self.outdir)
        if self.hook_costs is None:
            self.hook_costs = calibrate(self._new)
        self.recorder.start()
        _ACTIVE.append(self)
        return self

    def step(self) -> None:
        self.recorder.step()

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        self.recorder.stop()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        failure = None
        if kind is KeyboardInterrupt:
            failure = "interrupted by Ctrl-C"
        elif kind is not None and kind is not SystemExit:
            failure = "the program raised %s: %s" % (kind.__name__, " ".join(str(error).split())[:200])
        self.profile = self._profile(failure)
        if kind is SystemExit and error.code not in (None, 0):  # the program's own choice: noted, not a failure
            self.profile.notes.append("the program exited with status %s" % error.code)
        if self.outdir is not None:
            from .render import write_all
            write_all(self.profile, self.outdir)

    def _profile(self, failure: Optional[str]) -> Profile:
        import nnabla
        from .measure.script import Assembler
        assert self.hook_costs is not None  # measured on entry
        assembler = Assembler(self.recorder, self.hook_costs)
        section, timeline, skip = assembler.section(self.name)
        kept = len(self.recorder.kept_steps()[0])
        steps = len(self.recorder.steps)
        costs = self.hook_costs
        context = nnabla.get_current_context()
        header: Dict[str, object] = {
            "mode": "record", "target_rse": None, "drift_threshold": 0.10, "nnprofile": __version__,
            "nnabla": nnabla.__version__, "project": self.command, "kind": "script",
            "context": ",".join(context.backend) if context.backend else "cpu:float",
            "sampling": "steps %d to %d of %d recorded (skip first %d, active %d); each figure (the time of "
                        "one call) is the mean over those steps, leaving out steps the machine ran slow in"
                        % (skip + 1, skip + kept, steps, skip, self.active),
            "machine": "%s, %s, Python %s" % (platform.node(), platform.machine(), platform.python_version()),
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "hook_overhead_ns": round(costs.static_total, 1),
            "hook_inside_ns": round(costs.static_inside, 1),
            "call_overhead_ns": round(costs.dynamic_total, 1),
            "call_inside_ns": round(costs.dynamic_inside, 1),
            "active_steps": kept, "skipped_steps": skip,
        }
        notes = []
        if skip < self.skip_first:
            notes.append("the program ran %d step%s, fewer than --skip-first %d and one active step: the skip "
                         "was shrunk to %d" % (steps, "" if steps == 1 else "s", self.skip_first, skip))
        if steps and not any(c for s in self.recorder.steps for c in s.calls
                             if type(c).__name__ == "SolverCall" and c.method == "update") and steps == 1:
            notes.append("no solver update and no nnprofile.step(): the whole run is one step")
        if not steps:
            notes.append("nothing was recorded: the program ran no NNabla function")
        # What ran (ConvolutionCudaCudnn under cuDNN) and at which batch, as a project's header says.
        header["implementation_classes"] = sorted({e.impl_class for e in section.entries if e.impl_class})
        if section.memory.get("batch_size"):
            header["batch_size"] = section.memory["batch_size"]
        profile = Profile(header=header, notes=notes, sections=[section] if section.entries else [],
                          complete=failure is None, failure=failure, timeline=timeline)
        return profile


def record(outdir: Optional[PathLike] = None, skip_first: int = 1, active: int = 20,
           name: str = "recording") -> Recording:
    """Record the NNabla work of a block of code: ``with nnprofile.record() as rec: ...; rec.profile``."""
    return Recording(outdir=outdir, skip_first=skip_first, active=active, name=name)


def run(script: PathLike, *args: str, outdir: Optional[PathLike] = None, skip_first: int = 1,
        active: int = 20) -> Tuple[Profile, int]:
    """Run a Python program unmodified as ``__main__`` (its own ``sys.argv``), recording it.

    Returns the profile and the program's exit status. The program's output
    passes through; an exception in it prints its own traceback (it is the
    user's code) and gives status 1; what was recorded is kept, marked incomplete.
    """
    import runpy
    import traceback
    path = os.fspath(script)
    if not os.path.isfile(path):
        raise ProfileError("%s: no such file" % path)
    command = " ".join([path] + list(args))
    recording = Recording(outdir=outdir, skip_first=skip_first, active=active,
                          name=os.path.basename(path), command=command)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path] + list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    status = 0
    try:
        with recording:
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if e.code not in (None, 0) and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
                raise
            except KeyboardInterrupt:
                status = 130
                raise
            except BaseException:
                status = 1
                _print_user_traceback(path, traceback)
                raise
    except (SystemExit, KeyboardInterrupt, Exception):
        pass
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    assert recording.profile is not None
    return recording.profile, status


def _print_user_traceback(path: str, traceback: Any) -> None:
    """The program's traceback from its own first frame on: nnprofile's frames are not the user's concern."""
    kind, error, tb = sys.exc_info()
    frames = traceback.extract_tb(tb)
    target = os.path.abspath(path)
    first = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == target), 0)
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames[first:])
    lines += traceback.format_exception_only(kind, error)
    sys.stderr.write("".join(lines))
