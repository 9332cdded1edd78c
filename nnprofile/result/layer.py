"""A layer as the user knows it: one function of the executed graph, with its name and identity,
the class that ran, its shapes and what it computes, and the entries it gives.

A ``Layer`` wraps one NNabla function with the name the project (or the program) gives it. Its
identity is the function itself: forward and backward entries of one function share a
``layer_id``, even when two functions resolve to the same name. Both pipelines (a project's
measurement, a program's recording) make their layer entries here.
"""
from __future__ import annotations

from typing import Any, FrozenSet, List, Optional

import numpy as np

from ..base import flops as flop_counts
from ..base.buffers import layer_memory
from ..base.choices import LAYER_PHASES
from .model import Entry


class Layer:
    """A function of the executed graph, named as the project names it."""

    def __init__(self, function: Any, name: str, parameters: FrozenSet[Any] = frozenset(),
                 layer_id: Optional[int] = None) -> None:
        self.function = function
        self.name = name
        self.id = layer_id
        self.type = function.info.type_name
        self.impl_class = function.name  # the class that ran: ConvolutionCudaCudnn under cuDNN
        self.in_place = any(function.inplace_data(i) != 0 for i in range(len(function.outputs)))
        inputs, outputs = function.inputs, function.outputs
        self.shapes = flop_counts.Shapes(
            inputs=[tuple(v.shape) for v in inputs], outputs=[tuple(v.shape) for v in outputs],
            need_grad=[bool(v.need_grad) for v in inputs], args=dict(function.info.args or {}))
        self.params = sum(v.size for v in inputs if v in parameters)
        self.flops = flop_counts.count(self.type, self.shapes)
        self.dtype = dtype_of(outputs[0]) if outputs else None
        self.itemsize = int(np.dtype(self.dtype).itemsize) if self.dtype else 4
        self.memory = layer_memory(function, parameters, self.itemsize)

    def label(self, phase: str) -> str:
        return "%s (%s : %s%s)" % (phase, self.name, self.impl_class,
                                   " : in_place" if self.in_place else "")

    def trace_args(self, phase: str) -> dict:
        """What a trace shows of the layer in a phase ("forward" or "backward"): class, shapes, FLOPs."""
        flops = self.flops[0 if phase == "forward" else 1] if self.flops else None
        return {"class": self.impl_class, "type": self.type, "phase": phase,
                "inputs": [list(s) for s in self.shapes.inputs],
                "outputs": [list(s) for s in self.shapes.outputs], "flops": flops}

    def entry(self, phase: str, samples_ns: List[float], calls_per_sample: int = 1, overhead_ns: float = 0.0) -> Entry:
        e = Entry(label=self.label(phase), phase=phase, samples_ns=samples_ns,
                  calls_per_sample=calls_per_sample, overhead_ns=overhead_ns,
                  layer=self.name, layer_id=self.id, layer_type=self.type, impl_class=self.impl_class,
                  in_place=self.in_place, params=self.params, dtype=self.dtype,
                  output_shape="x".join(str(d) for d in self.shapes.outputs[0]) if self.shapes.outputs else "")
        if phase in LAYER_PHASES:
            forward = phase == "forward_function"
            if self.flops is not None:
                e.flops = self.flops[0 if forward else 1]
            e.bytes_read, e.bytes_written = flop_counts.bytes_moved(
                self.shapes, self.itemsize, "forward" if forward else "backward")
            held = self.memory
            e.output_bytes, e.parameter_bytes = held.output_bytes, held.parameter_bytes
            e.gradient_bytes, e.input_gradient_bytes = held.gradient_bytes, held.input_gradient_bytes
        return e


def dtype_of(variable: Any) -> Optional[str]:
    try:
        return np.dtype(variable.data.dtype).name
    except Exception:  # an array NNabla has not allocated yet
        return None
