"""Errors the user can act on: each becomes one line on stderr and an exit code."""

from __future__ import annotations

from typing import Any, Optional


class ProfileError(Exception):
    """A problem with the user's input or environment, not a bug in nnprofile.

    ``profile`` holds what was measured before the failure (a partial
    ``Profile``, marked incomplete), or None when nothing was.
    """

    exit_code = 2

    def __init__(self, message: str, profile: Optional[Any] = None):
        super().__init__(message)
        self.profile = profile


class Interrupted(ProfileError):
    """The user pressed Ctrl-C; what was measured so far is kept."""

    exit_code = 130


class ProgramDidNotCompile(ProfileError):
    """A recorded program with a syntax error: its message is Python's own lines, shown as they are."""

    exit_code = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception in the program's main thread by ``nnprofile run``: the program unwinds
    as from a Ctrl-C, what was recorded is written (marked interrupted), and the run exits with 143."""

    exit_code = 143
    signal_name = "SIGTERM"


class HungUp(Terminated):
    """SIGHUP (the terminal closed, a session ended), turned into an exception as SIGTERM is; the run exits
    with 129. Not where the program ignores it (``nohup``): then it is the program's, as alone."""

    exit_code = 129
    signal_name = "SIGHUP"


def in_chain(error: Optional[BaseException], kind: type, before: Optional[BaseException] = None) -> bool:
    """Whether ``error`` or an exception in its chain (its causes and contexts) is a ``kind``; ``before``: an
    exception being handled meanwhile, whose own chain does not count."""
    return found_in_chain(error, kind, before) is not None


def found_in_chain(
    error: Optional[BaseException], kind: type, before: Optional[BaseException] = None
) -> Optional[BaseException]:
    """The first ``kind`` in ``error``'s chain (``in_chain``), or None."""
    seen = set()
    found = error
    while found is not None and id(found) not in seen and found is not before:
        if isinstance(found, kind):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None


def caused_by_interrupt(error: BaseException) -> bool:
    """Whether ``error`` is a Ctrl-C that arrived inside NNabla's C++ (a pass calling back into Python): Python
    then raises SystemError ("returned a result with an exception set") with the KeyboardInterrupt in its chain."""
    return in_chain(error, KeyboardInterrupt)
