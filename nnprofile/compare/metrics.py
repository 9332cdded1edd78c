"""What a comparison compares: metrics (one value per run and configuration) and their rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..analysis import analyze
from ..base.choices import EXECUTOR, OPTIMIZER
from ..result import Profile
from ..base.stats import Stats, summarize
from ..base.student import ratio_ci

# The columns of compare.csv and of a configurations comparison's DataFrame.
ROW_COLUMNS = [
    "metric",
    "unit",
    "configuration",
    "n",
    "mean",
    "median",
    "std",
    "p90",
    "min",
    "max",
    "ratio",
    "ci95_low",
    "ci95_high",
]
STEP_METRICS = ("training step", "forward_all", "backward_all", "update", "inference forward_all")


@dataclass
class Metric:
    name: str
    unit: str
    values: Dict[str, List[float]] = field(default_factory=dict)  # config name -> one value per run


@dataclass
class Row:
    metric: str
    unit: str
    config: str
    stats: Stats
    ratio: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]


def metric_rows(metrics: Sequence[Metric], configs: Sequence[str]) -> List[Row]:
    """Statistics per metric and configuration; ratios to the first configuration."""
    rows = []
    for m in metrics:
        base = m.values.get(configs[0])
        for c in configs:
            values = m.values.get(c)
            if not values:
                continue
            d = summarize(values)
            ratio = low = high = None
            if c == configs[0]:
                ratio = 1.0  # the baseline itself: no interval of itself against itself
            elif base and summarize(base).mean > 0 and d.mean > 0:
                ratio, low, high = ratio_ci(base, values)
            rows.append(Row(m.name, m.unit, c, d, ratio, low, high))
    return rows


def throughput_metrics(metrics: Sequence[Metric], batch_sizes: Dict[str, int]) -> List[Metric]:
    """When configurations differ in batch size: time per sample and samples per second of each step."""
    if len(set(batch_sizes.values())) < 2:
        return []
    out = []
    for m in metrics:
        if m.name not in ("training step", "inference forward_all"):
            continue
        per_sample = Metric("%s per sample" % m.name, "ms")
        rate = Metric("%s throughput" % m.name, "samples/s")
        for config, values in m.values.items():
            size = batch_sizes.get(config)
            if size:
                per_sample.values[config] = [v / size for v in values]
                rate.values[config] = [size * 1000.0 / v for v in values if v > 0]
        out += [per_sample, rate]
    return out


def step_metrics(profile: Profile) -> Dict[str, float]:
    """One run's figures: the training step and its parts, and inference's forward_all (ms)."""
    out: Dict[str, float] = {}
    analysis = analyze(profile)
    for a in analysis.sections:
        section = a.section
        if section.kind == OPTIMIZER and a.step is not None and "training step" not in out:
            parts = dict(a.step.parts)
            out["training step"] = a.step.step_ms
            out["forward_all"] = parts["forward"]
            out["backward_all"] = parts["backward"]
            out["update"] = parts["update"]
        if section.kind == EXECUTOR and section.complete and "inference forward_all" not in out:
            whole = section.entries_of("forward_all")
            if whole:
                out["inference forward_all"] = whole[0].mean_ms
    return out
