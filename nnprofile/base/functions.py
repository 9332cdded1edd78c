"""NNabla functions and variables as plain data: what a layer is made of, without NNabla.

Both pipelines describe the functions they time the same way (``Describer``): a project's
measurement its networks' functions, a program's recording the functions its passes ran. What
follows reads only these descriptions: a layer's FLOPs, bytes and memory (``nnprofile.result.layer``,
``nnprofile.base.buffers``), a program's passes and graphs (``nnprofile.assembly``), and the saved
events of a recording, which load and assemble on a machine without NNabla.

A variable's identity is NNabla's own: two Python ``Variable`` objects that share a buffer (a
variable and its ``get_unlinked_variable()``) compare equal, and are one variable here.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple


@dataclass
class VariableInfo:
    id: int
    shape: Tuple[int, ...]
    dtype: Optional[str] = None  # "float32"; None where NNabla had not allocated it
    need_grad: bool = False
    parameter: Optional[str] = None  # its full name, where it is a parameter

    def to_list(self) -> list:
        return [self.id, list(self.shape), self.dtype, self.need_grad, self.parameter]

    @classmethod
    def from_list(cls, x: list) -> "VariableInfo":
        return cls(int(x[0]), tuple(int(d) for d in x[1]), x[2], bool(x[3]), x[4])


@dataclass
class FunctionInfo:
    id: int
    type: str  # "Convolution"
    impl_class: str  # the class that ran: "ConvolutionCudaCudnn" under cuDNN
    args: Dict[str, Any]
    inputs: List[int]  # variable ids
    outputs: List[int]
    # Per input: the function that computes it in this function's graph (None: a leaf, or a variable
    # unlinked from the function that computed it; -1: a function not described, outside what ran).
    parents: List[Optional[int]] = field(default_factory=list)
    in_place: List[bool] = field(default_factory=list)  # per output: it shares an input's buffer
    # What the backward reads: (input i whose gradient is computed, "in" or "out", index j of the data read).
    grad_reads: List[Tuple[int, str, int]] = field(default_factory=list)
    created: Optional[str] = None  # where the program made it ("train.py:42"), where known

    @functools.cached_property
    def signature(self) -> str:
        """Its type and arguments (``Graph.signature`` adds the shapes of what it reads); made once (a function's
        arguments do not change once it is made, and the assembly asks for it once a call)."""
        return "%s%s" % (self.type, json.dumps(self.args, sort_keys=True, default=str))

    def to_list(self) -> list:
        return [
            self.id,
            self.type,
            self.impl_class,
            self.args,
            self.inputs,
            self.outputs,
            self.parents,
            [int(b) for b in self.in_place],
            [list(r) for r in self.grad_reads],
            self.created,
        ]

    @classmethod
    def from_list(cls, x: list) -> "FunctionInfo":
        return cls(
            int(x[0]),
            x[1],
            x[2],
            dict(x[3]),
            list(x[4]),
            list(x[5]),
            list(x[6]),
            [bool(b) for b in x[7]],
            [(int(a), str(b), int(c)) for a, b, c in x[8]],
            x[9],
        )


class Graph:
    """Functions and the variables they read and write, by id (a recording's, or one network's)."""

    def __init__(self, functions: Iterable[FunctionInfo] = (), variables: Iterable[VariableInfo] = ()):
        self.functions: Dict[int, FunctionInfo] = {f.id: f for f in functions}
        self.variables: Dict[int, VariableInfo] = {v.id: v for v in variables}
        self._signatures: Dict[int, str] = {}  # function id -> its signature, made once

    def inputs(self, f: FunctionInfo) -> List[VariableInfo]:
        return [self.variables[v] for v in f.inputs]

    def outputs(self, f: FunctionInfo) -> List[VariableInfo]:
        return [self.variables[v] for v in f.outputs]

    def parameters(self) -> Dict[int, str]:
        return {v.id: v.parameter for v in self.variables.values() if v.parameter}

    def signature(self, f: FunctionInfo) -> str:
        """A function's type, arguments and input shapes: calls of one signature cost the same to run and
        to hook (a recording of an earlier nnprofile holds the hooks' cost measured per signature on replicas)."""
        known = self._signatures.get(f.id)
        if known is None:
            shapes = ",".join("x".join(str(d) for d in self.variables[v].shape) for v in f.inputs)
            known = self._signatures[f.id] = "%s(%s)" % (f.signature, shapes)
        return known


def dtype_name(variable: Any) -> Optional[str]:
    """The dtype of a variable's data; None where NNabla has not allocated it yet."""
    import numpy as np

    try:
        return np.dtype(variable.data.dtype).name
    except Exception:
        return None


def _plain(value: Any) -> Any:
    """An argument as JSON holds it (tuples as lists, numpy scalars as numbers)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    try:
        return value.item()  # numpy scalars
    except Exception:
        return str(value)


class Describer:
    """Gives NNabla's functions and variables their descriptions, each once, with stable ids.

    ``parameter_names``: parameter variable -> full name, as the program named them while it ran.
    Which data a backward reads depends on a function's type and arguments only: it is asked of
    NNabla once per signature.
    """

    def __init__(self, parameter_names: Optional[Dict[Any, str]] = None, created: Optional[Dict[Any, str]] = None):
        self.parameter_names = parameter_names or {}
        self.created = created or {}
        self.variables: Dict[Any, VariableInfo] = {}
        self.functions: Dict[Any, FunctionInfo] = {}
        self._graph = Graph()  # the same descriptions by id, kept as they come (a layer reads it as it is made)
        self._grad_reads: Dict[Tuple[str, str, int, int], List[Tuple[int, str, int]]] = {}

    def variable(self, v: Any) -> VariableInfo:
        info = self.variables.get(v)
        if info is None:
            info = self.variables[v] = VariableInfo(
                len(self.variables),
                tuple(int(d) for d in v.shape),
                dtype_name(v),
                bool(v.need_grad),
                self.parameter_names.get(v),
            )
            self._graph.variables[info.id] = info
        elif info.dtype is None:
            info.dtype = dtype_name(v)
        return info

    def function(self, f: Any) -> FunctionInfo:
        info = self.functions.get(f)
        if info is not None:
            return info
        inputs, outputs = list(f.inputs), list(f.outputs)
        ins = [self.variable(v) for v in inputs]
        outs = [self.variable(v) for v in outputs]
        args = _plain(dict(f.info.args or {}))
        parents: List[Optional[int]] = []
        for v in inputs:
            parent = v.parent
            known = self.functions.get(parent) if parent is not None else None
            parents.append(None if parent is None else known.id if known is not None else -1)
        in_place = []
        for i in range(len(outputs)):
            try:
                in_place.append(f.inplace_data(i) != 0)
            except Exception:
                in_place.append(False)
        type_name, impl = f.info.type_name, str(f.name)
        if impl == "Callback":  # a custom PythonFunction: its own class names it, and is what ran
            impl = type_name
        info = FunctionInfo(
            len(self.functions),
            type_name,
            impl,
            args,
            [v.id for v in ins],
            [v.id for v in outs],
            parents,
            in_place,
            self._reads(f, args, len(inputs), len(outputs)),
            self.created.get(f),
        )
        self.functions[f] = info
        self._graph.functions[info.id] = info
        return info

    def _reads(self, f: Any, args: Dict[str, Any], n_in: int, n_out: int) -> List[Tuple[int, str, int]]:
        key = (f.info.type_name, repr(sorted(args.items())), n_in, n_out)  # (args as _plain made them: exact)
        known = self._grad_reads.get(key)
        if known is None:
            known = []
            for i in range(n_in):
                for what, depends, n in (
                    ("in", f.grad_depends_input_data, n_in),
                    ("out", f.grad_depends_output_data, n_out),
                ):
                    for j in range(n):
                        try:
                            if depends(i, j):
                                known.append((i, what, j))
                        except Exception:  # not said: kept (an estimate errs on the safe side)
                            known.append((i, what, j))
            self._grad_reads[key] = known
        return known

    def add(self, key: Any, info: Any) -> None:
        """A description made elsewhere (a function run on NdArrays: no NNabla function object to describe)."""
        if isinstance(info, FunctionInfo):
            self.functions[key] = info
            self._graph.functions[info.id] = info
        else:
            self.variables[key] = info
            self._graph.variables[info.id] = info

    def graph(self) -> Graph:
        """Every function and variable described so far, by id (kept up to date: not a copy)."""
        return self._graph
