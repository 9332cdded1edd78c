"""A project's layers named as NNC names them, and the functions of a pass in the order they run.

``LayerIndex`` gives each function of a network its ``Layer`` (``nnprofile.result.layer``)
once, named from the project's layer names, so that a function's backward entry always
carries its own forward's name and id.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..base.functions import Describer
from ..result.layer import Layer


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

    def __init__(self, names: Dict[object, str], parameters: Optional[Dict[object, str]] = None):
        self.names = names
        self.describer = Describer(parameter_names=parameters or {})
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
            info = self.describer.function(function)
            layer = Layer(info, self.describer.graph(), name, layer_id=len(self._by_function), function=function)
            self._by_function[function] = layer
        return layer

    def order(self, functions) -> List[Optional[Layer]]:
        """A Layer per function of a pass, None for a Sink."""
        return [None if is_sink(f) else self.layer(f) for f in functions]


def parameters() -> Dict[object, str]:
    """Every parameter of NNabla's global scope, variable -> its full name."""
    import nnabla as nn

    return {v: name for name, v in nn.get_parameters(grad_only=False).items()}


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
