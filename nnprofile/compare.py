"""Repeatable comparisons of configurations, and of saved results.

``nnprofile compare PROJECT --set type_config=float --set type_config=half --repeat 5``
profiles the project once per configuration and repetition, each in a fresh
process, alternating configurations so that a slow spell of the machine hits
them alike. Each run is a full profile in OUTDIR/runs/<configuration>/<n>/.
The statistics are over the repetitions; ratios are to the first
configuration, with 95% confidence intervals.

``nnprofile compare DIR DIR ...`` compares saved results entry by entry and
layer by layer, from the samples of each run, without running anything.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import result_file
from .advice import summarize_section
from .errors import ProfileError
from .result import Profile
from .stats import Summary, describe, ratio_ci

KEYS = {"type_config": "--type-config", "context": "--context", "batch_size": "--batch-size"}
VALUES = {"type_config": ("float", "half"), "context": ("cpu", "cuda", "cudnn")}
STEP_METRICS = ("training step", "forward_all", "backward_all", "update", "inference forward_all")


@dataclass
class Config:
    name: str
    settings: Dict[str, str]

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.name.replace(",", "_"))

    def arguments(self) -> List[str]:
        out = []
        for key, value in self.settings.items():
            out += [KEYS[key], value]
        return out


def parse_set(text: str) -> Config:
    """'type_config=half' or 'type_config=half,batch_size=128' -> Config."""
    settings: Dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        key = key.strip().replace("-", "_")
        value = value.strip()
        if not sep or not value:
            raise ProfileError("--set %s: expected KEY=VALUE (keys: %s)" % (text, ", ".join(KEYS)))
        if key not in KEYS:
            raise ProfileError("--set %s: unknown key '%s' (keys: %s)" % (text, key, ", ".join(KEYS)))
        if key in VALUES and value not in VALUES[key]:
            raise ProfileError("--set %s: %s must be one of %s" % (text, key, ", ".join(VALUES[key])))
        if key == "batch_size" and not (value.isdigit() and int(value) > 0):
            raise ProfileError("--set %s: batch_size must be a positive whole number" % text)
        settings[key] = value
    return Config(name=",".join("%s=%s" % kv for kv in settings.items()), settings=settings)


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
    stats: Summary
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
            d = describe(values)
            ratio = low = high = None
            if base and describe(base).mean > 0 and d.mean > 0:
                ratio, low, high = ratio_ci(base, values)
            rows.append(Row(m.name, m.unit, c, d, ratio, low, high))
    return rows


def step_metrics(profile: Profile) -> Dict[str, float]:
    """One run's figures: the training step and its parts, and inference's forward_all (ms)."""
    out: Dict[str, float] = {}
    context = str(profile.header.get("context", "cpu:float"))
    for section in profile.sections:
        if section.kind == "optimizer" and "training step" not in out:
            summary = summarize_section(section, context)
            if summary is not None:
                parts = dict(summary.parts)
                out["training step"] = summary.step_ms
                out["forward_all"] = parts["forward"]
                out["backward_all"] = parts["backward"]
                out["update"] = parts["update"]
        if section.kind == "executor" and section.complete and "inference forward_all" not in out:
            whole = section.entries_of("forward_all")
            if whole:
                out["inference forward_all"] = whole[0].mean_ms
    return out


# -- running configurations ----------------------------------------------------------

def profile_once(files: Sequence[str], config: Config, outdir: str, extra: Sequence[str]) -> Profile:
    cmd = [sys.executable, "-m", "nnprofile", *files, "-o", outdir, "-q", *config.arguments(), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        raise ProfileError("configuration %s: %s" % (config.name, last.replace("nnprofile: error: ", "")))
    return result_file.load(outdir)


def run_configurations(files: Sequence[str], configs: Sequence[Config], repeat: int, outdir: str,
                       extra: Sequence[str], progress=print) -> Tuple[List[Metric], Dict[str, Profile]]:
    metrics = {name: Metric(name, "ms") for name in STEP_METRICS}
    first_profiles: Dict[str, Profile] = {}
    for i in range(repeat):
        for c in configs:  # alternating: drift of the machine hits every configuration alike
            run_dir = os.path.join(outdir, "runs", c.slug, str(i + 1))
            progress("run %d of %d, %s ..." % (i + 1, repeat, c.name))
            # The first run of a configuration is a full profile (layer by layer); later
            # runs time only what the comparison reads.
            profile = profile_once(files, c, run_dir, list(extra) + (["--no-layers"] if i else []))
            first_profiles.setdefault(c.name, profile)
            for name, value in step_metrics(profile).items():
                metrics[name].values.setdefault(c.name, []).append(value)
    return [m for m in metrics.values() if m.values], first_profiles


# -- comparing saved results ---------------------------------------------------------------

@dataclass
class EntryRow:
    section: str
    label: str
    config: str
    n: int
    mean_ms: float
    median_ms: float
    std_ms: float
    ratio: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]


def _samples_ms(entry) -> List[float]:
    return [max(0.0, s - entry.overhead_ns) / 1e6 for s in entry.samples_ns]


def compare_saved(profiles: Dict[str, Profile]) -> Tuple[List[EntryRow], List[EntryRow], List[Metric]]:
    """Per entry and per layer, from each run's samples; box-plot metrics from the same samples."""
    names = list(profiles)
    base = profiles[names[0]]
    entry_rows: List[EntryRow] = []
    layer_rows: List[EntryRow] = []
    metrics = {n: Metric(n, "ms") for n in ("forward_all", "backward_all", "update", "inference forward_all")}
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
                d = describe(values)
                ratio = low = high = None
                if names[0] in samples and describe(samples[names[0]]).mean > 0 and d.mean > 0:
                    ratio, low, high = ratio_ci(samples[names[0]], values)
                entry_rows.append(EntryRow(section.title, entry.label, name, d.n, d.mean, d.median, d.std,
                                           ratio, low, high))
            if entry.phase == "forward_all":
                key = "forward_all" if section.kind == "optimizer" else "inference forward_all"
            elif entry.phase in ("backward_all", "update") and section.kind == "optimizer":
                key = entry.phase
            else:
                key = None
            if key is not None:
                for name, values in samples.items():
                    metrics[key].values.setdefault(name, values)
        # per layer: forward + backward means
        layers = [e.layer for e in section.entries_of("forward_function")]
        totals: Dict[str, Dict[str, float]] = {}
        for name, s in matched.items():
            for e in s.entries:
                if e.phase in ("forward_function", "backward_function") and e.layer in layers:
                    totals.setdefault(e.layer, {}).setdefault(name, 0.0)
                    totals[e.layer][name] += e.mean_ms
        for layer in layers:
            per = totals.get(layer, {})
            base_ms = per.get(names[0])
            for name, total in per.items():
                ratio = total / base_ms if base_ms else None
                layer_rows.append(EntryRow(section.title, layer, name, 1, total, total, 0.0, ratio, None, None))
    return entry_rows, layer_rows, [m for m in metrics.values() if m.values]


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


# -- findings ---------------------------------------------------------------------

def findings(rows: Sequence[Row], configs: Sequence[Config], contexts: Dict[str, str]) -> List[str]:
    """Plain conclusions from the ratios; CPU half precision only where a measurement shows it."""
    lines = []
    for r in rows:
        if r.ratio is None or r.config == configs[0].name or r.unit != "ms":
            continue
        if r.ci_low is not None and r.ci_high is not None:
            if r.ci_low > 1:
                verdict = "slower"
            elif r.ci_high < 1:
                verdict = "faster"
            else:
                verdict = "no difference shown"
            lines.append("%s: %s is %.3fx %s (95%% CI %.3f to %.3f): %s"
                         % (r.metric, r.config, r.ratio, configs[0].name, r.ci_low, r.ci_high, verdict))
        else:
            lines.append("%s: %s is %.3fx %s (one run each: no interval; use --repeat 3 or more)"
                         % (r.metric, r.config, r.ratio, configs[0].name))
    base_ctx = contexts.get(configs[0].name, "")
    for r in rows:
        ctx = contexts.get(r.config, "")
        if (r.metric == "training step" and r.config != configs[0].name and ctx.startswith("cpu:")
                and ctx.endswith(":half") and base_ctx == "cpu:float" and r.ci_low is not None and r.ci_low > 1):
            lines.append("Advice: on the CPU, NNabla emulates half precision: the training step measured "
                         "%.2fx slower than float (95%% CI %.2f to %.2f). Keep float on the CPU; try half "
                         "precision on a GPU (--set context=cudnn,type_config=half)." % (r.ratio, r.ci_low, r.ci_high))
    return lines
