"""Input read whole is a regular file: a named pipe would block the read for ever, a device (``/dev/zero``) never
ends and reports a size of 0, so the size bounds that guard every input cannot see it. Checked before opening."""

from __future__ import annotations

import os
import stat

from .errors import ProfileError


def kind(mode: int) -> str:
    """What a path that is no regular file is, in words."""
    for test, what in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "no regular file"


def check_regular(path: str, what: str = "file") -> None:
    """One clear error where ``path`` exists and is not a regular file (a missing one, or a folder, is the caller's
    to say)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise ProfileError("%s: cannot be read (%s)" % (path, e.strerror or e))
    if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
        raise ProfileError("%s: %s, not a %s: not read" % (path, kind(mode), what))


def require_regular(path: str, what: str) -> None:
    """``path`` a regular file (never opened otherwise: a FIFO would block the reader), else one error naming it by
    ``what`` (never by what it holds)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise ProfileError("%s cannot be read (%s)" % (what, e.strerror or type(e).__name__))
    if not stat.S_ISREG(mode):
        raise ProfileError("%s is %s, not a file to read" % (what, kind(mode)))


def is_regular(path: str) -> bool:
    """Whether ``path`` is a regular file (a missing one is not)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
