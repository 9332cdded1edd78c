"""What recording costs per function, measured on a chain of tiny functions before and after recording.

Recording adds time to every function (``nnprofile.base.hookcost``). It is measured on a chain
of 200 tiny functions, with and without the hooks, in pairs interleaved: the estimate is the
median of the pairs' differences, which a slow spell over a few passes does not move (a median
of all hooked passes against a median of all plain ones did: it over-subtracted the cost and
made the recorded step read 16% short on a noisy machine; the difference of the fastest runs
under-estimates it and leaves hook time in the passes). ``nnprofile.record`` measures it again
after the recording and keeps the smaller figure: a spell over the first measurement alone does
not make it larger than it is. A program with steps to spare also runs a few steps without the
hooks after its active ones: what the hooks cost in it beyond the chain's figure is measured
there (``nnprofile.base.hookcost.measured_in_program``).
"""
from __future__ import annotations

from typing import Any, Callable, List

from ..base.hookcost import HookCosts, paired_cost
from ..base.stats import median


def calibrate(recorder_factory: Callable[[], Any], n_functions: int = 200, pairs: int = 11) -> HookCosts:
    """Measure what recording costs per function, static hooks and auto_forward calls, on tiny functions."""
    import nnabla as nn
    import nnabla.functions as F
    import numpy as np
    from ..assembly.events import Call
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
        calls = [c for c in recorder.events if isinstance(c, Call)]
        inside_s.append(median([c.end_ns - c.start_ns for c in calls if not c.dynamic] or [0]))
        inside_d.append(median([c.end_ns - c.start_ns for c in calls if c.dynamic] or [0]))
    per_s, per_d = median(plain_s) / n_functions, median(plain_d) / n_functions
    static_total = paired_cost(plain_s, hooked_s, n_functions)
    dynamic_total = paired_cost(plain_d, hooked_d, n_functions)
    # Inside a function's interval: a call's interval less a plain call; never more than the whole cost.
    return HookCosts(static_total=static_total,
                     static_inside=min(static_total, max(0.0, median(inside_s) - per_s)),
                     dynamic_total=dynamic_total,
                     dynamic_inside=min(dynamic_total, max(0.0, median(inside_d) - per_d)))
