"""``nnprofile check``'s API: two saved results compared, or two projects profiled in turns and then compared.

A saved result is one run: its figures carry the run's own uncertainty, and a run-to-run spread assumed from
``make bench``. Where one run of each cannot resolve the threshold, ``check`` says how many would; given two NNC
projects and ``repeat``, each is profiled that many times in fresh processes, interleaved (baseline, new,
baseline, ...: a slow spell of the machine hits both alike), each side's runs pooled, so that the run-to-run
spread is measured, not assumed.
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Sequence

from ..base.errors import ProfileError
from ..compare.gate import Check, check
from ..merging.fresh import profile_in_fresh_process, record_in_fresh_process
from ..merging.profiles import merge_runs
from ..result import Profile
from .projects import load

PROJECT_SUFFIXES = (".nntxt", ".nnp", ".prototxt")


def is_project(path: str) -> bool:
    return os.path.isfile(path) and path.lower().endswith(PROJECT_SUFFIXES)


def is_script(path: str) -> bool:
    return os.path.isfile(path) and path.lower().endswith(".py")


def interleaved(
    baseline: Sequence[str],
    new: Sequence[str],
    repeat: int,
    outdir: str,
    arguments: Sequence[str] = (),
    progress: Callable[[str], None] = lambda line: None,
) -> "tuple[Profile, Profile]":
    """Each project (or each Python program: ``nnprofile run``) profiled ``repeat`` times in fresh processes, in
    turns; each side's runs pooled."""
    if repeat < 2:
        raise ProfileError("--repeat %d: interleaved runs need 2 or more of each" % repeat)
    sides = {"baseline": (list(baseline), []), "new": (list(new), [])}  # type: dict
    for i in range(1, repeat + 1):
        for name, (files, runs) in sides.items():
            progress("run %d of %d, %s ..." % (i, repeat, name))
            folder, what = os.path.join(outdir, name, str(i)), "%s run %d of %d" % (name, i, repeat)
            if all(is_script(f) for f in files):
                runs.append(record_in_fresh_process(files[0], folder, arguments, what))
            else:
                runs.append(profile_in_fresh_process(files, folder, arguments, what))
    pooled = [merge_runs(runs, runs[0].header.drift_threshold) for _, runs in sides.values()]
    return pooled[0], pooled[1]


def gate(
    baseline: str,
    new: str,
    threshold: float = 0.10,
    layers: bool = False,
    strict_order: bool = False,
    repeat: Optional[int] = None,
    outdir: Optional[str] = None,
    progress: Callable[[str], None] = lambda line: None,
    allow_incomplete: bool = False,
) -> Check:
    """Check ``new`` against ``baseline``: two saved results (folders or result.json files), or with ``repeat``
    two NNC projects profiled in turns (``interleaved``) into ``outdir``."""
    if repeat is not None:
        if not (is_project(baseline) and is_project(new)) and not (is_script(baseline) and is_script(new)):
            raise ProfileError(
                "--repeat profiles the two again, in turns: give two NNC project files (.nntxt, .nnp) or two "
                "Python programs (.py), not saved results"
            )
        a, b = interleaved([baseline], [new], repeat, outdir or os.path.join("results", "check"), progress=progress)
        return check(
            a, b, threshold=threshold, layers=layers, strict_order=strict_order, allow_incomplete=allow_incomplete
        )
    for path in (baseline, new):
        if is_project(path) or is_script(path):
            raise ProfileError(
                "%s is a %s, not a result: profile it first, or give --repeat N to profile both in turns"
                % (path, "project" if is_project(path) else "program")
            )
    return check(
        load(baseline),
        load(new),
        threshold=threshold,
        layers=layers,
        strict_order=strict_order,
        allow_incomplete=allow_incomplete,
    )
