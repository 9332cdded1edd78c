"""What recording a program costs per function, measured at start-up and taken off its figures.

Recording adds time to every function: NNabla's dispatch of the global hooks and
nnprofile's clock readings for a static graph, the wrapper of the function class
under ``auto_forward``. Part of that lies inside a function's own interval (taken
off the function), all of it inside the pass and the step (taken off them). It is
measured on a chain of 200 tiny functions, with and without the hooks, in pairs
interleaved: the estimate is the median of the pairs' differences, which a slow spell
over a few passes does not move (a median of all hooked passes against a median of
all plain ones did: it over-subtracted the cost and made the recorded step read 16%
short on a noisy machine; the difference of the fastest runs under-estimates it and
leaves hook time in the passes). ``nnprofile.record`` measures it again after the
recording and keeps the smaller figure: a spell over the first measurement alone
does not make it larger than it is. A program with steps to spare also runs a few
steps without the hooks after its active ones: what the hooks cost in it beyond the
chain's figure is measured there (``nnprofile.measure.program.measured_in_program``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List

from ..stats import summarize


@dataclass(frozen=True)
class HookCosts:
    """What recording adds per function, in ns: in all (to the pass), and inside its own interval."""

    static_total: float = 0.0
    static_inside: float = 0.0
    dynamic_total: float = 0.0
    dynamic_inside: float = 0.0
    # Measured in the program itself: the share of each function's own time that the hooks add
    # besides (they evict the caches; the next function reads slower by what its data costs).
    eviction: float = 0.0

    def inside(self, dynamic: bool) -> float:
        return self.dynamic_inside if dynamic else self.static_inside

    def total(self, dynamic: bool) -> float:
        return self.dynamic_total if dynamic else self.static_total

    def taken_off(self, interval_ns: float, dynamic: bool) -> float:
        """What of one function's interval is the hooks': their cost inside it and the eviction's share."""
        inside = self.inside(dynamic)
        return inside + self.eviction * max(0.0, interval_ns - inside)


def _median(values: List[float]) -> float:
    return summarize(values).median


def _cost(plain: List[float], hooked: List[float], n: int) -> float:
    """Per function: the median of the paired differences."""
    return max(0.0, _median([h - p for p, h in zip(plain, hooked)]) / n)


def smaller(a: HookCosts, b: HookCosts) -> HookCosts:
    """Of two measurements, the smaller figure of each (a slow spell only adds)."""
    return HookCosts(min(a.static_total, b.static_total), min(a.static_inside, b.static_inside),
                     min(a.dynamic_total, b.dynamic_total), min(a.dynamic_inside, b.dynamic_inside),
                     min(a.eviction, b.eviction))


def calibrate(recorder_factory: Callable[[], Any], n_functions: int = 200, pairs: int = 11) -> HookCosts:
    """Measure what recording costs per function, static hooks and auto_forward calls, on tiny functions."""
    import nnabla as nn
    import nnabla.functions as F
    import numpy as np
    from .recorder import FunctionCall
    x = nn.Variable((1,))
    x.d = 1.0
    y = x
    for _ in range(n_functions):
        y = F.relu(y)
    recorder = recorder_factory()
    clock = recorder.clock

    def static_pass() -> None:
        y.forward(clear_no_need_grad=True)

    def dynamic_pass() -> None:
        with nn.auto_forward(True):
            z = nn.Variable.from_numpy_array(np.ones((1,), dtype=np.float32))
            for _ in range(n_functions):
                z = F.relu(z)

    def timed(work: Any) -> float:
        start = clock()
        work()
        return float(clock() - start)

    plain_s: List[float] = []
    plain_d: List[float] = []
    hooked_s: List[float] = []
    hooked_d: List[float] = []
    inside_s: List[float] = []
    inside_d: List[float] = []
    static_pass()
    dynamic_pass()
    for _ in range(pairs):
        plain_s.append(timed(static_pass))
        plain_d.append(timed(dynamic_pass))
        recorder = recorder_factory()
        with recorder.hooked():
            hooked_s.append(timed(static_pass))
            hooked_d.append(timed(dynamic_pass))
        calls = [c for c in recorder.events if isinstance(c, FunctionCall)]
        inside_s.append(_median([c.end_ns - c.start_ns for c in calls if not c.dynamic] or [0]))
        inside_d.append(_median([c.end_ns - c.start_ns for c in calls if c.dynamic] or [0]))
    per_s, per_d = _median(plain_s) / n_functions, _median(plain_d) / n_functions
    static_total = _cost(plain_s, hooked_s, n_functions)
    dynamic_total = _cost(plain_d, hooked_d, n_functions)
    # Inside a function's interval: a call's interval less a plain call; never more than the whole cost.
    return HookCosts(static_total=static_total,
                     static_inside=min(static_total, max(0.0, _median(inside_s) - per_s)),
                     dynamic_total=dynamic_total,
                     dynamic_inside=min(dynamic_total, max(0.0, _median(inside_d) - per_d)))
