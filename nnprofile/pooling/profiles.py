"""``--repeat N``: the profile taken in N fresh processes, the results pooled (as pyperf spawns workers).

A whole run can land on a slow machine; nothing inside that run can tell.
Across fresh processes it shows: the rounds of every run are pooled, the
machine's usual speed is taken over all of them, and the rounds (of any run)
that ran slower than it are left out, as within one run. Each entry keeps
its per-process means (``run_means``), so that the run-to-run spread is
reported beside the pooled figure.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Callable, Dict, List, Optional, Sequence

from ..base.errors import ProfileError
from ..result import Entry, Profile, Section, file as result_file
from ..base.stats import Drift, speed_levels

# Keyword of nnprofile.profile -> its command-line flag (None: a switch).
FLAGS: Dict[str, str] = {
    "runs": "--runs", "warmup": "--warmup", "target_rse": "--target-rse", "min_rounds": "--min-rounds",
    "max_seconds": "--max-seconds", "max_seconds_per_entry": "--max-seconds-per-entry",
    "drift_threshold": "--drift-threshold", "context": "--context", "type_config": "--type-config",
    "batch_size": "--batch-size", "mode": "--mode", "memory_limit": "--memory-limit",
}
SWITCHES: Dict[str, str] = {"synthetic": "--synthetic", "zero_weights": "--zero-weights"}
NEGATED: Dict[str, str] = {"layers": "--no-layers", "training": "--no-training", "inference": "--no-inference"}


def command_line(files: Sequence[str], outdir: str, options: Dict[str, object]) -> List[str]:
    """The command that profiles once, in a fresh process, with the same options."""
    cmd = [sys.executable, "-m", "nnprofile", *files, "-o", outdir, "-q"]
    for key, value in options.items():
        if value is None:
            continue
        if key in FLAGS:
            cmd += [FLAGS[key], str(value)]
        elif key in SWITCHES and value:
            cmd.append(SWITCHES[key])
        elif key in NEGATED and not value:
            cmd.append(NEGATED[key])
        elif key in ("optimizers", "executors") and value:
            flag = "--optimizer" if key == "optimizers" else "--executor"
            for name in value:  # type: ignore[attr-defined]
                cmd += [flag, str(name)]
    return cmd


def run_processes(files: Sequence[str], options: Dict[str, object], repeat: int, outdir: str,
                  progress: Callable[[str], None] = lambda line: None,
                  on_run: Optional[Callable[[int, int], None]] = None) -> List[Profile]:
    """Profile ``repeat`` times, each a fresh process writing into OUTDIR/runs/<n>/ (``on_run(done, total)``
    as each starts)."""
    profiles = []
    for i in range(1, repeat + 1):
        run_dir = os.path.join(outdir, "runs", str(i))
        progress("Run %d of %d in a fresh process (%s) ..." % (i, repeat, run_dir))
        if on_run is not None:
            on_run(i - 1, repeat)
        proc = subprocess.run(command_line(files, run_dir, options), capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
            raise ProfileError("run %d of %d: %s" % (i, repeat, last.replace("nnprofile: error: ", "")))
        profiles.append(result_file.load(run_dir))
    return profiles


def merge(profiles: Sequence[Profile], threshold: float) -> Profile:
    """One profile from several runs of the same: samples and rounds pooled per entry."""
    if not profiles:
        raise ProfileError("no runs to merge")
    first = profiles[0]
    merged = Profile(header=dict(first.header), notes=list(first.notes), timeline=list(first.timeline),
                     complete=all(p.complete for p in profiles),
                     failure=next((p.failure for p in profiles if p.failure), None))
    merged.header["repeat"] = len(profiles)
    merged.header["sampling"] = "%s; in %d fresh processes, rounds pooled" % (first.header.get("sampling"),
                                                                             len(profiles))
    for section in first.sections:
        same = [_section(p, section) for p in profiles]
        merged.sections.append(_merge_section(section, [s for s in same if s is not None], threshold))
    return merged


def _section(profile: Profile, like: Section) -> Optional[Section]:
    for s in profile.sections:
        if (s.kind, s.name) == (like.kind, like.name):
            return s
    return None


def _merge_section(base: Section, runs: List[Section], threshold: float) -> Section:
    merged = Section(kind=base.kind, name=base.name, network=base.network, memory=dict(base.memory),
                     reference_ns=[r for s in runs for r in s.reference_ns],
                     complete=all(s.complete for s in runs) and len(runs) > 0)
    by_label = [{e.label: e for e in s.entries} for s in runs]
    # Pooled rounds: run after run. An entry absent from a run (or one that stopped
    # early in it) leaves those rounds empty for it.
    rounds_per_run = [max((len(e.round_sizes) or 1 for e in s.entries), default=0) for s in runs]
    pooled: List[Entry] = []
    for entry in base.entries:
        samples: List[float] = []
        sizes: List[int] = []
        means: List[float] = []
        for run, n_rounds in zip(by_label, rounds_per_run):
            e = run.get(entry.label)
            own = (e.round_sizes or [len(e.samples_ns)]) if e is not None else []
            if e is not None:
                samples += list(e.samples_ns)
                means.append(e.mean_ms)
            sizes += own + [0] * (n_rounds - len(own))
        pooled.append(dataclasses.replace(
            entry, samples_ns=samples, round_sizes=sizes, dropped_rounds=[], run_means=means,
            complete=all(r.get(entry.label) is not None and r[entry.label].complete for r in by_label)))
    total_rounds = sum(rounds_per_run)
    drift = Drift(tuple(speed_levels([(e.samples_ns, e.round_sizes) for e in pooled], total_rounds)), threshold)
    for e in pooled:
        e.dropped_rounds = drift.dropped
    merged.entries = pooled
    merged.speed_levels = [round(level, 4) for level in drift.levels]
    return merged
