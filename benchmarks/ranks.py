"""Merging the results of many ranks: is the cost per rank flat as the world grows?

    python benchmarks/ranks.py [16 128]     prints the merge's time per rank at each world size

Each rank's result is synthetic but shaped as a recorded LeNet's under mpirun: a graph section of
LeNet's 10 layers (forward and backward entries, forward_all, backward_all) and the program's
section (input, zero_grad, all_reduce, update, step), 20 kept steps, its timeline (steps, passes,
input, solver and communication calls, and each layer's calls), one rank a straggler. The merge
timed is what ``nnprofile merge OUTDIR`` does: load every rank's result.json, pool and align them,
analyse, render every file and write them. Each figure is the fastest of several runs.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from typing import Dict, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SIZES = (16, 128)
STEPS = 20
LAYERS = (
    "conv1/conv:Convolution",
    "ReLU:ReLU",
    "MaxPooling:MaxPooling",
    "conv2/conv:Convolution",
    "ReLU_2:ReLU",
    "MaxPooling_2:MaxPooling",
    "fc3/affine:Affine",
    "ReLU_3:ReLU",
    "fc4/affine:Affine",
    "SoftmaxCrossEntropy:SoftmaxCrossEntropy",
)
TARGET_PER_RANK_RATIO = 1.5
MS = 1_000_000


def rank_profile(rank: int, size: int, rng: random.Random):
    """A rank's result: LeNet's layers, 20 steps, its timeline; rank 1 reads its data 10 ms slower."""
    from nnprofile.result import Entry, Profile, Section

    layers = [tuple(x.split(":")) for x in LAYERS]
    base = [rng.uniform(0.05, 0.8) * MS for _ in layers]
    graph = []
    for phase in ("forward_function", "backward_function"):
        order = range(len(layers)) if phase == "forward_function" else reversed(range(len(layers)))
        for i in order:
            name, kind = layers[i]
            graph.append(
                Entry(
                    "%s (%s : %s)" % (phase, name, kind),
                    phase,
                    [round(base[i] * rng.uniform(0.95, 1.1)) for _ in range(STEPS)],
                    layer=name,
                    layer_id=i,
                    layer_type=kind,
                    impl_class=kind,
                    round_sizes=[1] * STEPS,
                )
            )
    passes = {
        p: [sum(e.samples_ns[s] for e in graph if e.phase.startswith(p)) * 1.1 for s in range(STEPS)]
        for p in ("forward", "backward")
    }
    graph += [
        Entry("forward_all", "forward_all", passes["forward"], round_sizes=[1] * STEPS),
        Entry("backward_all", "backward_all", passes["backward"], round_sizes=[1] * STEPS),
    ]
    slow = 10 * MS if rank == 1 else 0
    inputs = [round(0.2 * MS * rng.uniform(0.9, 1.2) + slow) for _ in range(STEPS)]
    comm = [round(1.0 * MS * rng.uniform(0.9, 1.2) + (10 * MS if rank != 1 else 0)) for _ in range(STEPS)]
    update = [round(0.3 * MS * rng.uniform(0.9, 1.2)) for _ in range(STEPS)]
    step = [
        inputs[s] + passes["forward"][s] + passes["backward"][s] + comm[s] + update[s] + 0.2 * MS for s in range(STEPS)
    ]
    script = [
        Entry("load_dataset (data)", "load_dataset", inputs, round_sizes=[1] * STEPS),
        Entry("zero_grad (Momentum)", "prepare_backward", [20_000] * STEPS, round_sizes=[1] * STEPS),
        Entry(
            "all_reduce (MultiProcessDataParallelCommunicator)",
            "communication",
            comm,
            round_sizes=[1] * STEPS,
            bytes_read=1_725_000,
        ),
        Entry("update (Momentum)", "update", update, round_sizes=[1] * STEPS),
        Entry("step", "step", step, round_sizes=[1] * STEPS),
    ]
    timeline = []
    t = 0.0
    for s in range(STEPS):
        number = s + 2
        start = t
        timeline.append(
            {
                "name": "step %d" % number,
                "cat": "step",
                "start": int(start),
                "end": int(start + step[s]),
                "args": {"step": number},
            }
        )
        timeline.append(
            {"name": "load_dataset (data)", "cat": "input", "start": int(t), "end": int(t + inputs[s]), "args": {}}
        )
        t += inputs[s]
        for p in ("forward", "backward"):
            timeline.append(
                {
                    "name": "%s (loss)" % p,
                    "cat": p,
                    "start": int(t),
                    "end": int(t + passes[p][s]),
                    "args": {"graph": "loss", "functions": len(layers), "section": "graph 'loss'"},
                }
            )
            for e in graph:
                if e.phase == "%s_function" % p:
                    timeline.append(
                        {
                            "name": e.layer,
                            "cat": p,
                            "start": int(t),
                            "end": int(t + e.samples_ns[s]),
                            "args": {"class": e.impl_class, "type": e.layer_type, "phase": p},
                        }
                    )
                    t += e.samples_ns[s]
            t = start + inputs[s] + passes["forward"][s] + (passes["backward"][s] if p == "backward" else 0)
        timeline.append(
            {
                "name": "all_reduce",
                "cat": "communication",
                "start": int(t),
                "end": int(t + comm[s]),
                "args": {"bytes": 1_725_000},
            }
        )
        t = start + step[s]
    header = {
        "kind": "program",
        "project": "train.py",
        "mode": "record",
        "nnprofile": "bench",
        "context": "cpu:float",
        "sampling": "steps 2 to 21 of 21 recorded",
        "skipped_steps": 1,
        "active_steps": STEPS,
        "rank": rank,
        "world_size": size,
        "launcher": "Open MPI",
        "launch": "bench",
        "host": "node%d" % (rank // 8),
        "clock_origin_ns": rank * 1000,
        "started_unix": 1000.0,
        "drift_threshold": 0.1,
    }
    return Profile(
        header=header,
        sections=[
            Section(
                "graph",
                "loss",
                "",
                graph,
                complete=True,
                info={"graph": "loss", "trained_by": ["Momentum"], "forward_per_step": 1, "backward_per_step": 1},
            ),
            Section("script", "train.py", "", script, complete=True),
        ],
        complete=True,
        timeline=timeline,
    )


def write_ranks(folder: str, size: int) -> None:
    from nnprofile.result import file as result_file

    rng = random.Random(size)
    for rank in range(size):
        out = os.path.join(folder, "rank-%d" % rank)
        os.makedirs(out, exist_ok=True)
        result_file.save(rank_profile(rank, size, rng), out)


def merge_once(folder: str) -> float:
    """What ``nnprofile merge`` does, timed: load, merge, analyse, render, write."""
    from nnprofile.merging.ranks import collect, merge
    from nnprofile.render import write_all

    t0 = time.perf_counter()
    found = collect(folder)
    write_all(merge(found), folder)
    return time.perf_counter() - t0


def time_merges(sizes: Sequence[int] = SIZES, repeat: int = 3) -> Dict[int, float]:
    """The fastest merge of each world size, sizes interleaved; seconds."""
    work = tempfile.mkdtemp(prefix="nnprofile-ranks-")
    try:
        folders = {}
        for n in sizes:
            folders[n] = os.path.join(work, str(n))
            write_ranks(folders[n], n)
        best: Dict[int, float] = {}
        for _ in range(repeat):
            for n in sizes:
                seconds = merge_once(folders[n])
                best[n] = min(best.get(n, seconds), seconds)
        return best
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lines(best: Dict[int, float]) -> list:
    small, large = min(best), max(best)
    ratio = (best[large] / large) / (best[small] / small)
    out = ["| ranks | merge (s) | per rank (ms) |", "|---|---|---|"]
    out += ["| %d | %.2f | %.1f |" % (n, best[n], 1000 * best[n] / n) for n in sorted(best)]
    out += [
        "",
        "Per rank at %d ranks / at %d: **%.2f** (target at most %.1f: %s)."
        % (large, small, ratio, TARGET_PER_RANK_RATIO, "met" if ratio <= TARGET_PER_RANK_RATIO else "NOT met"),
    ]
    return out


if __name__ == "__main__":
    chosen = tuple(int(x) for x in sys.argv[1:]) or SIZES
    print("\n".join(lines(time_merges(chosen))))
