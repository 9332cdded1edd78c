"""A graph's layers named, as the program names its parameters: a function's name is the common scope of its
parameters (``conv1/conv`` for ``conv1/conv/W`` and ``conv1/conv/b``), in every graph that uses those parameters; a
scope applied twice in one graph gets an index (``conv1/conv[2]``); a parameter-free function its type, numbered per
type in execution order (``ReLU``, ``ReLU_2``), as NNC names layers. A parameter used outside its layer is no copy of
that layer: the function is named by what it does and the parameter it reads (``PowScalar (gcn_layer_0/affine/W)``).
A scope's layer is the function of a parametric type that reads most of its parameters anywhere (``owners``).
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

from ..base.functions import FunctionInfo, Graph as Functions

WRITERS = ("Assign",)  # functions that write their first input: into a parameter, training's work


# The types ``nnabla.parametric_functions`` makes around parameters of their own: a scope's layer.
PARAMETRIC = frozenset(
    (
        "Affine",
        "Convolution",
        "DepthwiseConvolution",
        "Deconvolution",
        "DepthwiseDeconvolution",
        "DeformableConvolution",
        "BatchNormalization",
        "FusedBatchNormalization",
        "SyncBatchNormalization",
        "LayerNormalization",
        "InstanceNormalization",
        "GroupNormalization",
        "TensorNormalization",
        "WeightStandardization",
        "SpectralNorm",
        "WeightNormalization",
        "Embed",
        "RNN",
        "LSTM",
        "GRU",
        "PReLU",
        "MeanSubtraction",
        "BinaryConnectAffine",
        "BinaryConnectConvolution",
        "BinaryWeightAffine",
        "BinaryWeightConvolution",
        "INQAffine",
        "INQConvolution",
        "FixedPointQuantize",
        "MinMaxQuantize",
    )
)


def scope_of(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else name


def owners(functions: Functions) -> Dict[str, str]:
    """Scope -> the type of its layer: among the functions reading its parameters anywhere in the program,
    those of a parametric type first, then the type reading most of them (the first seen on a tie)."""
    votes: Dict[str, Dict[str, Tuple[int, int, int]]] = {}
    for order, f in enumerate(functions.functions.values()):
        params = {functions.variables[v].parameter for v in f.inputs if functions.variables[v].parameter}
        for scope in {scope_of(p) for p in params if p}:
            n = sum(1 for p in params if p and scope_of(p) == scope)
            known = votes.setdefault(scope, {}).get(f.type)
            votes[scope][f.type] = (
                int(f.type in PARAMETRIC),
                max(n, known[1] if known else 0),
                -(known[2] if known else -order),
            )
    out: Dict[str, str] = {}
    for scope, types in votes.items():
        layered = {t: v for t, v in types.items() if t in PARAMETRIC or not _arithmetic(t)}
        if layered:  # else only arithmetic reads the scope (a target network's soft update): no layer of its own
            out[scope] = max(layered.items(), key=lambda kv: kv[1])[0]
    return out


def _arithmetic(type_name: str) -> bool:
    """A function that computes with a parameter but is no layer of it (element-wise, a reduction, a copy, a write)."""
    from ..base import kinds

    return type_name in WRITERS or kinds.layer_kind(type_name) in (
        kinds.ELEMENTWISE,
        kinds.REDUCTION,
        kinds.DATA,
        kinds.LOSS,
    )


class Namer:
    """Names one graph's layers, in the order they are first seen, from the parameter names seen
    while the program ran (``owner``: scope -> the type of its layer, ``owners``)."""

    def __init__(self, functions: Functions, owner: Optional[Dict[str, str]] = None):
        self.functions = functions
        self.owner = owner if owner is not None else owners(functions)
        self.per_scope: Dict[str, int] = {}
        self.per_type: Dict[str, int] = {}

    def scope(self, f: FunctionInfo) -> str:
        """The common scope of a function's parameters ("" for none)."""
        params = [self.functions.variables[v].parameter for v in f.inputs]
        names = [p for p in params if p]
        if not names:
            return ""
        scopes = [p.rsplit("/", 1)[0] if "/" in p else p for p in names]
        if len(set(scopes)) == 1:
            return scopes[0]
        common = os.path.commonprefix([x.split("/") for x in scopes])
        return "/".join(common) or scopes[0]

    def name(self, f: FunctionInfo) -> str:
        scope = self.scope(f)
        if scope and self.owner.get(scope) != f.type and (scope in self.owner or _arithmetic(f.type)):
            # a parameter used outside its layer (or by arithmetic only: none is its layer)
            params = [self.functions.variables[v].parameter for v in f.inputs]
            scope = "%s (%s)" % (f.type, next(p for p in params if p))
        if scope:
            self.per_scope[scope] = self.per_scope.get(scope, 0) + 1
            n = self.per_scope[scope]
            return scope if n == 1 else "%s[%d]" % (scope, n)
        self.per_type[f.type] = self.per_type.get(f.type, 0) + 1
        n = self.per_type[f.type]
        return f.type if n == 1 else "%s_%d" % (f.type, n)
