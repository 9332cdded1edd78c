"""How a recording ended, in words: a program's exception shortened, a Ctrl-C or SIGTERM told apart (also inside
NNabla's C++), one line on stderr that never raises, and the spans of steps a header names."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, List, Optional, Type, Union

from ..base.errors import Terminated, found_in_chain, in_chain
from ..result import Profile
from ..result.header import ProgramHeader
from ..result.notes import Note

if TYPE_CHECKING:
    from ..base.schedule import Schedule
    from ..recording.recorder import Recorder

ExitKind = Optional[Type[BaseException]]  # what ``__exit__`` is given
Status = Union[int, str, None]  # the status a program chose to exit with

MESSAGE_LIMIT = 300  # characters of a program's exception message in the log


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message on one line: whole, or cut at a word with an ellipsis, never in the middle of one."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut and not text[limit - 1].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def terminated(error: Optional[BaseException]) -> bool:
    """SIGTERM (``Terminated``), also as a cause inside NNabla's C++."""
    return in_chain(error, Terminated)


def interruption(error: Optional[BaseException]) -> Optional[str]:
    """How a program was interrupted, as its profile says it (SIGTERM or SIGHUP, else Ctrl-C); None where it was
    not."""
    if not interrupted(error):
        return None
    return "interrupted by %s" % signal_name(error)


def signal_name(error: Optional[BaseException]) -> str:
    """The signal behind an interruption: SIGTERM or SIGHUP (``Terminated``), else Ctrl-C."""
    found = found_in_chain(error, Terminated)
    return str(getattr(found, "signal_name", "SIGTERM")) if found is not None else "Ctrl-C"


def exit_code(error: Optional[BaseException]) -> int:
    """The status an interruption ends a run with: 143 (SIGTERM), 129 (SIGHUP), 130 (Ctrl-C)."""
    found = found_in_chain(error, Terminated)
    return int(getattr(found, "exit_code", 143)) if found is not None else 130


def interrupted(error: Optional[BaseException], before: Optional[BaseException] = None) -> bool:
    """Ctrl-C, also when it arrived inside NNabla's C++ (a pass calling a hook): Python then raises
    SystemError ("returned a result with an exception set") with the KeyboardInterrupt as its cause.
    ``before``: an exception being handled meanwhile, whose own chain does not count."""
    return in_chain(error, KeyboardInterrupt, before)


def _reason(e: BaseException) -> str:
    """An error in a few words: an OSError by its own (No space left on device: /out/x), else its type and text."""
    if isinstance(e, OSError) and e.strerror:
        return "%s%s" % (e.strerror, ": %s" % e.filename if e.filename else "")
    return "%s: %s" % (type(e).__name__, e)


def warn(line: str) -> None:
    """One line on stderr (never raised: a closed stderr is no reason to stop the program)."""
    try:
        from ..render.safe import safe_text

        print(safe_text(line), file=sys.stderr, flush=True)
    except Exception:
        pass


def offset_steps(profile: Optional[Profile]) -> int:
    """The last step a profile's header names."""
    h = getattr(profile, "header", None)
    kept = list(getattr(h, "kept_steps", []) or []) + list(getattr(h, "plain_steps", []) or [])
    return max(kept) if kept else 0


def whole_run(header: ProgramHeader, steps: int) -> None:
    """The final files' header: the steps the whole run went through (a window's own files keep theirs)."""
    header.run_steps = steps
    if header.sampling.kind == "sampling_steps":
        header.sampling = Note(header.sampling.kind, dict(header.sampling.figures, recorded=steps, whole_run=True))


def unfinished_notes(
    recorder: Recorder,
    schedule: Schedule,
    profile: Profile,
    kind: ExitKind,
    error: Optional[BaseException],
    filled: bool = False,
) -> List[Note]:
    """What the notes say of a run that ended inside a window (``filled``: after its kept steps), or before any:
    what the window holds, and the program's own exit status."""
    r, notes = recorder, []
    if r.capturing and r.windowing.window and (schedule.windowed or schedule.wait) and not filled:
        kept = list(getattr(profile.header, "kept_steps", []))
        notes.append(Note("window_unfilled", {"window": r.windowing.window, "kept_steps": kept}))
    if not r.windowing.window:
        notes.append(Note("no_window", {"steps": r.steps.done, "on_demand": bool(schedule.on_demand)}))
    status = exit_status(kind, error)
    if status is not None:  # the program's own choice: not a failure
        notes.append(Note("exit_status", {"status": status}))
    return notes


def exit_status(kind: ExitKind, error: Optional[BaseException]) -> Status:
    """The status a program chose to exit with, where not 0 (a number, else its words); None otherwise."""
    if kind is not SystemExit or not isinstance(error, SystemExit) or error.code in (None, 0):
        return None
    return error.code if isinstance(error.code, int) and not isinstance(error.code, bool) else str(error.code)


def after_windows(recorder: Recorder, failure: Optional[str], status: Status) -> Note:
    """The note at the program's end: the steps it ran after the last window, the time after its last step,
    how it ended (``failure``, else its own exit ``status``, else normally)."""
    r = recorder
    recorded = r.windowing.window_end
    tail = max(0.0, (r.ended_ns - r.windowing.last_step_ns) / 1e9) if r.windowing.last_step_ns else 0.0
    return Note(
        "after_windows",
        {
            "window": max(1, r.windowing.window),
            "last_step": recorded,
            "measured_steps": len(r.windowing.windows.calibration) if r.windowing.window == 1 else 0,
            "more_steps": max(0, r.steps.done - recorded),
            "tail_s": tail,
            "failure": failure,
            "status": status,
        },
    )
