"""Configurations of a project (``--set type_config=half``), each profiled in fresh processes.

``nnprofile compare PROJECT --set type_config=float --set type_config=half --repeat 5``
profiles the project once per configuration and repetition, each in a fresh
process, alternating configurations so that a slow spell of the machine hits
them alike. Each run is a full profile in OUTDIR/runs/<configuration>/<n>/.
"""
from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..base.errors import ProfileError
from ..base.options import configurable
from ..pooling.fresh import profile_in_fresh_process
from ..result import Profile
from .metrics import STEP_METRICS, Metric, step_metrics, throughput_metrics

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
        meta = keys[key].metadata
        if meta["choices"] and value not in meta["choices"]:
            raise ProfileError("--set %s: %s must be one of %s" % (text, key, ", ".join(meta["choices"])))
        if meta["type"] is not None:
            try:
                meta["type"](value)
            except (ValueError, argparse.ArgumentTypeError) as e:
                raise ProfileError("--set %s: %s %s" % (text, key, e))
        settings[key] = value
    return Config(name=",".join("%s=%s" % kv for kv in settings.items()), settings=settings)


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
            profile = profile_in_fresh_process(files, run_dir, c.arguments() + list(extra) + (["--no-layers"] if i else []),
                                               "configuration %s" % c.name)
            first_profiles.setdefault(c.name, profile)
            for name, value in step_metrics(profile).items():
                metrics[name].values.setdefault(c.name, []).append(value)
    found = [m for m in metrics.values() if m.values]
    sizes = {name: p.header.batch_size for name, p in first_profiles.items()}
    return found + throughput_metrics(found, {k: v for k, v in sizes.items() if isinstance(v, int)}), first_profiles


