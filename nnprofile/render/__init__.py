"""Renderers: each turns a profile (and its analysis) into output files, and reads nothing else;
one module per output (log, CSV files, workbook, HTML report, trace), a notebook's inline view,
a comparison's files and check's verdicts.

``RENDERERS`` (``files.RENDERERS``) maps a format name to its renderer module (see ``render.base``); ``write_all``
writes what they render, plus result.json, the data they come from (``files``).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from ..analysis import Analysis, analyze
from ..result import Profile
from . import comparison, csv_files, files, html, inline, log, trace, xlsx  # noqa: F401 (the renderers, by name)
from .base import Contents
from .files import RENDERERS, claim_outdir, prepare_outdir, release_outdir, write_files  # noqa: F401 (the API's)

FORMATS = tuple(RENDERERS)


def described() -> str:
    """Every format's files, as a help text says them: ``the text log (profile.log), ...``."""
    return ", ".join("%s (%s)" % (r.WHAT, ", ".join(r.WRITES)) for r in RENDERERS.values())


def render(profile: Profile, formats: Optional[Sequence[str]] = None, analysis: Optional[Analysis] = None) -> Contents:
    """File name -> contents for the formats asked (all by default, none for an empty list); the analysis is computed
    once."""
    if formats is not None and not formats:
        return {}
    analysis = analysis or analyze(profile)
    contents: Contents = {}
    for name in FORMATS if formats is None else formats:
        contents.update(RENDERERS[name].files(profile, analysis))
    return contents


def write_all(
    profile: Profile,
    outdir: str,
    save_result: bool = True,
    formats: Optional[Sequence[str]] = None,
    analysis: Optional[Analysis] = None,
    also: Sequence[str] = (),
) -> List[str]:
    """Write result.json (first) and every output file into ``outdir``; returns the paths. ``analysis``:
    the profile's, where the caller has it already; ``also``: files written into the folder besides."""
    return files.write_all(profile, outdir, lambda p, f: render(p, f, analysis), save_result, formats, also)
