"""Plain conclusions from the ratios of a comparison."""

from __future__ import annotations

from typing import Dict, List, Sequence

from .configs import Config
from .metrics import Row


def _throughput_line(r: Row, base: str) -> str:
    """A throughput ratio (samples per second) against the first configuration, with its interval."""
    assert r.ratio is not None
    how = (
        "(95%% CI %.3f to %.3f)" % (r.ci_low, r.ci_high)
        if r.ci_low is not None and r.ci_high is not None
        else "(one run each: no interval)"
    )
    more = r.ci_low is not None and r.ci_low > 1
    fewer = not more and r.ci_high is not None and r.ci_high < 1
    return "%s: %s processes %.3fx the samples per second of %s %s: %s throughput" % (
        r.metric,
        r.config,
        r.ratio,
        base,
        how,
        "higher" if more else "lower" if fewer else "no difference in",
    )


def _half_on_cpu(rows: Sequence[Row], base: str, contexts: Dict[str, str]) -> List[str]:
    """Advice where half precision on the CPU measured slower than float: NNabla emulates it there."""
    lines = []
    for r in rows:
        ctx = contexts.get(r.config, "")
        emulated = ctx.startswith("cpu:") and ctx.endswith(":half") and contexts.get(base, "") == "cpu:float"
        if (
            r.metric == "training step"
            and r.config != base
            and emulated
            and r.ci_low is not None
            and r.ci_high is not None
            and r.ratio is not None
            and r.ci_low > 1
        ):
            lines.append(
                "Advice: on the CPU, NNabla emulates half precision: the training step measured "
                "%.2fx slower than float (95%% CI %.2f to %.2f). Keep float on the CPU; try half "
                "precision on a GPU (--set context=cudnn,type_config=half)." % (r.ratio, r.ci_low, r.ci_high)
            )
    return lines


def findings(rows: Sequence[Row], configs: Sequence[Config], contexts: Dict[str, str]) -> List[str]:
    """Plain conclusions from the ratios; CPU half precision only where a measurement shows it."""
    lines = []
    per_sample = any(r.unit == "samples/s" for r in rows)
    for r in rows:
        if r.unit == "samples/s" and r.ratio is not None and r.config != configs[0].name:
            lines.append(_throughput_line(r, configs[0].name))
            continue
        if r.ratio is None or r.config == configs[0].name or r.unit != "ms":
            continue
        if per_sample and not r.metric.endswith("per sample"):
            continue  # the batches differ: a step holds more or fewer samples; per sample tells
        if r.ci_low is not None and r.ci_high is not None:
            if r.ci_low > 1:
                verdict = "slower"
            elif r.ci_high < 1:
                verdict = "faster"
            else:
                verdict = "no difference shown"
            lines.append(
                "%s: %s is %.3fx %s (95%% CI %.3f to %.3f): %s"
                % (r.metric, r.config, r.ratio, configs[0].name, r.ci_low, r.ci_high, verdict)
            )
        else:
            lines.append(
                "%s: %s is %.3fx %s (one run each: no interval; use --repeat 3 or more)"
                % (r.metric, r.config, r.ratio, configs[0].name)
            )
    lines += _half_on_cpu(rows, configs[0].name, contexts)
    return lines
