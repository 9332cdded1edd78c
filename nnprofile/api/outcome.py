"""How a recording ended, in words: a program's exception shortened, a Ctrl-C or SIGTERM told apart (also inside
NNabla's C++), one line on stderr that never raises, and the spans of steps a header names."""
from __future__ import annotations

import re
import sys
from typing import Any, List, Optional, Sequence

from ..base.errors import Terminated, in_chain
from ..result import Profile
from ..result.header import ProgramHeader

MESSAGE_LIMIT = 300  # characters of a program's exception message in the log


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message on one line: whole, or cut at a word with an ellipsis, never in the middle of one."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if " " in cut and not text[limit - 1].isspace():
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def terminated(error: Optional[BaseException]) -> bool:
    """SIGTERM (``Terminated``), also as a cause inside NNabla's C++."""
    return in_chain(error, Terminated)


def interruption(error: Optional[BaseException]) -> Optional[str]:
    """How a program was interrupted, as its profile says it (SIGTERM, else Ctrl-C); None where it was not."""
    if not interrupted(error):
        return None
    return "interrupted by SIGTERM" if terminated(error) else "interrupted by Ctrl-C"


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
    header.sampling = re.sub(r" of \d+ recorded", " of %d (the whole run) recorded" % steps, header.sampling, count=1)


def _span(steps: Sequence[int]) -> str:
    if not steps:
        return "no steps"
    return "step %d" % steps[0] if len(steps) == 1 else "steps %d to %d" % (steps[0], steps[-1])


def _numbers(steps: Sequence[int]) -> str:
    shown = ", ".join(str(s) for s in steps[:6])
    return shown + (", ..." if len(steps) > 6 else "")


def run_notes(a: Any, missed: List[str], skip_first: int, recorder: Any) -> List[str]:
    """A recorded run's notes: the assembly's (``a``), what could not be recorded (``missed``), and what the run's
    shape says (fewer steps than set aside, no step found, its work in another thread, nothing recorded)."""
    notes = list(a.notes) + missed
    if a.skip < skip_first:
        notes.append("the program ran %d step%s, fewer than --skip-first %d and one active step: the skip "
                     "was shrunk to %d" % (a.steps, "" if a.steps == 1 else "s", skip_first, a.skip))
    if a.how.startswith("one step:"):
        notes.append("no steps were found (no solver update seen, no nnprofile.step(), no repeating pass): "
                     "the whole run is one step; mark the end of each step with nnprofile.step()")
    if recorder.elsewhere and (not recorder.events or a.steps == 0):
        notes.append("the program's NNabla work ran in another thread (%d functions there): nnprofile records "
                     "the thread that started it, so none of it is in these figures; put nnprofile.record() "
                     "around the loop inside that thread" % recorder.elsewhere)
    elif not recorder.events:
        notes.append("nothing was recorded: the program ran no NNabla function in this process (one that "
                     "trains in a child process, as multiprocessing starts it, is recorded by "
                     "nnprofile.record() inside that child)")
    return notes
