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

What is measured (the process's or the device's memory over a step) is in
``nnprofile.measure.peak``; how the outputs say it, in ``nnprofile.analysis.memory``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np


def nbytes(variable: Any, itemsize: Optional[int] = None) -> int:
    size = math.prod(variable.shape) if variable.shape else 1  # math.prod: np.prod costs microseconds a call
    if itemsize is None:
        try:
            itemsize = int(np.dtype(variable.data.dtype).itemsize)
        except Exception:  # not allocated yet: NNabla's default float
            itemsize = 4
    return size * itemsize


@dataclass(frozen=True)
class LayerMemory:
    output_bytes: int
    parameter_bytes: int
    gradient_bytes: int        # of its parameters
    input_gradient_bytes: int  # the gradients it writes for its other inputs


def layer_memory(function: Any, parameters: frozenset, itemsize: int) -> LayerMemory:
    inputs, outputs = list(function.inputs), list(function.outputs)
    params = [v for v in inputs if v in parameters]
    return LayerMemory(
        output_bytes=sum(nbytes(v, itemsize) for v in outputs),
        parameter_bytes=sum(nbytes(v) for v in params),
        gradient_bytes=sum(nbytes(v) for v in params if v.need_grad),
        input_gradient_bytes=sum(nbytes(v, itemsize) for v in inputs if v not in parameters and v.need_grad))


@dataclass
class Estimate:
    """The live activation bytes along a step, from the buffers' lifetimes."""

    curve: List[Tuple[str, str, int]] = field(default_factory=list)  # (layer, phase, live bytes after it)
    peak: int = 0
    peak_layer: str = ""
    peak_phase: str = ""
    alive_at_peak: List[Tuple[str, int]] = field(default_factory=list)


def _needs_grad(function: Any) -> bool:
    return any(v.need_grad for v in function.inputs)


def _data_needed_in_backward(functions: Sequence[Any]) -> set:
    """Variables whose data some function's backward reads."""
    needed = set()
    for f in functions:
        if not _needs_grad(f):
            continue
        inputs, outputs = list(f.inputs), list(f.outputs)
        for i, v in enumerate(inputs):
            if not v.need_grad:
                continue
            for depends, variables in ((f.grad_depends_input_data, inputs), (f.grad_depends_output_data, outputs)):
                for j, w in enumerate(variables):
                    try:
                        if depends(i, j):
                            needed.add(w)
                    except Exception:  # not said: keep it (the estimate errs on the safe side)
                        needed.add(w)
    return needed


def estimate(functions: Sequence[Any], names: Sequence[str], parameters: frozenset, itemsize: int,
             training: bool) -> Estimate:
    """Simulate one forward (and, training, one backward) pass; ``functions`` in forward order."""
    est = Estimate()
    live: Dict[Any, Tuple[str, int]] = {}
    consumers: Dict[Any, int] = {}
    for i, f in enumerate(functions):
        for v in f.inputs:
            consumers[v] = i
    produced = {v for f in functions for v in f.outputs}
    needed = _data_needed_in_backward(functions) if training else set()
    finals = {v for v in produced if v not in consumers}

    def record(layer: str, phase: str, buffers: Dict[Any, Tuple[str, int]]) -> None:
        total = sum(b for _, b in buffers.values())
        est.curve.append((layer, phase, total))
        if total > est.peak:
            est.peak, est.peak_layer, est.peak_phase = total, layer, phase
            est.alive_at_peak = sorted(buffers.values(), key=lambda x: -x[1])[:10]

    for v in consumers:  # the data fed in: the input batch
        if v not in produced and v not in parameters:
            live[v] = ("input %s" % "x".join(str(d) for d in v.shape), nbytes(v, itemsize))
    for i, (f, name) in enumerate(zip(functions, names)):
        outputs = list(f.outputs)
        for o, v in enumerate(outputs):
            shared = False
            try:
                shared = f.inplace_data(o) != 0
            except Exception:
                pass
            live[v] = ("%s output" % name, 0 if shared else nbytes(v, itemsize))
        record(name, "forward", live)
        for v in list(f.inputs):
            if consumers.get(v) == i and v in produced and v not in needed and v not in finals:
                live.pop(v, None)
    if not training:
        return est
    grads: Dict[Any, Tuple[str, int]] = {}
    remaining_need: Dict[Any, int] = {}
    backward = [(f, n) for f, n in zip(functions, names) if _needs_grad(f)][::-1]
    for k, (f, _) in enumerate(backward):
        for v in list(f.inputs) + list(f.outputs):
            if v in needed:
                remaining_need[v] = k
    for v in finals:
        grads[v] = ("gradient of the loss", nbytes(v, itemsize))
    for k, (f, name) in enumerate(backward):
        for v in f.inputs:
            if v.need_grad and v not in parameters and v not in grads:
                grads[v] = ("%s input gradient" % name, nbytes(v, itemsize))
        both = dict(live)
        both.update({("grad", key): value for key, value in grads.items()})
        record(name, "backward", both)
        for v in f.outputs:  # consumed
            grads.pop(v, None)
        for v in list(live):
            if remaining_need.get(v, -1) <= k and v in produced and v not in finals:
                live.pop(v, None)
    return est


def step_memory(functions: Sequence[Any], names: Sequence[str], parameters: Sequence[Any], itemsize: int,
                training: bool, solver_state: int, measured: str = "") -> Dict[str, Any]:
    """A section's ``memory``: what stays for the whole step, and the activations estimated along it.

    ``functions`` run in forward order and are named by ``names``; ``parameters`` are those
    of the step (their gradients count when ``training``). The batch size is read off the
    first input the functions are fed.
    """
    known = frozenset(parameters)
    est = estimate(functions, names, known, itemsize, training)
    fixed = {"parameters": sum(nbytes(p) for p in parameters),
             "gradients": sum(nbytes(p) for p in parameters if p.need_grad) if training else 0,
             "solver_state": solver_state}
    inputs = [v for f in functions for v in f.inputs if v.parent is None and v not in known and v.shape]
    return dict(fixed, activations_at_peak=est.peak, peak_estimated=est.peak + sum(fixed.values()),
                peak_layer=est.peak_layer, peak_phase=est.peak_phase,
                alive_at_peak=[list(x) for x in est.alive_at_peak], curve=[list(x) for x in est.curve],
                batch_size=int(inputs[0].shape[0]) if inputs else 1, peak_measured=None, measured=measured)


def solver_state_bytes(solver: Any) -> int:
    """What the solver keeps per parameter (Adam: two states, Momentum: one, SGD: none), from its states."""
    total = 0
    try:
        for state in solver.get_states().values():
            total += sum(nbytes(v) for v in state.pstate.values())
    except Exception:
        return 0
    return total
