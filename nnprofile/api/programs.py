"""Recording NNabla programs: ``nnprofile.record()`` around code, ``nnprofile.run(script)``, ``nnprofile.step()``.

    with nnprofile.record(outdir="results/mine") as rec:   # a loop, a notebook cell
        for batch in data:
            train_step(batch)
    rec.profile.to_dataframe()

    profile, status = nnprofile.run("train.py", "--epochs", "1", outdir="results/train")

The recording (``nnprofile.recording``) ends in the same ``Profile`` as a
project's profile: one section per graph the program ran, and one for the
program's step.
"""
from __future__ import annotations

import copy
import dataclasses
import datetime
import os
import platform
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, MutableMapping, Optional, Sequence, Tuple, Union

from .._version import __version__
from ..base.errors import ProfileError, ProgramDidNotCompile
from ..render.files import prepare_outdir
from ..result import Profile
from ..result.header import ProgramHeader

PathLike = Union[str, "os.PathLike[str]"]
EVENTS = "events.json.gz"  # the recording as data (--save-events)
MESSAGE_LIMIT = 300  # characters of a program's exception message in the log

_ACTIVE: list = []  # the recordings in progress, innermost last


def step() -> None:
    """Mark the end of a step of the program being recorded (a no-op when nothing records)."""
    if _ACTIVE:
        _ACTIVE[-1].step()


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message on one line: whole, or cut at a word with an ellipsis, never in the middle of one."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if " " in cut and not text[limit - 1].isspace():
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def interrupted(error: Optional[BaseException]) -> bool:
    """Ctrl-C, also when it arrived inside NNabla's C++ (a pass calling a hook): Python then raises
    SystemError ("returned a result with an exception set") with the KeyboardInterrupt as its cause."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


class Recording:
    """``with nnprofile.record(outdir=...) as rec:`` around a program's own code.

    Every NNabla function's forward and backward, every solver call, every wait for a
    batch and every monitor inside the block is recorded; steps are the iterations of
    the program's loop (see ``nnprofile.measure.steps``), or what ``rec.step()`` marks.
    After the block, ``rec.profile`` is a ``Profile`` (and the files are in ``outdir``,
    if given). ``namespaces``: where solvers made before the block are (a notebook's
    namespace): they are timed too.

    Under a launcher (``mpirun``, ``srun``; see ``nnprofile.distributed.launcher``), or once the
    program's communicator says it is one rank of several, each rank writes into
    ``outdir/rank-K/``, and rank 0 then waits up to ``merge_wait`` seconds for the other ranks'
    results and writes their merged view into ``outdir`` (``rec.merged``). A rank ended by SIGTERM
    (``mpirun`` ends them all when one dies) still writes what it recorded.
    """

    def __init__(self, outdir: Optional[PathLike] = None, skip_first: int = 1, active: int = 20,
                 name: str = "recording", command: Optional[str] = None,
                 clock: Optional[Callable[[], int]] = None, hook_costs: Optional[Any] = None,
                 namespaces: Sequence[MutableMapping[str, Any]] = (), merge_wait: Optional[float] = None,
                 world: Optional[Any] = None, progress: Callable[[str], None] = lambda line: None,
                 save_events: bool = False):
        from ..pooling.ranks import DEFAULT_WAIT
        from ..recording import launcher
        from ..recording.recorder import Recorder
        self.outdir = os.fspath(outdir) if outdir is not None else None
        self.name = name
        self.command = command or name
        self.skip_first, self.active = skip_first, active
        self.namespaces = tuple(namespaces)
        # Where the hooks' cost is measured (not given), a few steps after the kept ones run without the hooks.
        self._new = lambda: Recorder(skip_first=skip_first, active=active, clock=clock, namespaces=self.namespaces,
                                     calibrate=hook_costs is None)
        self.hook_costs = hook_costs
        self.recorder = self._new()
        self.profile: Optional[Profile] = None
        self._measure_again = False
        self.world = world if world is not None else launcher.world()
        self.merge_wait = DEFAULT_WAIT if merge_wait is None else merge_wait
        self.merged: Optional[Profile] = None  # rank 0 of several: the ranks' merged view
        self.written_to: Optional[str] = None  # where this process's own result went
        self.capture: Optional[Any] = None  # the recording as data (nnprofile.assembly.events.Capture)
        self._signatures: Dict[str, Tuple[float, float]] = {}  # the hooks' cost per function signature
        self.save_events = save_events  # write it too, as events.json.gz
        self.progress = progress
        self._guard: Optional[Any] = None
        self._started_unix = 0.0

    def __enter__(self) -> "Recording":
        from ..recording.calibrate import calibrate
        if self.outdir is not None:
            prepare_outdir(self.outdir)
            if self.world is not None and self.world.several:
                self._rank_folder(self.world.rank)
        self._measure_again = self.hook_costs is None
        if self.hook_costs is None:
            self.hook_costs = calibrate(self._new)
        self._started_unix = time.time()
        self.recorder.start()
        _ACTIVE.append(self)
        if self.outdir is not None and self.world is not None and self.world.several:
            from .guard import TerminationGuard
            self._guard = TerminationGuard(self._terminated).__enter__()
        return self

    def _rank_folder(self, rank: int) -> str:
        """OUTDIR/rank-K, made, with no result of an earlier run left in it (a merge must not take that)."""
        from ..recording.launcher import rank_dir
        from ..result import file as result_file
        assert self.outdir is not None
        folder = rank_dir(self.outdir, rank)
        prepare_outdir(folder)
        try:
            os.remove(os.path.join(folder, result_file.FILENAME))
        except OSError:
            pass
        return folder

    def run_world(self) -> Optional[Any]:
        """The launcher's world, else the one the program's communicator told when it was initialised."""
        if self.world is not None:
            return self.world
        if self.recorder.comm_rank is not None and self.recorder.comm_rank[1] > 1:
            from ..recording.launcher import World
            return World(self.recorder.comm_rank[0], self.recorder.comm_rank[1], "communicator")
        return None

    def _terminated(self) -> None:
        """SIGTERM (from the watcher thread; the main thread may be blocked in a collective): write what was
        recorded so far, result.json first, in the second or so before the launcher's SIGKILL."""
        snapshot = copy.copy(self.recorder)
        snapshot.events = list(self.recorder.events)
        profile = self._profile("ended by SIGTERM (the launcher stopped this rank, as it does when another "
                                "rank dies)", snapshot, measure_signatures=False)
        world = self.run_world()
        if self.outdir is not None and world is not None:
            self._write(profile, self._rank_folder(world.rank))

    def step(self) -> None:
        self.recorder.step()

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        self.recorder.stop()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self._guard is not None and not self._guard.claim():
            threading.Event().wait()  # a SIGTERM came first: its thread writes the result and ends the process
        if self._measure_again and self.hook_costs is not None and not interrupted(error):
            from ..base.hookcost import smaller
            from ..recording.calibrate import calibrate
            self.hook_costs = smaller(self.hook_costs, calibrate(self._new))
        failure = None
        if interrupted(error):
            failure = "interrupted by Ctrl-C"
        elif kind is not None and kind is not SystemExit:
            failure = "the program raised %s: %s" % (kind.__name__, shorten(str(error)))
        self.profile = self._profile(failure)
        if kind is SystemExit and error.code not in (None, 0):  # the program's own choice: noted, not a failure
            self.profile.notes.append("the program exited with status %s" % error.code)
        try:
            if self.outdir is not None:
                self._write_results()
        finally:
            if self._guard is not None:
                self._guard.__exit__(None, None, None)

    def _write_results(self) -> None:
        assert self.outdir is not None and self.profile is not None
        world = self.run_world()
        if world is None or not world.several:
            self._write(self.profile, self.outdir)
            return
        self._write(self.profile, self._rank_folder(world.rank))
        if world.rank == 0:
            from ..pooling.ranks import collect, merge
            found = collect(self.outdir, world.size, 0.0, world.launch, self._started_unix - 60)
            if found.missing and self.merge_wait > 0:
                self.progress("nnprofile: waiting up to %g s for the results of rank%s %s"
                              % (self.merge_wait, "s" if len(found.missing) > 1 else "",
                                 ", ".join(str(k) for k in found.missing)))
                found = collect(self.outdir, world.size, self.merge_wait, world.launch, self._started_unix - 60)
            self.merged = merge(found)
            self._write(self.merged, self.outdir)

    def _write(self, profile: Profile, folder: str) -> None:
        from ..render import write_all
        self.written_to = self.written_to or folder
        write_all(profile, folder)
        if self.save_events and self.capture is not None and profile is self.profile:
            from ..assembly import events
            events.save(self.capture, os.path.join(folder, EVENTS))

    def _profile(self, failure: Optional[str], recorder: Optional[Any] = None,
                 measure_signatures: bool = True) -> Profile:
        import nnabla
        from ..assembly.assemble import DRIFT, assemble
        from ..recording.describe import describe
        assert self.hook_costs is not None  # measured on entry
        recorder = recorder or self.recorder
        costs = self.hook_costs
        capture = describe(recorder, costs)
        if measure_signatures and self._measure_again:
            from ..recording.calibrate import signature_costs
            self._signatures.update(signature_costs(capture, self._new, self._signatures))
            costs = dataclasses.replace(costs, by_signature=dict(self._signatures))
            capture.costs = costs
        self.capture = capture
        a = assemble(capture, costs, self.name)
        costs = a.costs
        context = nnabla.get_current_context()
        header = ProgramHeader(
            nnprofile=__version__, nnabla=nnabla.__version__, project=self.command,
            context=",".join(context.backend) if context.backend else "cpu:float",
            sampling="%s of %d recorded (skip first %d, active %d)%s; each figure (the time of one call) is "
                     "the mean over those steps, leaving out steps the machine ran slow in"
                     % (_span(a.kept_steps), a.steps, a.skip, self.active,
                        "; steps %s ran without the hooks, for what they cost" % _numbers(a.plain_steps)
                        if a.plain_steps else ""),
            steps=a.how,
            machine="%s, %s, Python %s" % (platform.node(), platform.machine(), platform.python_version()),
            date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            hook_overhead_ns=round(costs.static_total, 1), hook_inside_ns=round(costs.static_inside, 1),
            call_overhead_ns=round(costs.dynamic_total, 1), call_inside_ns=round(costs.dynamic_inside, 1),
            active_steps=a.kept, skipped_steps=a.skip, chain_hook_overhead_ns=round(self.hook_costs.static_total, 1),
            kept_steps=list(a.kept_steps), plain_steps=list(a.plain_steps), drift_threshold=DRIFT)
        if a.in_program is not None:
            header.hooks_in_program = {k: round(v, 4) for k, v in a.in_program.items()}
            header.hook_eviction = round(costs.eviction, 4)
        notes = list(a.notes)
        if a.skip < self.skip_first:
            notes.append("the program ran %d step%s, fewer than --skip-first %d and one active step: the skip "
                         "was shrunk to %d" % (a.steps, "" if a.steps == 1 else "s", self.skip_first, a.skip))
        if a.how.startswith("one step"):
            notes.append("no steps were found (no solver update seen, no nnprofile.step(), no repeating pass): "
                         "the whole run is one step; mark the end of each step with nnprofile.step()")
        if not recorder.events:
            notes.append("nothing was recorded: the program ran no NNabla function")
        # What ran (ConvolutionCudaCudnn under cuDNN) and at which batch, as a project's header says.
        header.implementation_classes = sorted({e.impl_class for s in a.sections for e in s.entries
                                                if e.impl_class})
        batch = next((s.memory.get("batch_size") for s in a.sections if s.memory.get("batch_size")), None)
        if batch:
            header.batch_size = batch
        world = self.run_world()
        if world is not None and world.several:
            header.rank, header.world_size, header.launcher = world.rank, world.size, world.launcher
            header.launch, header.host, header.clock_origin_ns = world.launch, platform.node(), a.origin_ns
            header.started_unix = round(self._started_unix, 3)
        return Profile(header=header, notes=notes, sections=a.sections, complete=failure is None,
                       failure=failure, timeline=a.timeline)


def _span(steps: Sequence[int]) -> str:
    if not steps:
        return "no steps"
    return "step %d" % steps[0] if len(steps) == 1 else "steps %d to %d" % (steps[0], steps[-1])


def _numbers(steps: Sequence[int]) -> str:
    shown = ", ".join(str(s) for s in steps[:6])
    return shown + (", ..." if len(steps) > 6 else "")


def record(outdir: Optional[PathLike] = None, skip_first: int = 1, active: int = 20, save_events: bool = False,
           name: str = "recording", namespaces: Sequence[MutableMapping[str, Any]] = (),
           merge_wait: Optional[float] = None) -> Recording:
    """Record the NNabla work of a block of code: ``with nnprofile.record() as rec: ...; rec.profile``.

    Solvers and communicators made before the block are timed too when they are global names of the
    module that calls ``record`` (a script's, or a notebook's), or in ``namespaces``. Under
    ``mpirun``, see ``Recording`` (``merge_wait``: how long rank 0 waits for the other ranks).
    """
    caller = sys._getframe(1).f_globals
    return Recording(outdir=outdir, skip_first=skip_first, active=active, name=name, save_events=save_events,
                     namespaces=tuple(namespaces) + (caller,), merge_wait=merge_wait)


def run(script: PathLike, *args: str, outdir: Optional[PathLike] = None, skip_first: int = 1, save_events: bool = False,
        active: int = 20, merge_wait: Optional[float] = None) -> Tuple[Profile, int]:
    """Run a Python program unmodified as ``__main__`` (its own ``sys.argv``), recording it.

    Returns the profile and the program's exit status. The program's output passes through; an
    exception in it prints its own traceback (it is the user's code) and gives status 1 (130 for
    Ctrl-C); what was recorded is kept, marked incomplete. A program that does not compile raises
    ``ProgramDidNotCompile`` (Python's own lines, status 1) before anything is written. Under
    ``mpirun`` each rank returns its own profile (``Recording.merged``, through ``run_recording``,
    holds rank 0's merged view).
    """
    recording, status = run_recording(script, *args, outdir=outdir, skip_first=skip_first, active=active,
                                      merge_wait=merge_wait, save_events=save_events)
    assert recording.profile is not None
    return recording.profile, status


def run_recording(script: PathLike, *args: str, outdir: Optional[PathLike] = None, skip_first: int = 1,
                  save_events: bool = False,
                  active: int = 20, merge_wait: Optional[float] = None,
                  progress: Callable[[str], None] = lambda line: None) -> Tuple[Recording, int]:
    """``run``, returning the ``Recording`` itself (its profile, its rank's folder, the merged view)."""
    import runpy
    path = os.fspath(script)
    if not os.path.isfile(path):
        raise ProfileError("%s: no such file" % path)
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec")
    except SyntaxError as e:
        raise ProgramDidNotCompile("".join(traceback.format_exception_only(type(e), e)).rstrip("\n"))
    except (OSError, ValueError) as e:
        raise ProfileError("%s: cannot read the program (%s)" % (path, e))
    command = " ".join([path] + list(args))
    recording = Recording(outdir=outdir, skip_first=skip_first, active=active, save_events=save_events,
                          name=os.path.basename(path), command=command, merge_wait=merge_wait, progress=progress)
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
            except BaseException as e:
                if interrupted(e):
                    status = 130
                else:
                    status = 1
                    _print_user_traceback(path)
                raise
    except BaseException as e:  # the program's own end: its status says it
        if not isinstance(e, (SystemExit, KeyboardInterrupt, Exception)):
            raise
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    assert recording.profile is not None
    return recording, status


def _print_user_traceback(path: str) -> None:
    """The program's traceback from its own first frame on: nnprofile's frames are not the user's concern."""
    kind, error, tb = sys.exc_info()
    frames = traceback.extract_tb(tb)
    target = os.path.abspath(path)
    first = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == target), 0)
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames[first:])
    lines += traceback.format_exception_only(kind, error)
    sys.stderr.write("".join(lines))
