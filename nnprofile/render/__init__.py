"""Renderers: each turns a profile (and its analysis) into output files, and reads nothing else.

``RENDERERS`` maps a format name to its renderer module (see ``render.base``);
``write_all`` writes what they render, plus result.json, the data they come from.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence

from ..analysis import Analysis, analyze
from ..result import Profile, file as result_file
from . import csv_files, html, log, trace, xlsx
from .base import Contents, Renderer

RENDERERS: Dict[str, Renderer] = {r.NAME: r for r in (log, csv_files, xlsx, html, trace)}
FORMATS = tuple(RENDERERS)


def render(profile: Profile, formats: Optional[Sequence[str]] = None,
           analysis: Optional[Analysis] = None) -> Contents:
    """File name -> contents for the formats asked (all by default); the analysis is computed once."""
    analysis = analysis or analyze(profile)
    contents: Contents = {}
    for name in formats or FORMATS:
        contents.update(RENDERERS[name].files(profile, analysis))
    return contents


def write_files(contents: Contents, outdir: str) -> List[str]:
    """Write each file whole (a temporary file renamed into place): never a half-written output."""
    paths = []
    for name, data in contents.items():
        path = os.path.join(outdir, name)
        tmp = path + ".tmp"
        if isinstance(data, bytes):
            with open(tmp, "wb") as f:
                f.write(data)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(data)
        os.replace(tmp, path)
        paths.append(path)
    return paths


def write_all(profile: Profile, outdir: str, save_result: bool = True,
              formats: Optional[Sequence[str]] = None) -> List[str]:
    """Write result.json (first: the data, should the process be stopped while the rest renders) and
    every output file; returns the paths."""
    written = [result_file.save(profile, outdir)] if save_result else []
    written += write_files(render(profile, formats), outdir)
    profile.location = outdir
    return written
