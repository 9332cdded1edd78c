"""What a step's buffers hold, estimated from the graph: per layer, and along the step.

NNabla's Python API has no call for allocated or peak bytes on the CPU, so:

- per layer, the bytes of its outputs, parameters, their gradients and the
  gradients it writes for its inputs, in the dtype that really ran;
- the estimated peak follows the buffers' lifetimes in execution order under
  NNabla's release rules: in a training forward (``clear_no_need_grad``) a
  buffer is released after its last reader unless a backward needs its data;
  in backward (``clear_buffer``) gradients are released once consumed and data
  after the last function that needs it; in inference (``clear_buffer``) after
  the last reader. In-place outputs share their input's buffer. Parameters,
  their gradients and the solver's state stay for the whole step.

Everything here reads functions and variables as data (``nnprofile.base.functions``). What is
measured (the process's or the device's memory over a step) is in ``nnprofile.measure.peak``;
how the outputs say it, in ``nnprofile.render.memory``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

from .functions import FunctionInfo, Graph, VariableInfo, dtype_name
from .records import Record

ITEMSIZE = {
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}


def nbytes(variable: VariableInfo, itemsize: Optional[int] = None) -> int:
    size = math.prod(variable.shape) if variable.shape else 1
    if itemsize is None:
        itemsize = ITEMSIZE.get(variable.dtype or "", 4)  # not allocated yet: NNabla's default float
    return size * itemsize


@dataclass(frozen=True)
class LayerMemory:
    output_bytes: int
    parameter_bytes: int
    gradient_bytes: int  # of its parameters
    input_gradient_bytes: int  # the gradients it writes for its other inputs


def layer_memory(f: FunctionInfo, graph: Graph, itemsize: int) -> LayerMemory:
    inputs, outputs = graph.inputs(f), graph.outputs(f)
    params = [v for v in inputs if v.parameter]
    return LayerMemory(
        output_bytes=sum(nbytes(v, itemsize) for v in outputs),
        parameter_bytes=sum(nbytes(v) for v in params),
        gradient_bytes=sum(nbytes(v) for v in params if v.need_grad),
        input_gradient_bytes=sum(nbytes(v, itemsize) for v in inputs if not v.parameter and v.need_grad),
    )


@dataclass
class Estimate:
    """The live activation bytes along a step, from the buffers' lifetimes."""

    curve: List[Tuple[str, str, int]] = field(default_factory=list)  # (layer, phase, live bytes after it)
    peak: int = 0
    peak_layer: str = ""
    peak_phase: str = ""
    alive_at_peak: List[Tuple[str, int]] = field(default_factory=list)

    def record(self, layer: str, phase: str, total: int, *alive: Dict[Any, Tuple[str, int]]) -> None:
        """The buffers alive after ``layer``'s ``phase`` (``alive``, in order; ``total``: their bytes): a point of the
        curve, and the peak where it is one."""
        self.curve.append((layer, phase, total))
        if total > self.peak:
            self.peak, self.peak_layer, self.peak_phase = total, layer, phase
            buffers = [b for each in alive for b in each.values()]
            self.alive_at_peak = sorted(buffers, key=lambda x: -x[1])[:10]


def _needs_grad(f: FunctionInfo, graph: Graph) -> bool:
    return any(graph.variables[v].need_grad for v in f.inputs)


def _data_needed_in_backward(functions: Sequence[FunctionInfo], graph: Graph) -> set:
    """Variables whose data some function's backward reads."""
    needed = set()
    for f in functions:
        if not _needs_grad(f, graph):
            continue
        for i, what, j in f.grad_reads:
            if i < len(f.inputs) and graph.variables[f.inputs[i]].need_grad:
                side = f.inputs if what == "in" else f.outputs
                if j < len(side):
                    needed.add(side[j])
    return needed


def estimate(
    functions: Sequence[FunctionInfo],
    graph: Graph,
    names: Sequence[str],
    parameters: AbstractSet[int],
    itemsize: int,
    training: bool,
) -> Estimate:
    """Simulate one forward (and, training, one backward) pass; ``functions`` in forward order. (The bytes alive are
    kept as a running total: a pass of 1,600 functions summed at each made 0.2 s.)"""
    est = Estimate()
    var = graph.variables
    live = _Alive()
    consumers: Dict[int, int] = {}
    for i, f in enumerate(functions):
        for v in f.inputs:
            consumers[v] = i
    produced = {v for f in functions for v in f.outputs}
    needed = _data_needed_in_backward(functions, graph) if training else set()
    finals = {v for v in produced if v not in consumers}
    for v in consumers:  # the data fed in: the input batch
        if v not in produced and v not in parameters:
            live.put(v, ("input %s" % "x".join(str(d) for d in var[v].shape), nbytes(var[v], itemsize)))
    for i, (f, name) in enumerate(zip(functions, names)):
        for o, v in enumerate(f.outputs):
            shared = o < len(f.in_place) and f.in_place[o]
            live.put(v, ("%s output" % name, 0 if shared else nbytes(var[v], itemsize)))
        est.record(name, "forward", live.total, live.held)
        for v in f.inputs:
            if consumers.get(v) == i and v in produced and v not in needed and v not in finals:
                live.drop(v)
    if not training:
        return est
    grads = _Alive()
    remaining_need: Dict[int, int] = {}
    backward = [(f, n) for f, n in zip(functions, names) if _needs_grad(f, graph)][::-1]
    for k, (f, _) in enumerate(backward):
        for v in list(f.inputs) + list(f.outputs):
            if v in needed:
                remaining_need[v] = k
    released: Dict[int, List[Any]] = {}  # backward step -> the activations let go after it
    for v in live.held:
        if v in produced and v not in finals:
            released.setdefault(max(0, remaining_need.get(v, -1)), []).append(v)
    for v in finals:
        grads.put(v, ("gradient of the loss", nbytes(var[v], itemsize)))
    for k, (f, name) in enumerate(backward):
        for v in f.inputs:
            if var[v].need_grad and v not in parameters and v not in grads.held:
                grads.put(v, ("%s input gradient" % name, nbytes(var[v], itemsize)))
        est.record(name, "backward", live.total + grads.total, live.held, grads.held)
        for v in f.outputs:  # consumed
            grads.drop(v)
        for v in released.get(k, ()):
            live.drop(v)
    return est


class _Alive:
    """Buffers alive (key -> (what, bytes)), in the order they came, and their bytes together."""

    def __init__(self) -> None:
        self.held: Dict[Any, Tuple[str, int]] = {}
        self.total = 0

    def put(self, key: Any, buffer: Tuple[str, int]) -> None:
        """(One held already keeps its place: a dict's.)"""
        before = self.held.get(key)
        self.held[key] = buffer
        self.total += buffer[1] - (before[1] if before is not None else 0)

    def drop(self, key: Any) -> None:
        gone = self.held.pop(key, None)
        if gone is not None:
            self.total -= gone[1]


@dataclass
class StepMemory(Record):
    """A section's step memory (bytes; empty where not estimated, as in results of early versions): what stays for
    the whole step, the activations at the estimated peak (where, what is alive there), the estimate along the
    step (``curve``: [label, bytes] per point), the batch it was for, and the growth measured (how)."""

    SPARSE = False
    parameters: Optional[int] = None
    gradients: Optional[int] = None
    solver_state: Optional[int] = None
    activations_at_peak: Optional[int] = None
    peak_estimated: Optional[int] = None
    peak_layer: Optional[str] = None
    peak_phase: Optional[str] = None
    alive_at_peak: List[List[Any]] = field(default_factory=list)
    curve: List[List[Any]] = field(default_factory=list)
    batch_size: Optional[int] = None
    peak_measured: Optional[int] = None
    measured: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def estimated(self) -> bool:
        return self.peak_estimated is not None

    @property
    def fixed(self) -> int:
        """What stays for the whole step: parameters, their gradients, the solver's state."""
        return (self.parameters or 0) + (self.gradients or 0) + (self.solver_state or 0)


StepMemory.KINDS = {
    "parameters": int,
    "gradients": int,
    "solver_state": int,
    "activations_at_peak": int,
    "peak_estimated": int,
    "peak_layer": str,
    "peak_phase": str,
    "alive_at_peak": list,
    "curve": list,
    "batch_size": int,
    "peak_measured": int,
    "measured": str,
}


def step_memory(
    functions: Sequence[FunctionInfo],
    graph: Graph,
    names: Sequence[str],
    parameters: Sequence[int],
    itemsize: int,
    training: bool,
    solver_state: int,
    measured: str = "",
) -> StepMemory:
    """A section's ``memory``: what stays for the whole step, and the activations estimated along it.

    ``functions`` run in forward order and are named by ``names``; ``parameters`` are the ids of
    those of the step (their gradients count when ``training``). The batch size is read off the
    first input the functions are fed.
    """
    known = frozenset(parameters)
    est = estimate(functions, graph, names, known, itemsize, training)
    params = [graph.variables[p] for p in parameters]
    weights = sum(nbytes(p) for p in params)
    gradients = sum(nbytes(p) for p in params if p.need_grad) if training else 0
    inputs = [
        graph.variables[v]
        for f in functions
        for v, parent in zip(f.inputs, f.parents or [None] * len(f.inputs))
        if parent is None and v not in known and graph.variables[v].shape
    ]
    return StepMemory(
        weights,
        gradients,
        solver_state,
        activations_at_peak=est.peak,
        peak_estimated=est.peak + weights + gradients + solver_state,
        peak_layer=est.peak_layer,
        peak_phase=est.peak_phase,
        alive_at_peak=[list(x) for x in est.alive_at_peak],
        curve=[list(x) for x in est.curve],
        batch_size=int(inputs[0].shape[0]) if inputs else 1,
        peak_measured=None,
        measured=measured,
    )


def solver_state_bytes(solver: Any) -> int:
    """What an NNabla solver keeps per parameter (Adam: two states, Momentum: one, SGD: none), from its states."""
    total = 0
    try:
        for state in solver.get_states().values():
            for v in state.pstate.values():
                total += (math.prod(v.shape) if v.shape else 1) * ITEMSIZE.get(dtype_name(v) or "", 4)
    except Exception:
        return 0
    return total
