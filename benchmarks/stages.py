"""Each stage of nnprofile timed on synthetic profiles of growing size: is every stage linear?

    python benchmarks/stages.py [100 1000 5000]     prints each stage's time per size and the check

Stages: loading result.json (``nnprofile.load``), measuring (the round scheduler and the
statistics on a fake clock, with entries that do nothing), the analysis, every renderer, and
writing result.json. A stage is linear when its marginal cost from 1,000 to 5,000 entries is at
most 1.5 times its marginal cost from 100 to 1,000:

    (T(5000) - T(1000)) / 4000  <=  1.5 * (T(1000) - T(100)) / 900

Each figure is the fastest of several rounds over all sizes (the machine's slow spells only add
time, and interleaving the sizes spreads a spell over them).
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

SIZES = (100, 1000, 5000)
FACTOR = 1.5
MIN_SECONDS = 0.5  # a stage is repeated until it has taken this long, at least `repeat` times


class _FakeClock:
    """Each reading one microsecond after the last: entries that do nothing take 1 us a sample."""

    name = "fake"

    def __init__(self) -> None:
        self.t = 0

    def now_ns(self) -> int:
        self.t += 1000
        return self.t


def measure_stage(entries: int) -> Callable[[], object]:
    """The round scheduler over ``entries`` probes that do nothing, on the fake clock."""
    from nnprofile.measure.items import Probe
    from nnprofile.measure.rounds import RoundRunner
    from nnprofile.measure.sequence import simple
    from nnprofile.measure.timing import Sampling, Timer
    from nnprofile.result import Section

    def run() -> object:
        timer = Timer(Sampling(), clock=_FakeClock())
        probes = [
            Probe(simple("forward_function (L%d : Affine)" % i, "forward_function"), lambda: None, layer=True)
            for i in range(entries)
        ]
        section = Section(kind="optimizer", name="O", network="N")
        RoundRunner(timer, reference=False).run(section, probes)
        return section

    return run


def stage_functions(entries: int, work: str) -> Dict[str, Callable[[], object]]:
    from nnprofile.analysis import analyze
    from nnprofile.render import RENDERERS
    from nnprofile.result import file as result_file
    from synthetic import synthetic_profile

    profile = synthetic_profile(entries)
    folder = os.path.join(work, "n%d" % entries)
    os.makedirs(folder, exist_ok=True)
    result_file.save(profile, folder)
    analysis = analyze(profile)
    stages: Dict[str, Callable[[], object]] = {
        "load": lambda: result_file.load(folder),
        "measure": measure_stage(entries),
        "analysis": lambda: analyze(profile),
    }
    for name, renderer in RENDERERS.items():
        stages[name] = (lambda r: lambda: r.files(profile, analysis))(renderer)
    stages["result.json"] = lambda: result_file.save(profile, folder)
    return stages


def time_stages(sizes: Sequence[int] = SIZES, repeat: int = 5) -> Dict[str, Dict[int, float]]:
    """stage -> size -> seconds: the fastest of ``repeat`` rounds, each round over every size and
    stage in turn, so that a slow spell of the machine hits the sizes alike."""
    work = tempfile.mkdtemp(prefix="nnprofile-stages-")
    times: Dict[str, Dict[int, float]] = {}
    try:
        functions = {n: stage_functions(n, work) for n in sizes}
        for _ in range(repeat):
            for n in sizes:
                for stage, run in functions[n].items():
                    best, spent, runs = times.get(stage, {}).get(n, float("inf")), 0.0, 0
                    while runs < 1 or (spent < MIN_SECONDS / repeat and runs < 20):  # quick stages: more runs
                        gc.collect()
                        t0 = time.perf_counter()
                        run()
                        took = time.perf_counter() - t0
                        best, spent, runs = min(best, took), spent + took, runs + 1
                    times.setdefault(stage, {})[n] = best
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return times


def linear(t: Dict[int, float], sizes: Sequence[int] = SIZES) -> bool:
    small, middle, large = sizes
    early = (t[middle] - t[small]) / (middle - small)
    late = (t[large] - t[middle]) / (large - middle)
    return late <= FACTOR * max(early, 0.0) or late <= 0


def result_json_bytes(entries: int) -> int:
    from nnprofile.result import file as result_file
    from synthetic import synthetic_profile

    return len(result_file.dumps(synthetic_profile(entries)).encode())


def table(times: Dict[str, Dict[int, float]], sizes: Sequence[int] = SIZES) -> List[str]:
    small, middle, large = sizes
    lines = [
        "| stage | %s | marginal 100→1,000 (µs/entry) | marginal 1,000→5,000 (µs/entry) | linear |"
        % " | ".join("%s entries" % format(n, ",") for n in sizes),
        "|---" * (len(sizes) + 4) + "|",
    ]
    for stage, t in times.items():
        early = (t[middle] - t[small]) / (middle - small) * 1e6
        late = (t[large] - t[middle]) / (large - middle) * 1e6
        lines.append(
            "| %s | %s | %.1f | %.1f | %s |"
            % (stage, " | ".join("%.3f s" % t[n] for n in sizes), early, late, "yes" if linear(t, sizes) else "**NO**")
        )
    return lines


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    result = time_stages(sizes)
    print("\n".join(table(result, sizes)))
    for n in sizes:
        print("result.json of %d entries: %.0f bytes per entry" % (n, result_json_bytes(n) / n))
