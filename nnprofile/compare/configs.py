"""Configurations of a project (``--set type_config=half``), each profiled in fresh processes.

``nnprofile compare PROJECT --set type_config=float --set type_config=half --repeat 5``
profiles the project once per configuration and repetition, each in a fresh
process, alternating configurations so that a slow spell of the machine hits
them alike. Each run is a full profile in OUTDIR/runs/<configuration>/<n>/.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base.choices import BACKENDS, TYPE_CONFIGS
from ..base.errors import ProfileError
from ..result import Profile, file as result_file
from .metrics import STEP_METRICS, Metric, step_metrics, throughput_metrics

KEYS = {"type_config": "--type-config", "context": "--context", "batch_size": "--batch-size"}
VALUES = {"type_config": TYPE_CONFIGS, "context": BACKENDS}


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


def profile_once(files: Sequence[str], config: Config, outdir: str, extra: Sequence[str]) -> Profile:
    cmd = [sys.executable, "-m", "nnprofile", *files, "-o", outdir, "-q", *config.arguments(), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        raise ProfileError("configuration %s: %s" % (config.name, last.replace("nnprofile: error: ", "")))
    return result_file.load(outdir)


def run_configurations(files: Sequence[str], configs: Sequence[Config], repeat: int, outdir: str,
                       extra: Sequence[str], progress=print,
                       on_run: Optional[Callable[[str], None]] = None) -> Tuple[List[Metric], Dict[str, Profile]]:
    metrics = {name: Metric(name, "ms") for name in STEP_METRICS}
    first_profiles: Dict[str, Profile] = {}
    for i in range(repeat):
        for c in configs:  # alternating: drift of the machine hits every configuration alike
            run_dir = os.path.join(outdir, "runs", c.slug, str(i + 1))
            progress("run %d of %d, %s ..." % (i + 1, repeat, c.name))
            if on_run is not None:
                on_run("profile %s" % c.name)
            # The first run of a configuration is a full profile (layer by layer); later
            # runs time only what the comparison reads.
            profile = profile_once(files, c, run_dir, list(extra) + (["--no-layers"] if i else []))
            first_profiles.setdefault(c.name, profile)
            for name, value in step_metrics(profile).items():
                metrics[name].values.setdefault(c.name, []).append(value)
    found = [m for m in metrics.values() if m.values]
    sizes = {name: p.header.get("batch_size") for name, p in first_profiles.items()}
    return found + throughput_metrics(found, {k: v for k, v in sizes.items() if isinstance(v, int)}), first_profiles


