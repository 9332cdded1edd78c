"""What a comparison compares: metrics (one value per run and configuration) and their rows."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..analysis import analyze
from ..choices import EXECUTOR, OPTIMIZER
from ..result import Profile
from ..stats import Stats, ratio_ci, summarize

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
            if base and summarize(base).mean > 0 and d.mean > 0:
                ratio, low, high = ratio_ci(base, values)
            rows.append(Row(m.name, m.unit, c, d, ratio, low, high))
    return rows


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
