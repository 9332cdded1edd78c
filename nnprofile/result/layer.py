"""A layer as the user knows it: one function of the executed graph, with its name and identity,
the class that ran, its shapes and what it computes, and the entries it gives.

A ``Layer`` is made from a function's description (``nnprofile.base.functions``) and the name the
project (or the program) gives it. Its identity is the function itself: forward and backward
entries of one function share a ``layer_id``, even when two functions resolve to the same name.
Both pipelines (a project's measurement, a program's recording) make their layer entries here.
"""

from __future__ import annotations

from typing import Any, List, Optional

from ..base import flops as flop_counts
from ..base.buffers import ITEMSIZE, layer_memory
from ..base.choices import LAYER_PHASES
from ..base.functions import FunctionInfo, Graph
from .model import Entry


class Layer:
    """A function of the executed graph, named as the project (or the program) names it.

    ``function``: the NNabla function itself, where the caller runs it again (a project's isolated
    timing); a recording's layers are data only.
    """

    def __init__(
        self, info: FunctionInfo, graph: Graph, name: str, layer_id: Optional[int] = None, function: Any = None
    ) -> None:
        self.info = info
        self.function = function
        self.name = name
        self.id = layer_id
        self.type = info.type
        self.impl_class = info.impl_class
        self.in_place = any(info.in_place)
        inputs, outputs = graph.inputs(info), graph.outputs(info)
        self.shapes = flop_counts.Shapes(
            inputs=[v.shape for v in inputs],
            outputs=[v.shape for v in outputs],
            need_grad=[v.need_grad for v in inputs],
            args=dict(info.args),
        )
        self.params = sum(flop_counts.size(v.shape) for v in inputs if v.parameter)
        self.flops = flop_counts.count(self.type, self.shapes)
        self.dtype = outputs[0].dtype if outputs else None
        self.itemsize = ITEMSIZE.get(self.dtype or "", 4)
        self.memory = layer_memory(info, graph, self.itemsize)

    def label(self, phase: str) -> str:
        return "%s (%s : %s%s)" % (phase, self.name, self.impl_class, " : in_place" if self.in_place else "")

    def trace_args(self, phase: str) -> dict:
        """What a trace shows of the layer in a phase ("forward" or "backward"): class, shapes, FLOPs."""
        flops = self.flops[0 if phase == "forward" else 1] if self.flops else None
        return {
            "class": self.impl_class,
            "type": self.type,
            "phase": phase,
            "inputs": [list(s) for s in self.shapes.inputs],
            "outputs": [list(s) for s in self.shapes.outputs],
            "flops": flops,
        }

    def entry(self, phase: str, samples_ns: List[float], calls_per_sample: int = 1, overhead_ns: float = 0.0) -> Entry:
        e = Entry(
            label=self.label(phase),
            phase=phase,
            samples_ns=samples_ns,
            calls_per_sample=calls_per_sample,
            overhead_ns=overhead_ns,
            layer=self.name,
            layer_id=self.id,
            layer_type=self.type,
            impl_class=self.impl_class,
            in_place=self.in_place,
            params=self.params,
            dtype=self.dtype,
            output_shape="x".join(str(d) for d in self.shapes.outputs[0]) if self.shapes.outputs else "",
            source=self.info.created,
        )
        if phase in LAYER_PHASES:
            forward = phase == "forward_function"
            if self.flops is not None:
                e.flops = self.flops[0 if forward else 1]
            e.bytes_read, e.bytes_written = flop_counts.bytes_moved(
                self.shapes, self.itemsize, "forward" if forward else "backward"
            )
            held = self.memory
            e.output_bytes, e.parameter_bytes = held.output_bytes, held.parameter_bytes
            e.gradient_bytes, e.input_gradient_bytes = held.gradient_bytes, held.input_gradient_bytes
        return e
