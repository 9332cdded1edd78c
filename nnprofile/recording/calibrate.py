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
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Sequence, Set, Tuple

from ..assembly.events import CPU
from ..base.hookcost import BACKWARD, KINDS, HookCosts, paired_cost
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


# Functions that draw random numbers (a ``seed`` argument, or these types) are not run again: a replica
# would move NNabla's random state, which the program's own results depend on.
RANDOM_TYPES = (
    "Dropout",
    "Rand",
    "Randint",
    "Randn",
    "RandomChoice",
    "RandomCrop",
    "RandomFlip",
    "RandomShift",
    "RandomErase",
    "ImageAugmentation",
    "RandBinomial",
    "RandBeta",
    "RandGamma",
)
REPLICA_BYTES = 64 * 1024 * 1024  # what the replicas of one signature may hold, at most
COPIES = (4, 12)  # replicas per pass: the difference of the two is what one costs
# Replicated only below this median call: a longer call's share of the hooks' cost differs from the chain's by a
# microsecond or two, 2 % of a call this long, while a pass of its replicas takes long and varies by more than the
# hooks cost it (lenet_train.py's MaxPooling and Tanh of 100-200 us took 0.22 s of 0.27 s of replicas, and read
# 0 us and 13 us: noise).
REPLICATED_BELOW_NS = 50_000


def signature_costs(
    capture: Any,
    recorder_factory: Callable[[], Any],
    known: Dict[str, Tuple[float, float]],
    below_ns: float = REPLICATED_BELOW_NS,
    budget_s: float = 2.0,
    pairs: int = 9,
) -> Dict[str, Tuple[float, float]]:
    """What the hooks cost a program's own functions, per signature (type, arguments, input shapes) and
    phase: (inside a call's interval, in all), measured on replicas made from the functions' descriptions,
    each with inputs of its own, never on the program's own graph. Keys: the signature for forward calls,
    ``signature + BACKWARD`` for backward calls.

    Only the functions short enough for the hooks' cost to matter (a median call under ``below_ns``, phase
    by phase) are measured, the most called first, within ``budget_s``; ``known`` holds those measured before (an
    earlier window), which are not measured again. A pass of ``k`` replicas costs a fixed amount plus
    ``k`` times a replica's share of it; two pass sizes (``COPIES``) give that share without the hooks
    and with them, so that what a call's interval holds beyond its share is the hooks' inside it."""
    import time

    from ..assembly.events import STATIC
    from ..assembly.passes import group_passes

    graph = capture.graph
    calls: Dict[str, Dict[str, List[float]]] = {}  # signature -> phase -> its calls' times
    first: Dict[str, Any] = {}
    for p in group_passes(capture.events, capture.sites):
        for e in p.calls:
            if e.kind == STATIC and e.function in graph.functions:
                f = graph.functions[e.function]
                key = graph.signature(f)
                calls.setdefault(key, {}).setdefault(p.phase, []).append(float(e.end_ns - e.start_ns))
                first.setdefault(key, f)
    out: Dict[str, Tuple[float, float]] = {}
    deadline = time.monotonic() + budget_s
    for key in sorted(calls, key=lambda k: -sum(map(len, calls[k].values()))):
        if key in known:
            out[key] = known[key]
            if key + BACKWARD in known:
                out[key + BACKWARD] = known[key + BACKWARD]
            continue
        short = {phase for phase, times in calls[key].items() if median(times) <= below_ns}
        if time.monotonic() > deadline or not short:
            continue
        measured = _replica_costs(first[key], graph, recorder_factory, pairs, short)
        for phase, costs in measured.items():
            out[key + (BACKWARD if phase == "backward" else "")] = costs
    return out


def _replica_costs(
    f: Any, graph: Any, recorder_factory: Callable[[], Any], pairs: int, phases: Set[str]
) -> Dict[str, Tuple[float, float]]:
    """Phase -> (inside, total) of one signature, for ``phases`` ("forward", "backward"); empty where it cannot be
    replicated safely."""
    import math

    import nnabla as nn
    import nnabla.function as function_module
    import nnabla.functions as F
    from nnabla.context import get_current_context

    if "seed" in f.args or f.type in RANDOM_TYPES or f.type == "Sink" or not hasattr(function_module, f.type):
        return {}
    outputs = [graph.variables[v] for v in f.outputs]
    if COPIES[1] * sum(math.prod(v.shape) * 4 for v in outputs) > REPLICA_BYTES:
        return {}
    grads = [graph.variables[v].need_grad for v in f.inputs] if "backward" in phases else []
    try:
        inputs = []
        for v in f.inputs:
            x = nn.Variable(graph.variables[v].shape, need_grad=False)
            x.d = 0.5  # a harmless value: an index 0, a positive divisor, a finite log
            inputs.append(x)
        passes = {}
        for k in COPIES:
            made = []
            for _ in range(k):
                out = getattr(function_module, f.type)(get_current_context(), **f.args)(
                    *inputs, n_outputs=len(outputs), auto_forward=False
                )
                made.append(out[0] if isinstance(out, (list, tuple)) else out)
            passes[k] = F.sink(*made)
            passes[k].forward()
    except Exception:  # a function NNabla cannot make from its description alone
        return {}
    out = {}
    if "forward" in phases:
        out["forward"] = _timed_replicas(passes, recorder_factory, pairs, lambda root: root.forward())
    if any(grads):
        try:
            for x, grad in zip(inputs, grads):
                x.need_grad = grad
            for root in passes.values():
                root.forward(clear_no_need_grad=False)
                root.backward(clear_buffer=False)
        except Exception:
            return out
        out["backward"] = _timed_replicas(
            passes, recorder_factory, pairs, lambda root: root.backward(clear_buffer=False)
        )
    return out


def _timed_replicas(
    passes: Dict[int, Any], recorder_factory: Callable[[], Any], pairs: int, run: Callable[[Any], None]
) -> Tuple[float, float]:
    """(inside, total) of the replicas' calls in passes of two sizes, without the hooks and with them."""
    from ..assembly.events import STATIC, Call

    recorder = recorder_factory()
    clock = busy_clock(recorder)
    plain: Dict[int, List[float]] = {k: [] for k in COPIES}
    hooked: Dict[int, List[float]] = {k: [] for k in COPIES}
    inside: List[float] = []
    for _ in range(pairs):
        for k, root in passes.items():
            t0 = clock()
            run(root)
            plain[k].append(float(clock() - t0))
            recorder = recorder_factory()
            with hooks_only(recorder, classes=False):
                t0 = clock()
                run(root)
                hooked[k].append(float(clock() - t0))
            if k == COPIES[1]:
                inside += [
                    call_time(c, recorder)
                    for c in recorder.window.events
                    if isinstance(c, Call) and c.kind == STATIC and c.function.info.type_name != "Sink"
                ]
    a, b = COPIES
    share = (median(plain[b]) - median(plain[a])) / (b - a)
    total = max(0.0, ((median(hooked[b]) - median(plain[b])) - (median(hooked[a]) - median(plain[a]))) / (b - a))
    return min(total, max(0.0, median(inside) - share)), total
