"""What recording costs per function, measured on a chain of tiny functions before and after recording.

Recording adds time to every function (``nnprofile.base.hookcost``). It is measured on a chain
of 200 tiny functions, with and without the hooks, in pairs interleaved: the estimate is the
median of the pairs' differences, which a slow spell over a few passes does not move (a median
of all hooked passes against a median of all plain ones did: it over-subtracted the cost and
made the recorded step read 16% short on a noisy machine; the difference of the fastest runs
under-estimates it and leaves hook time in the passes). ``nnprofile.record`` measures it again
after the recording and keeps the smaller figure: a spell over the first measurement alone does
not make it larger than it is. Where the block of steps without the hooks after the kept ones ran,
the step and its passes are set to it (``nnprofile.assembly.lean``); the estimate then splits them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Sequence

from ..assembly.events import CPU
from ..base.hookcost import KINDS, HookCosts, paired_cost
from ..base.stats import median

if TYPE_CHECKING:
    from .recorder import Recorder


REPEAT_SHORT = 10


@contextlib.contextmanager
def hooks_only(recorder: Recorder, classes: bool = True) -> Iterator[Recorder]:
    """``recorder`` with only the function hooks set and (``classes``) the function classes patched, for calibrating
    what they cost: no solvers, iterators or monitors, and no counting of steps. A static pass calls no class: timing
    one needs the hooks alone (patching the classes takes 0.5 ms a time). The module locks reentrant, as while a
    window records (``importlock``): else a collection inside one of NNabla's imports ends the measurement with
    KeyError (2 of 6 runs of tests/scripts/maml.py beside two busy processes)."""
    import nnabla as nn

    from . import importlock
    from .hooks import HOOK_KEY
    from .patching import Patches

    patches = Patches()
    recorder.functions.ndarray_type = nn.NdArray
    nn.set_function_pre_hook(HOOK_KEY, recorder.hooks.pre)
    nn.set_function_post_hook(HOOK_KEY, recorder.hooks.post)
    if classes:
        recorder._patch_functions(patches)
    recorder.program_thread = threading.get_ident()
    recorder.recording = recorder.capturing = recorder.hooks_on = True
    recorder.note_sites = False
    recorder.loop.mark(0)  # marks: passes do not count steps
    locks = importlock.install()
    try:
        yield recorder
    finally:
        recorder.recording = recorder.capturing = recorder.hooks_on = False
        nn.unset_function_pre_hook(HOOK_KEY)
        nn.unset_function_post_hook(HOOK_KEY)
        patches.undo()
        importlock.uninstall(locks)


def busy_clock(recorder: Recorder) -> Callable[[], int]:
    """The clock the calibration reads: the thread's CPU time where the kernel gives it (NNabla's CPU functions and
    the hooks run on this thread, so it is what they cost; another task running meanwhile, on a busy machine, is
    not), else the recorder's clock."""
    if recorder.cpu.kind == CPU:
        return recorder.cpu.probe.cpu_ns
    return recorder.clock


def call_time(call: Any, recorder: Recorder) -> float:
    """A recorded call's time as the calibration's clock reads it."""
    if recorder.cpu.kind == CPU and (call.m0 or call.m1):
        return float(call.m1 - call.m0)
    return float(call.end_ns - call.start_ns)


def _chain_works(n_functions: int, short: int) -> Dict[str, Callable[[], None]]:
    """What the calibration times, with the hooks and without: a static pass over a chain of ``n_functions`` tiny
    functions, ``REPEAT_SHORT`` passes over one of ``short``, the chain under auto_forward, and eager on NdArrays."""
    import nnabla as nn
    import nnabla.functions as F
    import numpy as np

    x = nn.Variable((1,))
    x.d = 1.0
    long_chain, short_chain = x, x
    for i in range(n_functions):
        long_chain = F.relu(long_chain)
        if i < short:
            short_chain = F.relu(short_chain)

    def static_pass(root: Any = long_chain) -> None:
        root.forward(clear_no_need_grad=True)

    def dynamic_pass() -> None:
        with nn.auto_forward(True):
            z = nn.Variable.from_numpy_array(np.ones((1,), dtype=np.float32))
            for _ in range(n_functions):
                z = F.relu(z)

    def eager_pass() -> None:
        z = nn.NdArray.from_numpy_array(np.ones((1,), dtype=np.float32))
        for _ in range(n_functions):
            z = F.relu(z)

    def short_passes() -> None:  # (several: a short chain's difference is small against the clock's noise)
        for _ in range(REPEAT_SHORT):
            static_pass(short_chain)

    return {"static": static_pass, "short": short_passes, "dynamic": dynamic_pass, "eager": eager_pass}


def calibrate(
    recorder_factory: Callable[[], Any],
    n_functions: int = 200,
    short: int = 20,
    pairs: int = 11,
    kinds: Sequence[str] = KINDS,
) -> HookCosts:
    """Measure what recording costs per function (of ``kinds``: static hooks, auto_forward calls, eager calls
    on NdArrays) on chains of tiny functions, and per static pass: a chain of ``n_functions`` and one of
    ``short`` differ only by their functions, so what is left of the hooks' cost is the pass's own. A kind not
    measured reads 0 (``HookCosts.kinds`` says which were)."""
    from ..assembly.events import Call

    wanted = set(kinds) | ({"short"} if "static" in kinds else set())
    works = {k: w for k, w in _chain_works(n_functions, short).items() if k in wanted}
    recorder = recorder_factory()
    clock = busy_clock(recorder)

    def timed(work: Any) -> float:
        start = clock()
        work()
        return float(clock() - start)

    plain: Dict[str, List[float]] = {k: [] for k in works}
    hooked: Dict[str, List[float]] = {k: [] for k in works}
    inside: Dict[str, List[float]] = {k: [] for k in KINDS if k in works}
    for work in works.values():
        work()
    for _ in range(pairs):
        for k, work in works.items():
            plain[k].append(timed(work))
        recorder = recorder_factory()
        with hooks_only(recorder, classes=bool({"dynamic", "eager"} & set(works))):
            for k, work in works.items():
                aside = len(recorder.window.excluded)
                took = timed(work)
                # nnprofile's own work set aside as it ran is left out of every figure: no cost of the hooks'
                hooked[k].append(took - sum(b - a for a, b in recorder.window.excluded[aside:]))
        calls = [c for c in recorder.window.events if isinstance(c, Call)]
        for kind in inside:
            inside[kind].append(median([call_time(c, recorder) for c in calls if c.kind == kind] or [0]))
    totals = {k: paired_cost(plain[k], hooked[k], n_functions) for k in inside}
    # Inside a function's interval: a call's interval less a plain call; never more than the whole cost.
    within = {k: min(totals[k], max(0.0, median(inside[k]) - median(plain[k]) / n_functions)) for k in totals}
    per_pass = paired_cost(plain["short"], hooked["short"], REPEAT_SHORT) if "short" in works else 0.0
    figures: Dict[str, Any] = {
        "%s_%s" % (k, part): v[k] for k in inside for part, v in (("total", totals), ("inside", within))
    }
    made = HookCosts(pass_total=max(0.0, per_pass - short * totals.get("static", 0.0)), kinds=tuple(inside))
    return dataclasses.replace(made, **figures)
