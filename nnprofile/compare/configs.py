"""Configurations of a project (``--set type_config=half``), each profiled in fresh processes.

``nnprofile compare PROJECT --set type_config=float --set type_config=half --repeat 5``
profiles the project once per configuration and repetition, each in a fresh
process, alternating configurations so that a slow spell of the machine hits
them alike. Each run is a full profile in OUTDIR/runs/<configuration>/<n>/. With a difference asked
for (``--resolve 5%``, the default), rounds go on until every headline ratio's interval is that narrow, or the
budget ends; the comparison says which.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base.errors import ProfileError
from ..base.options import configurable
from ..merging.fresh import profile_in_fresh_process
from ..result import Profile
from .metrics import STEP_METRICS, Metric, metric_rows, step_metrics, throughput_metrics


@dataclass
class Config:
    name: str
    settings: Dict[str, str]  # option name (a configurable field of ProfileOptions) -> value as written

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.name.replace(",", "_"))

    def arguments(self) -> List[str]:
        """The profile's command-line arguments that set this configuration."""
        keys = configurable()
        return [x for key, value in self.settings.items() for x in (keys[key].metadata["flag"], value)]


def parse_set(text: str) -> Config:
    """'type_config=half' or 'type_config=half,batch_size=128' -> Config; the keys are the options that
    ``ProfileOptions`` marks configurable, checked as the command line checks them."""
    keys = configurable()
    settings: Dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip().replace("-", "_")
        value = value.strip()
        if not sep or not value:
            raise ProfileError("--set %s: expected KEY=VALUE (keys: %s)" % (text, ", ".join(keys)))
        if key not in keys:
            raise ProfileError("--set %s: unknown key '%s' (keys: %s)" % (text, key, ", ".join(keys)))
        if key in settings:
            raise ProfileError("--set %s: %s is given twice (one value a configuration)" % (text, key))
        meta = keys[key].metadata
        if meta["choices"] and value not in meta["choices"]:
            raise ProfileError("--set %s: %s must be one of %s" % (text, key, ", ".join(meta["choices"])))
        if meta["type"] is not None:
            try:
                meta["type"](value)
            except (ValueError, argparse.ArgumentTypeError) as e:
                raise ProfileError("--set %s: %s: %s" % (text, key, e))
        settings[key] = value
    return Config(name=",".join("%s=%s" % kv for kv in settings.items()), settings=settings)


HEADLINE = ("training step", "inference forward_all")  # the figures a comparison must resolve


@dataclass
class Resolution:
    """How far a comparison's repeats went: the difference asked for (``wanted``, a share: 0.05 tells 5% apart), the
    runs of each configuration, and whether every headline ratio's 95% interval got within it (else the budget
    ended first: its runs or seconds)."""

    wanted: float
    runs: int = 0
    resolved: bool = False
    reason: str = ""  # "resolved", "runs" or "seconds"
    widest: Dict[str, float] = field(default_factory=dict)  # headline metric -> its interval's half-width, a share


def half_width(low: Optional[float], high: Optional[float], ratio: Optional[float]) -> float:
    """A ratio's 95% interval's half-width, as a share of the ratio (infinite where there is no interval)."""
    if low is None or high is None or not ratio or low <= 0:
        return math.inf
    return max(high / ratio - 1, 1 - low / ratio)


def run_configurations(
    files: Sequence[str],
    configs: Sequence[Config],
    repeat: int,
    outdir: str,
    extra: Sequence[str],
    progress: Callable[[str], None] = print,
    on_run: Optional[Callable[[str], None]] = None,
    resolve: Optional[float] = None,
    max_runs: int = 10,
    max_seconds: float = 300.0,
) -> Tuple[List[Metric], Dict[str, Profile], Resolution]:
    """Each configuration profiled ``repeat`` times, alternating, in fresh processes; then, with ``resolve``, one
    more round at a time until the 95% interval of every headline ratio (the training step, inference's
    forward_all) is within ``resolve`` of its ratio, or ``max_runs`` runs or ``max_seconds`` are spent."""
    metrics = {name: Metric(name, "ms") for name in STEP_METRICS}
    first_profiles: Dict[str, Profile] = {}
    started = time.monotonic()
    resolution = Resolution(resolve or 0.0)
    i = 0
    while True:
        for c in configs:  # alternating: drift of the machine hits every configuration alike
            run_dir = os.path.join(outdir, "runs", c.slug, str(i + 1))
            progress("run %d, %s ..." % (i + 1, c.name))
            if on_run is not None:
                on_run("profile %s" % c.name)
            # The first run of a configuration is a full profile (layer by layer); later
            # runs time only what the comparison reads.
            profile = profile_in_fresh_process(
                files,
                run_dir,
                c.arguments() + list(extra) + (["--no-layers"] if i else []),
                "configuration %s" % c.name,
            )
            first_profiles.setdefault(c.name, profile)
            for name, value in step_metrics(profile).items():
                metrics[name].values.setdefault(c.name, []).append(value)
        i += 1
        resolution.runs = i
        if i < repeat:
            continue
        if resolve is None:
            resolution.reason = "runs"
            break
        resolution.widest = _widest(list(metrics.values()), [c.name for c in configs])
        if all(w <= resolve for w in resolution.widest.values()):
            resolution.resolved, resolution.reason = True, "resolved"
            break
        if i >= max_runs or time.monotonic() - started >= max_seconds:
            resolution.reason = "runs" if i >= max_runs else "seconds"
            break
    found = [m for m in metrics.values() if m.values]
    sizes = {name: p.header.batch_size for name, p in first_profiles.items()}
    return (
        found + throughput_metrics(found, {k: v for k, v in sizes.items() if isinstance(v, int)}),
        first_profiles,
        resolution,
    )


def _widest(metrics: List[Metric], names: List[str]) -> Dict[str, float]:
    """Each headline metric's widest interval over the configurations compared with the first."""
    out: Dict[str, float] = {}
    for row in metric_rows([m for m in metrics if m.name in HEADLINE and m.values], names):
        if row.config != names[0]:
            out[row.metric] = max(out.get(row.metric, 0.0), half_width(row.ci_low, row.ci_high, row.ratio))
    return out
