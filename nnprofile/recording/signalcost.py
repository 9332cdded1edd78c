"""What one of the sampler's signals costs the program beyond its handler's own time, and the shortest period that
keeps that cost a small share of the program's time.

The handler times itself, and that time is left out of every figure. What comes before it (the kernel delivering the
signal, the interpreter reaching a bytecode boundary and calling the handler, re-arming the CPU clock) is not: about
3 us on a machine of its own, 25 to 37 us a signal in a virtual machine of 2 cores (measured on a Python loop, the
clock armed every 0.25 ms and every 1 ms). At the sampler's quarter of a millisecond that read NNabla's Python API
tutorial (0.27 ms a step alone) 2.2x as long under nnprofile, and 1.1x to 1.2x with the clock every 4 ms. So the cost
is measured once in the process, on a loop of Python with the clock armed and without it, and the clock's period
is never shorter than ``1 / SHARE`` times it: the program's own lines are sampled less often where signals cost
more, and each sample's share says how few there were.
"""

from __future__ import annotations

import time
from typing import Any, List, Optional

from ..base.stats import median

SHARE = 0.02  # of the program's time its signals may take beyond their handler's own
PROBE_PERIOD_NS = 100_000  # the clock's period while the cost is measured
RUNS = 5
LOOP = 60_000  # iterations of the measuring loop: some 3 ms of Python
_measured: List[float] = []  # the cost a signal (ns), once measured in this process


def floor_ns(clock: Any, shortest_ns: int, longest_ns: int) -> int:
    """The clock's shortest period: ``shortest_ns`` where a signal costs little, up to ``longest_ns``."""
    if not _measured:
        _measured.append(_measure(clock))
    return int(min(longest_ns, max(shortest_ns, _measured[0] / SHARE)))


def _loop() -> int:
    t0 = time.perf_counter_ns()
    x = 0
    for i in range(LOOP):
        x += i & 7
    return time.perf_counter_ns() - t0


def _measure(clock: Any) -> float:
    """The loop's time with the clock armed against without it, over the signals it drew (0 where the CPU clock
    cannot be had: the profiling timer's period is the kernel's tick, long already)."""
    count = [0]

    def handler(signum: int, frame: Any) -> None:
        count[0] += 1
        cpu: Optional[Any] = clock.cpu
        if cpu is not None:
            cpu.rearm()

    try:
        how = clock.start(handler, PROBE_PERIOD_NS, PROBE_PERIOD_NS / 1e9)
    except Exception:
        return 0.0
    try:
        if how != "cpu":
            return 0.0
        armed = [_loop() for _ in range(RUNS)]
        signals = count[0] / RUNS
    finally:
        clock.stop()
    plain = [_loop() for _ in range(RUNS)]
    if signals < 1:
        return 0.0
    return max(0.0, (median([float(x) for x in armed]) - median([float(x) for x in plain])) / signals)
