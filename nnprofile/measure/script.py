"""From a recorded program to a profile: layers named and identified, steps as rounds, a timeline.

Layer names come from the parameters a function uses: their common scope (the
parameter path without its last component, ``block1/conv1/conv`` for
``block1/conv1/conv/W``). Parameter-free functions get their type, numbered per
type in execution order as NNC names layers (``ReLU``, ``ReLU_2``). A layer's
identity is its function in a static graph, and its position in the step
under ``auto_forward`` (where functions are made anew every step); the name
follows the identity, so it is the same in every step, forward and backward.

Each active step is a round of the profile: an entry's samples are its calls,
its round sizes the calls per step, and steps the machine ran slow in are
left out as rounds are. The hooks' own cost, measured at start-up, is taken
off every function's time and off the passes and steps they sit in.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..choices import PHASES
from ..choices import SCRIPT
from ..result import Entry, Section
from ..stats import Drift, speed_levels, summarize
from .layers import Layer
from .recorder import FunctionCall, RawStep, Recorder, SolverCall
from .timing import Measurement

SOLVER_PHASES = {"zero_grad": "prepare_backward", "weight_decay": "weight_decay", "update": "update"}
# Events a trace keeps per step: a bound on its size (times the active steps).
MAX_EVENTS_PER_STEP = 20_000


@dataclass(frozen=True)
class HookCosts:
    """What recording adds per function, in ns: in all (to the pass), and inside its own interval."""

    static_total: float = 0.0
    static_inside: float = 0.0
    dynamic_total: float = 0.0
    dynamic_inside: float = 0.0


class Namer:
    """Names functions by the scope of their parameters, or by type, numbered in execution order."""

    def __init__(self) -> None:
        self.parameter_names: Dict[Any, str] = {}
        self.not_parameters: set = set()
        self.per_type: Dict[str, int] = {}
        self.used: Dict[str, int] = {}

    def _refresh(self) -> None:
        import nnabla as nn
        self.parameter_names = {v: k for k, v in nn.get_parameters(grad_only=False).items()}

    def parameter_of(self, variable: Any) -> Optional[str]:
        name = self.parameter_names.get(variable)
        if name is None and variable not in self.not_parameters and variable.parent is None:
            self._refresh()  # parameters made since (auto_forward makes them as it goes)
            name = self.parameter_names.get(variable)
            if name is None:
                self.not_parameters.add(variable)
        return name

    def name(self, function: Any) -> str:
        params = [p for p in (self.parameter_of(v) for v in function.inputs) if p]
        if params:
            scopes = [p.rsplit("/", 1)[0] if "/" in p else p for p in params]
            name = os.path.commonprefix(scopes).rstrip("/") if len(set(scopes)) > 1 else scopes[0]
            if not name:
                name = scopes[0]
        else:
            kind = function.info.type_name
            self.per_type[kind] = self.per_type.get(kind, 0) + 1
            n = self.per_type[kind]
            name = kind if n == 1 else "%s_%d" % (kind, n)
        self.used[name] = self.used.get(name, 0) + 1
        if self.used[name] > 1:  # shared parameters, called twice: still two layers
            name = "%s#%d" % (name, self.used[name])
        return name


@dataclass
class _Series:
    samples: List[float] = field(default_factory=list)
    sizes: List[int] = field(default_factory=list)


class Assembler:
    """Turns the raw steps of a Recorder into the entries of one section, and a timeline."""

    def __init__(self, recorder: Recorder, costs: HookCosts):
        self.recorder = recorder
        self.costs = costs
        self.title = ""
        self.namer = Namer()
        self.layers: Dict[Any, Layer] = {}
        self.parameters: frozenset = frozenset()

    def _layer(self, key: Any, function: Any) -> Layer:
        layer = self.layers.get(key)
        if layer is None:
            if not self.parameters:
                import nnabla as nn
                self.parameters = frozenset(nn.get_parameters(grad_only=False).values())
            layer = Layer(function, self.namer.name(function), self.parameters, layer_id=len(self.layers))
            self.layers[key] = layer
        return layer

    def _resolve(self, step: RawStep) -> List[Tuple[Any, str, Any]]:
        """(call, phase, layer key) of each call of a step; solver calls with their method."""
        out = []
        position = 0
        dynamic_keys: Dict[Any, Any] = {}
        seen_forward: set = set()
        for call in step.calls:
            if isinstance(call, SolverCall):
                out.append((call, call.method, None))
                continue
            if call.dynamic:
                key: Any = ("step position", position)
                position += 1
                dynamic_keys[call.function] = key
                phase = "forward"
            else:
                phase = call.phase or self.recorder.phase_of(call.site)
                key = dynamic_keys.get(call.function, call.function)
                if not phase:  # a call site we could not read: a function's second run in a step is its backward
                    phase = "backward" if key in seen_forward else "forward"
            if phase == "forward":
                seen_forward.add(key)
            self._layer(key, call.function)
            out.append((call, phase, key))
        return out

    def section(self, name: str) -> Tuple[Section, List[Dict[str, Any]], int]:
        """The script's section (entries in NNC's order), its timeline, and the skip applied."""
        self.title = Section(kind=SCRIPT, name=name, network="").title
        kept, skip = self.recorder.kept_steps()
        resolved_all = [self._resolve(step) for step in self.recorder.steps]  # names follow first sight
        resolved = resolved_all[skip:skip + len(kept)]
        forward: Dict[Any, _Series] = {}
        backward: Dict[Any, _Series] = {}
        solver: Dict[Tuple[str, str], _Series] = {}
        whole = {"forward_all": _Series(), "backward_all": _Series(), "step": _Series()}
        timeline: List[Dict[str, Any]] = []
        origin = kept[0].start_ns if kept else 0
        c = self.costs
        for r, (step, calls) in enumerate(zip(kept, resolved)):
            for series in list(forward.values()) + list(backward.values()) + list(solver.values()) + \
                    list(whole.values()):
                series.sizes.append(0)
            passes = _passes(calls)
            hooked = sum(1 for call, phase, key in calls if isinstance(call, FunctionCall) and not call.dynamic)
            dynamic = sum(1 for call, phase, key in calls if isinstance(call, FunctionCall) and call.dynamic)
            for call, phase, key in calls:
                if isinstance(call, SolverCall):
                    s = solver.setdefault((call.method, call.solver), _Series([], [0] * (r + 1)))
                else:
                    table = forward if phase == "forward" else backward
                    s = table.setdefault(key, _Series([], [0] * (r + 1)))
                s.samples.append(call.end_ns - call.start_ns)
                s.sizes[-1] += 1
            for phase, start, end, n, n_dynamic in passes:
                cost = (n - n_dynamic) * c.static_total + n_dynamic * c.dynamic_total
                target = whole["forward_all" if phase == "forward" else "backward_all"]
                if target.sizes[-1]:
                    target.samples[-1] += max(0.0, end - start - cost)
                else:
                    target.samples.append(max(0.0, end - start - cost))
                    target.sizes[-1] = 1
            step_cost = hooked * c.static_total + dynamic * c.dynamic_total
            whole["step"].samples.append(max(0.0, step.end_ns - step.start_ns - step_cost))
            whole["step"].sizes[-1] = 1
            timeline += self._timeline(r + skip + 1, step, calls, passes, origin)
        entries: List[Entry] = []
        for key, s in forward.items():
            entries.append(self._layer_entry(key, "forward_function", s))
        for key, s in backward.items():
            entries.append(self._layer_entry(key, "backward_function", s))
        for phase, s in whole.items():
            if s.samples:
                entries.append(_entry(phase, phase, s, 0.0))
        for (method, solver_name), s in solver.items():
            entries.append(_entry("%s (%s)" % (method, solver_name), SOLVER_PHASES.get(method, "solver"), s, 0.0))
        entries.sort(key=lambda e: PHASES.index(e.phase))  # NNC's order; stable within a phase
        section = Section(kind=SCRIPT, name=name, network="", entries=entries, complete=True)
        drift = Drift(tuple(speed_levels([(e.samples_ns, e.round_sizes) for e in entries if e.phase != "step"],
                                         len(kept))), 0.10)
        section.speed_levels = [round(level, 4) for level in drift.levels]
        for e in entries:
            e.dropped_rounds = drift.dropped
        if resolved:
            section.memory = self._memory(resolved[0])
        return section, timeline, skip

    def _memory(self, calls: List[Tuple[Any, str, Any]]) -> Dict[str, Any]:
        """The memory of a step, estimated from the functions of the first active step."""
        import nnabla as nn
        from . import memory
        forward = [(call.function, self.layers[key].name) for call, phase, key in calls
                   if isinstance(call, FunctionCall) and phase == "forward"]
        itemsize = self.layers[calls[0][2]].itemsize if calls and calls[0][2] is not None else 4
        return memory.step_memory(
            [f for f, _ in forward], [n for _, n in forward], list(nn.get_parameters(grad_only=False).values()),
            itemsize, training=any(phase == "backward" for _, phase, _ in calls),
            solver_state=sum(memory.solver_state_bytes(s) for s in self.recorder.solvers),
            measured="not measured for a recorded program (its steps are its own); the estimate "
                     "follows the functions of its first active step")

    def _layer_entry(self, key: Any, phase: str, s: _Series) -> Entry:
        layer = self.layers[key]
        dynamic = isinstance(key, tuple) and phase == "forward_function"
        inside = self.costs.dynamic_inside if dynamic else self.costs.static_inside
        e = layer.entry(phase, Measurement([float(x) for x in s.samples], 1, inside))
        e.round_sizes = s.sizes
        return e

    def _timeline(self, number: int, step: RawStep, calls: List[Tuple[Any, str, Any]],
                  passes: List[Tuple[str, int, int, int, int]], origin: int) -> List[Dict[str, Any]]:
        events: List[Dict[str, Any]] = [{"name": "step %d" % number, "cat": "step", "start": step.start_ns - origin,
                                         "end": step.end_ns - origin, "args": {"step": number}}]
        for phase, start, end, n, _ in passes:
            events.append({"name": phase, "cat": phase, "start": start - origin, "end": end - origin,
                           "args": {"functions": n, "section": self.title}})
        for call, phase, key in calls[:MAX_EVENTS_PER_STEP]:
            if isinstance(call, SolverCall):
                events.append({"name": "%s (%s)" % (call.method, call.solver), "cat": "update",
                               "start": call.start_ns - origin, "end": call.end_ns - origin, "args": {}})
                continue
            layer = self.layers[key]
            events.append({"name": layer.name, "cat": phase, "start": call.start_ns - origin,
                           "end": call.end_ns - origin, "args": layer.trace_args(phase)})
        return events


def _passes(calls: List[Tuple[Any, str, Any]]) -> List[Tuple[str, int, int, int, int]]:
    """Consecutive function calls of one phase from one call site: (phase, start, end, calls, dynamic calls)."""
    out: List[List[Any]] = []
    current: Optional[List[Any]] = None
    for call, phase, key in calls:
        if isinstance(call, SolverCall):
            current = None
            continue
        site = "dynamic" if call.dynamic else call.site
        if current is not None and current[0] == phase and current[5] == site:
            current[2] = call.end_ns
            current[3] += 1
            current[4] += int(call.dynamic)
        else:
            current = [phase, call.start_ns, call.end_ns, 1, int(call.dynamic), site]
            out.append(current)
    return [(p[0], p[1], p[2], p[3], p[4]) for p in out]


def _entry(label: str, phase: str, s: _Series, overhead: float) -> Entry:
    return Entry(label=label, phase=phase, samples_ns=[float(x) for x in s.samples], overhead_ns=overhead,
                 round_sizes=list(s.sizes))


def calibrate(recorder_factory: Any, n_functions: int = 200, rounds: int = 7) -> HookCosts:
    """Measure what recording costs per function, static hooks and dynamic calls, on tiny functions."""
    import nnabla as nn
    import nnabla.functions as F
    import numpy as np
    x = nn.Variable((1,))
    x.d = 1.0
    y = x
    for _ in range(n_functions):
        y = F.relu(y)
    clock = recorder_factory().clock

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

    plain_s, plain_d, hooked_s, hooked_d, inside_s, inside_d = [], [], [], [], [], []
    static_pass()
    dynamic_pass()
    for _ in range(rounds):
        plain_s.append(timed(static_pass))
        plain_d.append(timed(dynamic_pass))
        recorder = recorder_factory().start()
        try:
            hooked_s.append(timed(static_pass))
            hooked_d.append(timed(dynamic_pass))
            calls = [c for c in recorder.current.calls if isinstance(c, FunctionCall)]
        finally:
            recorder.stop()
        inside_s.append(summarize([c.end_ns - c.start_ns for c in calls if not c.dynamic] or [0]).median)
        inside_d.append(summarize([c.end_ns - c.start_ns for c in calls if c.dynamic] or [0]).median)
    med = lambda values: summarize(values).median  # noqa: E731
    per_s, per_d = med(plain_s) / n_functions, med(plain_d) / n_functions
    return HookCosts(static_total=max(0.0, med(hooked_s) / n_functions - per_s),
                     static_inside=max(0.0, med(inside_s) - per_s),
                     dynamic_total=max(0.0, med(hooked_d) / n_functions - per_d),
                     dynamic_inside=max(0.0, med(inside_d) - per_d))
