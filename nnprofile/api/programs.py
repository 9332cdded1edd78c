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
import gc
import os
import threading
import time
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Callable, List, MutableMapping, Optional, Sequence, Union

from ..base import machine
from ..base import signals as owned
from ..base.outdir import named
from ..render.files import Unlisted, claim_outdir, prepare_outdir, release_outdir
from ..recording.schedule import Schedule, make_schedule  # noqa: F401 (the API's, and run's)
from ..result import Profile
from ..result.header import ProgramHeader
from ..result.notes import Note
from ..render.notes import text as note_text
from .outcome import (  # noqa: F401  (shorten: the API's)
    ExitKind,
    _reason,
    after_windows,
    exit_status,
    interrupted,
    interruption,
    offset_steps,
    shorten,
    signal_name,
    terminated,
    unfinished_notes,
    warn,
    whole_run,
)
from ..base.quiet import DeferredLogSetup, Saved, collector_paused, own_process
from .windows import WindowCallback, WindowWriter

if TYPE_CHECKING:
    from ..base.hookcost import HookCosts
    from ..base.interference import Probe
    from ..base.outdir import Lock
    from ..recording.launcher import World
    from ..recording.recorder import Recorder
    from .guard import TerminationGuard
    from .ondemand import Listener

PathLike = Union[str, "os.PathLike[str]"]

_ACTIVE: list = []  # the recordings in progress, innermost last


def _forked() -> None:
    """In a child the program forked: every recording is the parent's; the child runs unrecorded, writes nothing."""
    for recording in _ACTIVE:
        recording.forked = True
        recording.recorder.detach()
    del _ACTIVE[:]


def step() -> None:
    """Mark the end of a step of the program being recorded (a no-op when nothing records)."""
    if _ACTIVE:
        _ACTIVE[-1].step()


class Recording:
    """``with nnprofile.record(outdir=...) as rec:`` around a program's own code.

    Every NNabla function's forward and backward, every solver call, every wait for a
    batch and every monitor inside the block is recorded; steps are the iterations of
    the program's loop (see ``nnprofile.assembly.steps``), or what ``rec.step()`` marks.
    After the block, ``rec.profile`` is a ``Profile`` (and the files are in ``outdir``,
    if given). ``namespaces``: where solvers made before the block are (a notebook's
    namespace): they are timed too.

    Under a launcher (``mpirun``, ``srun``; see ``nnprofile.recording.launcher``), or once the
    program's communicator says it is one rank of several, each rank writes into
    ``outdir/rank-K/``, and rank 0 then waits up to ``merge_wait`` seconds for the other ranks'
    results and writes their merged view into ``outdir`` (``rec.merged``). A rank ended by SIGTERM
    (``mpirun`` ends them all when one dies) still writes what it recorded.
    """

    def __init__(
        self,
        outdir: Optional[PathLike] = None,
        skip_first: int = Schedule.warmup,
        active: int = Schedule.active,
        name: str = "recording",
        command: Optional[str] = None,
        clock: Optional[Callable[[], int]] = None,
        hook_costs: Optional[HookCosts] = None,
        namespaces: Sequence[MutableMapping[str, Any]] = (),
        merge_wait: Optional[float] = None,
        world: Optional[World] = None,
        progress: Callable[[str], None] = lambda line: None,
        save_events: bool = False,
        schedule: Optional[Schedule] = None,
        on_window: Optional[Callable[[Profile], None]] = None,
        probe: Optional[Probe] = None,
    ):
        from ..merging.ranks import DEFAULT_WAIT
        from ..recording import launcher
        from ..recording.driver import ProgramRun
        from ..recording.recorder import Recorder

        # Fixed now: a program that changes its working folder (os.chdir) moves nothing nnprofile writes.
        self.outdir = os.path.abspath(named(outdir)) if outdir is not None else None
        self._imports: Optional[Saved] = None  # the process as the recording began (``own_process``)
        self.stopped = False  # a second Ctrl-C or SIGTERM stopped the writing, as asked
        self.name = name
        self.command = command or name
        self.schedule = schedule or Schedule(warmup=max(0, skip_first), active=max(1, active))
        self.skip_first, self.active = self.schedule.warmup, self.schedule.active
        self.namespaces = tuple(namespaces)
        self.on_window = WindowCallback(on_window) if on_window is not None else None  # as each window closes
        # Where the hooks' cost is measured (not given), a few steps after the first window run without them.
        # ``clock`` and ``probe`` (the kernel's accounting of other work): scripted ones in tests.
        self.world = world if world is not None else launcher.world()
        self.run = ProgramRun(
            self.name,
            self.command,
            self.schedule,
            self.world,
            hook_costs,
            lambda: Recorder(
                clock=clock,
                namespaces=self.namespaces,
                calibrate=hook_costs is None,
                schedule=self.schedule,
                on_window=self._window_closed,
                probe=probe,
            ),
        )
        self.merge_wait = DEFAULT_WAIT if merge_wait is None else merge_wait
        self.save_events = save_events  # write it too, as events.json.gz
        self.progress = progress
        self._run_state()

    def _run_state(self) -> None:
        """What the run finds as it goes: its writer and files, its profile, its errors."""
        self.writer: Optional[WindowWriter] = None
        self.listener: Optional[Listener] = None  # on demand: the signal's handler
        self._run_start_ns = 0
        self.profile: Optional[Profile] = None
        self.merged: Optional[Profile] = None  # rank 0 of several: the ranks' merged view
        self.written_to: Optional[str] = None  # where this process's own result went
        self._locks: List[Lock] = []  # the output folders this run holds
        self.missed: List[Note] = []  # windows that could not be written (said in the next files)
        self._counted = 0  # the last window the on-demand status counted
        self.unrecorded: Optional[str] = None  # recording could not start: the program ran unrecorded
        self.error: Optional[str] = None  # the profile could not be made or written, and why
        self.unlisted = False  # its files were written whole, but result.json does not list them (``Unlisted``)
        self.error_traceback = ""
        self._guard: Optional[TerminationGuard] = None
        self._log: Optional[DeferredLogSetup] = None  # NNabla's logging, set up where the program imports it
        self.forked = False  # this process is a child the program forked: the recording is its parent's
        self.ended = False  # its end came (files written, or not), once
        self.ended_by: Optional[str] = None  # how it ended where the program did not unwind (os.exec*)
        self.raised_interrupt = False  # a KeyboardInterrupt the program raised itself (no Ctrl-C came)

    @property
    def recorder(self) -> Recorder:
        """The recorder of this run."""
        return self.run.recorder

    def runs_program_below(self, frame: FrameType) -> None:
        """A launcher's frame, from which the program runs: its stacks are taken up to it, never beyond."""
        try:
            self.recorder.stacks.outside(frame)
        except Exception:  # the stacks then walk to the top: slower, no less right
            pass

    def __enter__(self) -> "Recording":
        owned.in_child(_forked)
        self._imports = Saved()
        if self.outdir is not None:  # one run at a time in a folder: the second is refused, in one line
            if self.world is not None and self.world.several:
                prepare_outdir(self.outdir)
                self._locks.append(claim_outdir(self._rank_folder(self.world.rank)))
                if self.world.rank == 0:  # the merged view's folder
                    self._locks.append(claim_outdir(self.outdir))
            else:
                self._locks.append(claim_outdir(self.outdir))
        self._log = log = DeferredLogSetup()  # (the root logger as it is before NNabla's import)
        import nnabla  # noqa: F401  (its import logs "Initializing CPU extension...": the program's own line, unquieted)

        log.imported()  # (its logging set up again where the program imports it)

        self.run.calibrate()
        self.run.started_unix = time.time()
        folder = self.outdir
        if folder is not None and self.world is not None and self.world.several:
            from ..recording.launcher import rank_dir

            folder = rank_dir(folder, self.world.rank)
        self.writer = WindowWriter(folder, self.schedule, self.progress)
        if self.schedule.on_demand:
            from .ondemand import Listener

            self.listener = Listener(
                self.recorder.windowing.request_window, self.schedule.signal, folder, self.progress
            )
            self.listener.install()
            self.recorder.windowing.watch = self.listener.check
        with self.run.spent("machine"):
            machine.measure()  # what this machine reaches, once, before the program runs (not inside it)
        # What calibrating and measuring left (17,000 objects) is not left for the program's own full collections to
        # walk: they would pause its steps longer than when it runs alone.
        gc.collect()
        try:
            self.recorder.start()
        except Exception as e:  # the program runs unrecorded: nnprofile's failure is no reason to stop it
            self.unrecorded = "%s: %s" % (type(e).__name__, e)
            warn("nnprofile: could not record (%s); the program runs unrecorded" % self.unrecorded)
        self._run_start_ns = self.recorder.window.started_ns
        _ACTIVE.append(self)
        if self.outdir is not None and self.world is not None and self.world.several:
            from .guard import TerminationGuard

            self._guard = TerminationGuard(self._terminated).__enter__()
        return self

    def _rank_folder(self, rank: int, clean: bool = True) -> str:
        """OUTDIR/rank-K, made, with no result of an earlier run left in it (``clean``: a merge must not take
        that)."""
        from ..recording.launcher import rank_dir
        from ..result import file as result_file

        assert self.outdir is not None
        folder = rank_dir(self.outdir, rank)
        prepare_outdir(folder)
        if clean:
            try:
                os.remove(os.path.join(folder, result_file.FILENAME))
            except OSError:
                pass
        return folder

    def run_world(self) -> Optional[World]:
        """The launcher's world, else the one the program's communicator told when it was initialised."""
        return self.run.run_world()

    def _terminated(self) -> None:
        """SIGTERM (from the watcher thread; the main thread may be blocked in a collective): write what was
        recorded so far, result.json first, in the second or so before the launcher's SIGKILL."""
        snapshot = copy.copy(self.recorder)
        snapshot.window = self.recorder.window.copy()
        profile = self.run.profile(
            "ended by SIGTERM (the launcher stopped this rank, as it does when another rank dies)",
            self.missed,
            snapshot,
            measure=False,
        )
        world = self.run_world()
        if self.outdir is not None and world is not None:
            self._write(profile, self._rank_folder(world.rank))

    def step(self) -> None:
        self.recorder.step()

    def __exit__(self, kind: ExitKind, error: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        """The recording's end: its files. A failure of nnprofile's own here never replaces the program's own
        outcome (its exception, its exit): it is kept in ``error`` and said in one line. A Ctrl-C is said at
        once; a second one while the files are made stops that (files are whole or not there) and is said. In a
        child the program forked, nothing: the recording and its folder are the parent's."""
        if self.forked or self.ended:
            return
        self.ended = True
        how = self._how(error)
        try:
            if how:
                warn(
                    "nnprofile: %s: writing what was recorded%s"
                    % (how, "" if terminated(error) else " (Ctrl-C again to stop without writing)")
                )
            self._stop_recorder()  # first, and alone: the program's NNabla is its own again, whatever follows
            with own_process(self._imports), collector_paused():
                self._finish(kind, error, tb)
        except (Exception, KeyboardInterrupt) as e:
            self._stop_recorder()  # a second Ctrl-C may have come before it was stopped
            if interrupted(e, before=error):  # a second Ctrl-C or SIGTERM (also inside NNabla's C++): stop, as asked
                self.profile = None
                self.error = "a second %s stopped it before all its files were written (any written is whole)" % (
                    signal_name(e)
                )
                self.stopped = True  # as the user asked: no error of nnprofile's
            else:
                import traceback

                self.error = _reason(e)
                self.error_traceback = traceback.format_exc()
                self.unlisted = isinstance(e, Unlisted)
                if not self.unlisted:
                    warn("nnprofile: the profile could not be made (%s)" % self.error)
        finally:
            for lock in reversed(self._locks):
                release_outdir(lock)
            self._locks = []
            self.recorder.forget()  # (the program's proxies keep the recorder: not what it recorded)
            self.run.capture = None  # (what the files were made of: the profile stays)

    def _how(self, error: Optional[BaseException]) -> Optional[str]:
        """How the run was interrupted (``interruption``); None for a KeyboardInterrupt the program raised itself,
        which is its exception like any other."""
        return None if self.raised_interrupt else interruption(error)

    def end_now(self, reason: str) -> None:
        """The program's process ends here without unwinding (it replaces itself: ``os.execv``): what was recorded
        is written now, marked ended by ``reason``, and the folder's lock let go."""
        if self.forked or self.ended:
            return
        self.ended_by = reason
        warn("nnprofile: %s: writing what was recorded" % reason)
        self.__exit__(None, None, None)

    def _stop_recorder(self) -> None:
        """The recorder stopped (its hooks, wrappers and sampler off); a failure of its own noted, never raised."""
        try:
            self.recorder.stop()
        except Exception as e:
            self.recorder.faults.add("ending the recording", e)

    def _finish(self, kind: ExitKind, error: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self.recorder.stop()
        if self._log is not None:
            self._log.end()
        if self.listener is not None:
            self.listener.uninstall()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if self._guard is not None and not self._guard.claim():
            threading.Event().wait()  # a SIGTERM came first: its thread writes the result and ends the process
        failure = self.ended_by or self._how(error)
        if failure is None and kind is not None and kind is not SystemExit:
            said = shorten(str(error))
            failure = "the program raised %s%s" % (kind.__name__, ": %s" % said if said else "")
        r = self.recorder
        last = self.writer.last if self.writer is not None else None
        if r.capturing or last is None:  # a window under way (what it holds is written), or none recorded yet
            if not interrupted(error):
                self.run.calibrate_again()
            self.profile = self.run.profile(failure, self.missed)
            # A window whose kept steps all ran is whole, though the program ended in the steps without the hooks
            # after them: the user's on_window gets it, as it gets every window that closes.
            filled = r.capturing and len(getattr(self.profile.header, "kept_steps", [])) >= self.schedule.active
            self.profile.notes += unfinished_notes(self.recorder, self.schedule, self.profile, kind, error, filled)
            if r.capturing and self.schedule.windowed:
                self._add_window(self.profile, r, complete=filled)
            if filled and self.on_window is not None and failure is None:
                self.on_window(self.profile, r.windowing.window)
            end_notes: List[Note] = []
        else:  # every window closed: the program ran on untouched after the last; say what happened then
            self.profile = last
            end_notes = [after_windows(self.recorder, failure, exit_status(kind, error))]
            if not r.steps.countable and (self.schedule.repeat != 1 or self.schedule.on_demand):
                end_notes.append(Note("steps_uncounted"))
            if failure:  # the run did not end as it should: the windows closed are whole, the view says so
                self.profile.complete, self.profile.failure = False, failure
        counted = max(r.steps.done, offset_steps(self.profile))
        if self.profile is not None and isinstance(self.profile.header, ProgramHeader) and counted:
            whole_run(self.profile.header, counted)
        try:
            if self.outdir is not None:
                self._write_results(end_notes)
        finally:
            if self._guard is not None:
                self._guard.__exit__(None, None, None)

    def _window_closed(self, recorder: Recorder) -> None:
        """A window's steps are done (the recorder calls this with the hooks off, from the program's thread,
        between its calls): its profile, written at once; then the program runs on untouched."""
        try:
            with own_process(self._imports), collector_paused(), self.run.spent("windows"):
                profile = self.run.profile(None, self.missed, recorder)
                self._add_window(profile, recorder, complete=True)
        except (
            Exception
        ) as e:  # a full disk, a bug of nnprofile's: said once, noted in the next files; the program goes on
            missed = Note("window_not_written", {"window": recorder.windowing.window, "reason": _reason(e)})
            warn("nnprofile: %s; the program goes on" % note_text(missed))
            self.missed.append(missed)
            return
        self.missed = []
        if self.on_window is not None:
            self.on_window(profile, recorder.windowing.window)

    def _add_window(self, profile: Profile, recorder: Recorder, complete: bool) -> None:
        self.profile = profile
        if self.writer is None:
            return
        h = profile.header
        kept = list(getattr(h, "kept_steps", []))
        origin = self.run.origin_ns - self._run_start_ns
        stopped = recorder.window.stopped_ns
        ended = stopped if stopped and not recorder.capturing else recorder.clock()
        self.writer.add(
            profile,
            recorder.windowing.window,
            kept[0] if kept else recorder.windowing.window_start + 1,
            origin / 1e9,
            max(0, ended - self._run_start_ns) / 1e9,
            origin,
            complete,
        )
        folder = self.writer.window_folder(recorder.windowing.window)
        if self.listener is not None and self._counted != recorder.windowing.window:  # each window once
            self._counted = recorder.windowing.window
            self.listener.window_written()
        if self.save_events and self.run.capture is not None and folder is not None:
            from ..assembly import capture_file as events

            events.save(self.run.capture, os.path.join(folder, events.FILENAME))
        if not self.save_events:
            self.run.capture = None  # the window's raw calls: not kept past it (the program runs on, and on)

    def _write_results(self, end_notes: Sequence[Note] = ()) -> None:
        assert self.outdir is not None and self.profile is not None
        world = self.run_world()
        folder = self.outdir if world is None or not world.several else self._rank_folder(world.rank, clean=False)
        if self.schedule.windowed and self.writer is not None and self.writer.last is not None:
            view = self.writer.write_view(list(end_notes))
            assert view is not None
            self.profile = view
            self.written_to = self.written_to or folder
        else:
            self.profile.notes += list(end_notes)
            self._write(self.profile, folder)
        if world is None or not world.several:
            return
        if world.rank == 0:
            from ..merging.ranks import collect, merge, spans

            found = collect(self.outdir, world.size, 0.0, world.launch, self.run.started_unix - 60)
            if found.missing and self.merge_wait > 0:
                self.progress(
                    "nnprofile: waiting up to %g s for the results of rank%s %s"
                    % (self.merge_wait, "s" if len(found.missing) > 1 else "", spans(found.missing))
                )
                found = collect(self.outdir, world.size, self.merge_wait, world.launch, self.run.started_unix - 60)
            self.merged = merge(found)
            self._write(self.merged, self.outdir)

    def _write(self, profile: Profile, folder: str) -> None:
        from ..render import write_all

        self.written_to = self.written_to or folder
        write_all(profile, folder)
        if self.save_events and self.run.capture is not None and profile is self.profile:
            from ..assembly import capture_file as events

            events.save(self.run.capture, os.path.join(folder, events.FILENAME))
