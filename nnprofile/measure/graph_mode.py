"""Graph mode: each function timed inside whole passes, between NNabla's hooks.

The hooks only read the clock; readings are matched to the functions of the
pass by execution order, checked on every pass. What the hooks themselves cost
is measured on a chain of tiny functions (``hook_costs``).
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

from ..base.stats import summarize
from .timing import Sampling, Timer


def timing_hooks(timer: Timer, starts: List[int], ends: List[int], marks: Optional[List[int]] = None):
    """A pre- and a post-hook that only read the clock (waiting for the device first, if any); with ``marks``, and
    the thread's CPU time known, they read it too (before the start, after the end: a function held up by other work
    falls short of its wall time)."""
    now, sync = timer.clock.now_ns, timer.sync
    start, end = starts.append, ends.append
    cpu = timer.cpu
    if sync is None and marks is not None and cpu is not None:
        mark = marks.append

        def marked_pre(f):
            mark(cpu())
            start(now())

        def marked_post(f):
            end(now())
            mark(cpu())

        return marked_pre, marked_post
    if sync is None:
        return (lambda f: start(now())), (lambda f: end(now()))

    def pre(f):
        sync()  # what ran before this function is not its time
        start(now())

    def post(f):
        sync()
        end(now())

    return pre, post


def hook_costs(timer: Timer, target, n_functions: int, rounds: int = 5) -> Tuple[float, float, float]:
    """Per function, in ns: what the timing hooks add to a forward pass, what NNabla's own
    dispatch of empty hooks adds (a part of the first), and what of the timing hooks' cost
    falls inside a function's own interval (between its pre- and post-hook readings).

    Passes without hooks, with the timing hooks and with empty hooks, interleaved
    so that drift on a busy machine hits all three alike; medians.
    """
    starts: List[int] = []
    ends: List[int] = []
    pre, post = timing_hooks(timer, starts, ends)

    def plain():
        target.forward(clear_no_need_grad=True)

    def hooked():
        del starts[:], ends[:]
        target.forward(clear_no_need_grad=True, function_pre_hook=pre, function_post_hook=post)

    def empty_hooks():
        target.forward(clear_no_need_grad=True, function_pre_hook=lambda f: None, function_post_hook=lambda f: None)

    fixed = Timer(Sampling(runs=10, warmup=2), timer.clock, timer.sync)
    samples: Dict[Callable, List[float]] = {plain: [], hooked: [], empty_hooks: []}
    intervals: List[float] = []
    for _ in range(rounds):
        for work, values in samples.items():
            values += fixed.measure(work, batchable=False).samples_ns
        intervals += [e - s for s, e in zip(starts, ends)]
    base, with_timing, empty = (summarize(samples[w]).median for w in (plain, hooked, empty_hooks))
    inside = max(0.0, summarize(intervals or [0.0]).median - base / n_functions)
    return (with_timing - base) / n_functions, (empty - base) / n_functions, inside


def calibrate_hooks(timer: Timer, n_functions: int = 200) -> Tuple[float, float]:
    """What the graph-mode timing hooks add per function, in ns: to a pass, and inside the function's interval.

    Measured on a chain of tiny functions in the current context, so that the
    hooks' cost is not lost in the noise of real layers.
    """
    import nnabla as nn
    import nnabla.functions as F

    x = nn.Variable((1,))
    x.d = 1.0
    y = x
    for _ in range(n_functions):
        y = F.relu(y)
    total, _, inside = hook_costs(timer, y, n_functions)
    return total, inside
