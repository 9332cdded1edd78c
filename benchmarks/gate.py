"""Section 6: the regression gate: false alarms of ``nnprofile check`` over A/A pairs, and its detection of a
real slowdown."""

from __future__ import annotations

import os
import re
import subprocess

from common import Target, lenet_copy, met, nnprofile_cmd, run


def measure(work, pairs):
    """False alarms of nnprofile check over A/A pairs (LeNet against itself, minutes apart), and its
    detection of a real slowdown: LeNet with its hidden Affine layer ten times wider (150 -> 1500)."""
    project = lenet_copy(work)
    with open(project) as f:
        wider_text = f.read().replace("dim: 150", "dim: 1500")
    wider = os.path.join(work, "lenet_wider.nntxt")
    with open(wider, "w") as f:
        f.write(wider_text)
    run(nnprofile_cmd(project, "--runs", "1", "-q", "-o", os.path.join(work, "gate_warm")))
    plain, slow = [], []
    for i in range(pairs + 1):  # alternating, as a CI history would be
        out = os.path.join(work, "gate_a%d" % i)
        run(nnprofile_cmd(project, "--no-layers", "-q", "-o", out))
        plain.append(out)
        if i < pairs:
            out = os.path.join(work, "gate_b%d" % i)
            run(nnprofile_cmd(wider, "--no-layers", "-q", "-o", out))
            slow.append(out)

    def verdict(a, b):
        p = subprocess.run(nnprofile_cmd("check", a, b, "-q"), capture_output=True, text=True)
        if p.returncode not in (0, 1, 3):  # 3: could not judge (the machine's speed moved too far)
            raise SystemExit("nnprofile check failed: %s" % p.stderr)
        return p.returncode

    same = [verdict(plain[i], plain[i + 1]) for i in range(pairs)]
    wider = [verdict(plain[i], slow[i]) for i in range(pairs)]
    false_alarms, detected = same.count(1), wider.count(1)
    unjudged = same.count(3) + wider.count(3)
    with open(os.path.join(plain[0], "profile.log")) as f:
        base_step = re.search(r"^Step: ([\d.]+) ms", f.read(), re.M).group(1)
    with open(os.path.join(slow[0], "profile.log")) as f:
        slow_step = re.search(r"^Step: ([\d.]+) ms", f.read(), re.M).group(1)
    return {
        "pairs": pairs,
        "false_alarms": false_alarms,
        "detected": detected,
        "unjudged": unjudged,
        "slowdown": float(slow_step) / float(base_step),
    }


def targets(gate):
    return [
        Target(
            "the gate's false alarms ≤ 5% of A/A pairs",
            "%d of %d" % (gate["false_alarms"], gate["pairs"]),
            gate["false_alarms"] <= 0.05 * gate["pairs"],
        ),
        Target(
            "the gate detects a real slowdown in ≥ 95% of pairs",
            "%d of %d (a %.2fx step)" % (gate["detected"], gate["pairs"], gate["slowdown"]),
            gate["detected"] >= 0.95 * gate["pairs"],
        ),
    ]


def lines(gate):
    return [
        "## 6. The regression gate (`nnprofile check`, projects/lenet, `--no-layers`)",
        "",
        "%d A/A pairs (LeNet against itself, consecutive runs) and %d pairs of LeNet against LeNet with its "
        "hidden Affine ten times wider (a step %.2fx as long in the first pair)."
        % (gate["pairs"], gate["pairs"], gate["slowdown"]),
        "",
        "| | rate | target |",
        "|---|---|---|",
        "| false alarms (exit 1 on A/A) | %d of %d = %.0f%% | ≤ 5%%: %s |"
        % (
            gate["false_alarms"],
            gate["pairs"],
            100.0 * gate["false_alarms"] / gate["pairs"],
            met(gate["false_alarms"] <= 0.05 * gate["pairs"]),
        ),
        "| detection (exit 1 on the wider layer) | %d of %d = %.0f%% | ≥ 95%%: %s |"
        % (
            gate["detected"],
            gate["pairs"],
            100.0 * gate["detected"] / gate["pairs"],
            met(gate["detected"] >= 0.95 * gate["pairs"]),
        ),
        "| could not judge (exit 3: the machine's speed moved beyond what the check accepts) | %d of %d | |"
        % (gate["unjudged"], 2 * gate["pairs"]),
        "",
    ]
