"""Synthetic profiles of any size, as a real training section looks, for timing nnprofile's stages.

    synthetic_profile(5000)   a Profile of about 5,000 entries: setup, forward and backward of a
                              third as many layers, the whole-step entries, a memory curve and a
                              timeline of two steps

The figures are random but fixed (a seeded generator); samples come in five rounds, as measured.
"""

from __future__ import annotations

import random

from nnprofile.result import Entry, Profile, Section

ROUNDS = 5
SAMPLES_PER_ROUND = 3


def _samples(rng: random.Random, mean_ns: float):
    samples = [max(1.0, rng.gauss(mean_ns, mean_ns * 0.05)) for _ in range(ROUNDS * SAMPLES_PER_ROUND)]
    # Whole nanoseconds, as a clock gives them.
    return [float(round(x)) for x in samples], [SAMPLES_PER_ROUND] * ROUNDS


def synthetic_profile(entries: int, seed: int = 0) -> Profile:
    rng = random.Random(seed)
    layers = max(1, (entries - 8) // 3)
    section = Section(kind="optimizer", name="Optimizer", network="Main", complete=True)
    out = section.entries

    def whole(label, phase, mean):
        samples, sizes = _samples(rng, mean)
        out.append(Entry(label=label, phase=phase, samples_ns=samples, round_sizes=sizes))

    whole("load_dataset", "load_dataset", 20_000)
    whole("let_data (x to Input)", "let_data", 50_000)
    kinds = [("Affine", "affine", 4096), ("ReLU", None, 0), ("Convolution", "conv", 2400)]
    names = []
    for i in range(layers):
        kind, scope, params = kinds[i % len(kinds)]
        names.append((("block%d/%s" % (i, scope)) if scope else "%s_%d" % (kind, i + 1), kind, params))
    for phase in ("setup_function", "forward_function"):
        for i, (name, kind, params) in enumerate(names):
            samples, sizes = _samples(rng, rng.uniform(2_000, 200_000))
            e = Entry(
                label="%s (%s : %s)" % (phase, name, kind),
                phase=phase,
                samples_ns=samples,
                round_sizes=sizes,
                layer=name,
                layer_id=i,
                layer_type=kind,
                impl_class=kind,
                output_shape="64x256",
                params=params,
                dtype="float32",
                calls_per_sample=1,
            )
            if phase == "forward_function":
                e.flops, e.bytes_read, e.bytes_written = 64 * 256 * 2 * max(1, params), 65536, 65536
                e.output_bytes, e.parameter_bytes, e.gradient_bytes, e.input_gradient_bytes = (
                    65536,
                    params * 4,
                    params * 4,
                    65536,
                )
            out.append(e)
    whole("prepare_backward", "prepare_backward", 5_000)
    for i, (name, kind, params) in reversed(list(enumerate(names))):
        samples, sizes = _samples(rng, rng.uniform(2_000, 300_000))
        out.append(
            Entry(
                label="backward_function (%s : %s)" % (name, kind),
                phase="backward_function",
                samples_ns=samples,
                round_sizes=sizes,
                layer=name,
                layer_id=i,
                layer_type=kind,
                impl_class=kind,
                output_shape="64x256",
                params=params,
                dtype="float32",
                flops=2 * 64 * 256 * 2 * max(1, params),
                bytes_read=131072,
                bytes_written=65536,
                output_bytes=65536,
                parameter_bytes=params * 4,
                gradient_bytes=params * 4,
                input_gradient_bytes=65536,
            )
        )
    forward = sum(e.stats.mean for e in out if e.phase == "forward_function")
    backward = sum(e.stats.mean for e in out if e.phase == "backward_function")
    whole("forward_all", "forward_all", forward * 1.1)
    whole("backward_all", "backward_all", backward * 1.1)
    whole("backward_all(wo param zero_grad)", "backward_all_wo_zero_grad", backward * 1.05)
    whole("update (Adam)", "update", 300_000)
    whole("monitor_loss", "monitor_loss", 10_000)
    section.speed_levels = [1.0] * ROUNDS
    section.reference_ns = [100_000.0] * ROUNDS
    section.sampling = {
        "rounds": ROUNDS,
        "seconds": 1.5,
        "budget_seconds": 1.5,
        "plan": "every entry every round",
        "lean": False,
        "layer_every": 1,
        "stopped": "budget",
    }
    curve = [[name, "forward", 65536 * (i + 1)] for i, (name, _, _) in enumerate(names)]
    curve += [[name, "backward", 65536 * (layers - i)] for i, (name, _, _) in enumerate(reversed(names))]
    section.memory = {
        "parameters": 1 << 20,
        "gradients": 1 << 20,
        "solver_state": 2 << 20,
        "activations_at_peak": 65536 * layers,
        "peak_estimated": (4 << 20) + 65536 * layers,
        "peak_layer": names[-1][0],
        "peak_phase": "forward",
        "alive_at_peak": [],
        "peak_measured": None,
        "measured": "not measured",
        "batch_size": 64,
        "curve": curve,
    }
    timeline = []
    t = 0
    for step in (1, 2):
        start = t
        for phase in ("forward", "backward"):
            pass_start = t
            for name, kind, _ in names if phase == "forward" else list(reversed(names)):
                d = rng.randint(2_000, 200_000)
                timeline.append(
                    {
                        "name": name,
                        "cat": phase,
                        "start": t,
                        "end": t + d,
                        "args": {"class": kind, "type": kind, "phase": phase},
                    }
                )
                t += d + 500
            timeline.append(
                {
                    "name": phase,
                    "cat": phase,
                    "start": pass_start,
                    "end": t,
                    "args": {"functions": layers, "section": section.title},
                }
            )
        timeline.append(
            {"name": "step %d" % step, "cat": "step", "start": start, "end": t + 1000, "args": {"step": step}}
        )
        t += 2000
    header = {
        "mode": "isolated",
        "target_rse": 0.02,
        "drift_threshold": 0.1,
        "nnprofile": "bench",
        "nnabla": "1.39.0",
        "project": "synthetic-%d.nntxt" % entries,
        "context": "cpu:float",
        "batch_size": 64,
        "sampling": "synthetic",
        "machine": "bench",
        "date": "2026-11-23T00:00:00+00:00",
        "clock": "time.perf_counter_ns",
        "clock_resolution_ns": 100,
        "timing_overhead_ns": 110.0,
        "data": "synthetic",
        "implementation_classes": ["Affine", "Convolution", "ReLU"],
    }
    return Profile(header=header, sections=[section], complete=True, timeline=timeline)
