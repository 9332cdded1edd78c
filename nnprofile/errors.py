"""Errors the user can act on: each becomes one line on stderr and an exit code."""


class ProfileError(Exception):
    """A problem with the user's input or environment, not a bug in nnprofile."""

    exit_code = 2


class Interrupted(ProfileError):
    """The user pressed Ctrl-C; what was measured so far is kept."""

    exit_code = 130
