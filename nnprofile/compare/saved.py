"""Comparing saved results entry by entry and layer by layer, from each run's samples."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..analysis.breakdown import layer_times as analyze_layers
from ..base.choices import EXECUTOR, GRAPH, OPTIMIZER, PART_OF_PHASE, SCRIPT
from ..result import Entry, Profile, Section
from ..base.stats import summarize
from ..base.student import ratio_ci
from .metrics import Metric

# The columns of compare_entries.csv and of a saved results comparison's DataFrame.
ENTRY_COLUMNS = [
    "section",
    "entry",
    "configuration",
    "n",
    "mean_ms",
    "median_ms",
    "std_ms",
    "ratio",
    "ci95_low",
    "ci95_high",
]


@dataclass
class EntryRow:
    section: str
    label: str
    config: str
    n: Optional[int]  # None where the figure is not a series of samples (a layer's total)
    mean_ms: float
    median_ms: Optional[float]
    std_ms: Optional[float]
    ratio: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]


def _samples_ms(entry: Entry) -> List[float]:
    return [max(0.0, s - entry.overhead_ns) / 1e6 for s in entry.samples_ns]


def compare_saved(profiles: Dict[str, Profile]) -> Tuple[List[EntryRow], List[EntryRow], List[Metric]]:
    """Per entry and per layer, from each run's samples; box-plot metrics from the same samples."""
    names = list(profiles)
    base = profiles[names[0]]
    entry_rows: List[EntryRow] = []
    layer_rows: List[EntryRow] = []
    metrics: Dict[str, Metric] = {}
    for section in base.sections:
        matched = {}
        for name in names:
            same = [s for s in profiles[name].sections if (s.kind, s.name) == (section.kind, section.name)]
            if same:
                matched[name] = same[0]
        # Labels are unique within a section: one lookup per entry, not a scan.
        by_label = {name: {x.label: x for x in s.entries} for name, s in matched.items()}
        for entry in section.entries:
            samples = {}
            for name, entries in by_label.items():
                if entry.label in entries:
                    samples[name] = _samples_ms(entries[entry.label])
            for name, values in samples.items():
                d = summarize(values)
                ratio = low = high = None
                if names[0] in samples and summarize(samples[names[0]]).mean > 0 and d.mean > 0:
                    ratio, low, high = ratio_ci(samples[names[0]], values)
                entry_rows.append(
                    EntryRow(section.title, entry.label, name, d.n, d.mean, d.median, d.std, ratio, low, high)
                )
            key = _metric_of(section, entry.phase)
            if key is not None:
                for name, values in samples.items():
                    metrics.setdefault(key, Metric(key, "ms")).values.setdefault(name, values)
        # Per layer: forward + backward means, paired by identity within each run. The
        # sum of two entries' means has no samples of its own: no n, median, spread or
        # interval is reported for it, only the ratio of the totals.
        totals: Dict[str, Dict[str, float]] = {}
        for name, s in matched.items():
            for lt in analyze_layers(s):
                totals.setdefault(lt.layer, {})[name] = lt.total_ms
        for layer in [lt.layer for lt in analyze_layers(section)]:
            per = totals.get(layer, {})
            base_ms = per.get(names[0])
            for name, total in per.items():
                ratio = total / base_ms if base_ms else None
                layer_rows.append(EntryRow(section.title, layer, name, None, total, None, None, ratio, None, None))
    steps_first = sorted(metrics.values(), key=lambda m: m.name not in ("training step", "step"))  # the answer first
    return entry_rows, layer_rows, [m for m in steps_first if m.values]


def _metric_of(section: Section, phase: str) -> Optional[str]:
    """The headline figure an entry's samples are, named as ``nnprofile.compare.gate`` names it: a project's training
    passes and update, its inference's forward_all; a recorded program's step (a training step where it updates) and
    update, and each graph's passes, by the graph's name; None for any other entry."""
    if section.kind == OPTIMIZER:
        return phase if phase in ("forward_all", "backward_all", "update") else None
    if section.kind == EXECUTOR:
        return "inference forward_all" if phase == "forward_all" else None
    if section.kind == GRAPH and phase in ("forward_all", "backward_all"):
        return "%s %s" % (section.name, phase)
    if section.kind == SCRIPT and phase == "step":
        trains = any(PART_OF_PHASE.get(e.phase) == "update" for e in section.entries)
        return "training step" if trains else "step"
    if section.kind == SCRIPT and PART_OF_PHASE.get(phase) == "update":
        return "update"
    return None


def unique_names(paths: Sequence[str]) -> List[str]:
    names = []
    for p in paths:
        base = os.path.basename(os.path.normpath(p)) or p
        name, n = base, 2
        while name in names:
            name = "%s (%d)" % (base, n)
            n += 1
        names.append(name)
    return names
