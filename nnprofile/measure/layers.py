"""Layers as the user knows them: a function of the executed graph, its name and identity.

A ``Layer`` wraps one NNabla function with the name the project gives it, the
class that actually ran, its shapes and what it computes. Its identity is the
function itself: forward and backward entries of one function share a
``layer_id``, even when two functions resolve to the same name.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from .. import flops as flop_counts
from ..choices import LAYER_PHASES
from ..result import Entry
from .memory import layer_memory
from .timing import Measurement


class Layer:
    """A function of the executed graph, named as the project names it."""

    def __init__(self, function, name: str, parameters=frozenset(), layer_id: Optional[int] = None):
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

    def entry(self, phase: str, m: Measurement) -> Entry:
        e = Entry(label=self.label(phase), phase=phase, samples_ns=m.samples_ns,
                  calls_per_sample=m.calls_per_sample, overhead_ns=m.overhead_ns,
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


def dtype_of(variable) -> Optional[str]:
    try:
        return np.dtype(variable.data.dtype).name
    except Exception:  # an array NNabla has not allocated yet
        return None


def layer_names(network) -> Dict[object, str]:
    """Output variable -> project layer name, to name functions seen in hooks."""
    names = {}
    for pf in network.functions.values():
        for out in pf.outputs:
            pv = network.variables.get(out)
            if pv is not None and getattr(pv, "variable_instance", None) is not None:
                # "$EC$/" marks functions NNabla made while unrolling loops.
                names[pv.variable_instance] = pf.name.replace("$EC$/", "")
    return names


def is_sink(function) -> bool:
    """NNabla adds Sink functions to join several outputs; they are not layers."""
    return function.info.type_name == "Sink"


class LayerIndex:
    """The layers of one network, keyed by function: built once from the forward order.

    Names are made unique once, over the forward order (``#2``, ``#3`` for a
    name given twice), and every later pass looks its functions up here, so a
    function's backward entry always carries its own forward's name and id.
    NNabla's Function objects compare and hash by the function they wrap.
    """

    def __init__(self, names: Dict[object, str], parameters=frozenset()):
        self.names = names
        self.parameters = parameters
        self._by_function: Dict[object, Layer] = {}
        self._used: Dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._by_function)

    def layer(self, function) -> Layer:
        """The Layer of a function, created (with a fresh id) the first time it is seen."""
        layer = self._by_function.get(function)
        if layer is None:
            name = self.names.get(function.outputs[0]) if function.outputs else None
            if name is None:
                name = function.info.type_name
            self._used[name] = self._used.get(name, 0) + 1
            if self._used[name] > 1:  # every layer keeps its own line, even if two resolve to one name
                name = "%s#%d" % (name, self._used[name])
            layer = Layer(function, name, self.parameters, layer_id=len(self._by_function))
            self._by_function[function] = layer
        return layer

    def order(self, functions) -> List[Optional[Layer]]:
        """A Layer per function of a pass, None for a Sink."""
        return [None if is_sink(f) else self.layer(f) for f in functions]


def parameters():
    import nnabla as nn
    return frozenset(nn.get_parameters(grad_only=False).values())


def pass_functions(target, forward: bool = True, loss_grad=None) -> list:
    """The functions of one pass of ``target``, in the order they run."""
    functions: list = []
    try:
        if forward:
            target.forward(clear_no_need_grad=False, function_pre_hook=functions.append)
        else:
            target.backward(grad=loss_grad, clear_buffer=False, function_pre_hook=functions.append)
    except Exception as e:  # say which function failed (running out of memory, say)
        if functions:
            e.nnprofile_function = functions[-1]  # type: ignore[attr-defined]
            e.nnprofile_phase = "forward" if forward else "backward"  # type: ignore[attr-defined]
        raise
    return functions


def only_layers(order: List[Optional[Layer]]) -> List[Layer]:
    return [layer for layer in order if layer is not None]
