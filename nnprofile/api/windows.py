"""Where a long training's windows go as each closes: its own files, and the view over all of them.

With one window (the default schedule) its files are the output folder's own, as they always were.
With several, or on demand, window K's files go to ``OUTDIR/window-K/`` the moment it closes, and
``OUTDIR`` holds the view over every window so far, rewritten each time: its ``result.json`` keeps
each window in a few figures (``Profile.windows``) and the last window's sections; its trace, every
window's steps and passes on one timeline (the latest ``TRACE_WINDOWS``; their layers are in each
window's own trace). Past
``max_windows``, the oldest window's folder is removed (the view keeps its figures). Every file is
replaced whole (``nnprofile.render.files``): a reader, or a SIGKILL, at any moment finds complete
files. What is kept in memory is the figures and the coarse timeline, never a window's calls.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import signal
import threading
from typing import Callable, Iterator, List, Optional

from ..analysis import analyze
from ..analysis.windows import summarize_window
from ..recording.schedule import Schedule
from ..render import write_all
from ..base.outdir import listed, prune
from ..render.files import prepare_outdir
from ..result import Profile
from ..result.header import ProgramHeader
from ..result.timeline import TimelineEvent
from ..result.notes import Note
from ..result.windows import WindowSummary
from ..base import signals as owned
from .outcome import shorten, warn

WINDOW_DIR = "window-%d"
TRACE_WINDOWS = 200  # the view's trace holds the steps and passes of this many windows, the latest


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Ctrl-C held back while the block runs (files written together), then given to the handler it held back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: List[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda number, frame: got.append(number))
    except ValueError:  # not in the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got:  # what it would have done: the program's handler (or nnprofile's that counts it), else Python's
            owned.CTRL_C.append(signal.SIGINT)
            if callable(previous):
                previous(signal.SIGINT, None)
            elif previous != signal.SIG_IGN:
                raise KeyboardInterrupt


class WindowWriter:
    """Writes each window as it closes (``add``) into ``folder``, and the view (``view``)."""

    def __init__(self, folder: Optional[str], schedule: Schedule, progress: Callable[[str], None] = lambda line: None):
        self.folder = folder
        self.schedule = schedule
        self.progress = progress
        self.windows: List[WindowSummary] = []
        self.timeline: List[TimelineEvent] = []
        self.last: Optional[Profile] = None

    def window_folder(self, window: int) -> Optional[str]:
        if self.folder is None:
            return None
        if not self.schedule.windowed:
            return self.folder
        path = os.path.join(self.folder, WINDOW_DIR % window)
        prepare_outdir(path)
        return path

    def add(
        self,
        profile: Profile,
        window: int,
        first_step: int,
        started_s: float,
        ended_s: float,
        origin_ns: int,
        complete: bool,
    ) -> None:
        """A window closed (or the program ended in it): its files, its figures, the view, the old folders;
        a Ctrl-C meanwhile waits until they are written (then it interrupts the program, as it would have)."""
        with deferred_interrupt():
            self._add(profile, window, first_step, started_s, ended_s, origin_ns, complete)

    def _add(
        self,
        profile: Profile,
        window: int,
        first_step: int,
        started_s: float,
        ended_s: float,
        origin_ns: int,
        complete: bool,
    ) -> None:
        folder = self.window_folder(window)
        analysis = analyze(profile)
        if folder is not None:
            try:
                write_all(profile, folder, analysis=analysis)
            except BaseException:
                if folder != self.folder:
                    try:
                        os.rmdir(folder)  # made for this window, and nothing in it: no empty folder left
                    except OSError:
                        pass
                raise
        self.last = profile
        program = analysis.sections[-1] if analysis.sections else None
        if program is not None and program.step is not None:
            entry = program.section.entries_of("step")[0]
            relative = WINDOW_DIR % window if self.schedule.windowed else ""
            self.windows = [w for w in self.windows if w.window != window] + [
                summarize_window(program.step, entry, window, first_step, started_s, ended_s, complete, relative)
            ]
        self.timeline = [e for e in self.timeline if e.args.get("window") != window]
        steps = [e for e in profile.timeline if e.cat == "step"]
        if steps:
            self.timeline.append(
                TimelineEvent(
                    "window %d" % window,
                    "window",
                    origin_ns + steps[0].start,
                    origin_ns + steps[-1].end,
                    {"window": window},
                )
            )
        self.timeline += [
            TimelineEvent(e.name, e.cat, e.start + origin_ns, e.end + origin_ns, dict(e.args, window=window))
            for e in profile.timeline
            if not e.is_call
        ]
        if len({e.args.get("window") for e in self.timeline}) > TRACE_WINDOWS:  # bounded: the latest windows
            oldest = min(e.args.get("window", window) for e in self.timeline)
            self.timeline = [e for e in self.timeline if e.args.get("window") != oldest]
        if self.schedule.windowed:
            self.write_view()
            self._prune()
        if folder is not None:
            self.progress(
                "nnprofile: window %d (%s) written to %s"
                % (window, self.windows[-1].span if self.windows else "no steps", folder)
            )

    def view(self, notes: Optional[List[Note]] = None) -> Optional[Profile]:
        """The view over the windows so far: their figures, the last window's sections and header."""
        if self.last is None:
            return None
        view = copy.copy(self.last)
        view.windows = list(self.windows)
        view.timeline = list(self.timeline)
        view.notes = list(self.last.notes) + list(notes or [])
        view.header = copy.copy(self.last.header)
        if isinstance(view.header, ProgramHeader):
            view.header.window = 0
        return view

    def write_view(self, notes: Optional[List[Note]] = None) -> Optional[Profile]:
        """The view over every window, into the output folder; it lists the windows' files with its own (a later
        run into the folder removes them as its own)."""
        view = self.view(notes)
        if view is not None and self.folder is not None:
            write_all(view, self.folder, also=self._window_files())
        return view

    def _window_files(self) -> List[str]:
        out: List[str] = []
        for w in self.windows:
            if w.folder and self.folder is not None:
                out += ["%s/%s" % (w.folder, f) for f in listed(os.path.join(self.folder, w.folder))]
        return out

    def _prune(self) -> None:
        keep = self.schedule.max_windows
        if not keep or self.folder is None:
            return
        for w in self.windows[:-keep]:
            if w.folder:
                folder = os.path.join(self.folder, w.folder)
                prune(self.folder, ["%s/%s" % (w.folder, f) for f in listed(folder)], [])  # its files, and no other
                w.folder = ""  # its files are no longer kept; its figures are


class WindowCallback:
    """The user's ``on_window``: called with each window's profile; its exception is the user's, said on stderr
    with its traceback (in full the first time, in one line after), and the recording goes on."""

    def __init__(self, callback: Callable[[Profile], None]):
        self.callback = callback
        self.failed = False

    def __call__(self, profile: Profile, window: int) -> None:
        try:
            self.callback(profile)
        except Exception as e:
            import traceback

            if not self.failed:
                warn("nnprofile: on_window raised on window %d; the recording goes on. Its traceback:" % window)
                try:  # the user's own code's traceback, as Python shows it
                    traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
                except Exception:
                    pass
            else:
                warn(
                    "nnprofile: on_window raised again on window %d (%s: %s)"
                    % (window, type(e).__name__, shorten(str(e)))
                )
            self.failed = True
