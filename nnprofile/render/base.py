"""What every renderer is: a name and a pure function from a profile to file contents.

A renderer module defines ``NAME`` (what ``nnprofile report --format`` calls
it), ``WHAT`` (what its files are, in a reader's words) and ``WRITES`` (every file
name it may write), and ``files(profile, analysis) -> {file name: text or bytes}``. It reads
the profile and the analysis computed once from it, and nothing else; writing
the files is ``nnprofile.render.write_all``'s job.
"""

from __future__ import annotations

from typing import Dict, Protocol, Tuple, Union

from ..analysis import Analysis
from ..result import Profile

Contents = Dict[str, Union[str, bytes]]


class Renderer(Protocol):
    NAME: str
    WHAT: str
    WRITES: Tuple[str, ...]

    def files(self, profile: Profile, analysis: Analysis) -> Contents: ...
