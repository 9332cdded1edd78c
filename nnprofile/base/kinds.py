"""What a layer does, from its function type: the kind its advice is written for.

NNabla's function types (``Convolution``, ``Mul2``, ``LSTM``) name what a layer computes; the advice
about a layer (``nnprofile.analysis.advice``) fits its kind: maps, kernels, strides and pooling are
for convolutions only. A type is known by name or by the family its name says (``...Convolution``,
``...Affine``, ``...Normalization``, ``...Pooling``); one no rule knows is ``other``.
"""

from __future__ import annotations

import re

CONVOLUTION, AFFINE, RECURRENT, NORMALIZATION, POOLING, EMBEDDING = (
    "convolution",
    "affine",
    "recurrent",
    "normalization",
    "pooling",
    "embedding",
)
ELEMENTWISE, REDUCTION, LOSS, DATA, OTHER = "element-wise", "reduction", "loss", "data movement", "other"

_BY_NAME = {
    "BatchMatmul": AFFINE,
    "LSTM": RECURRENT,
    "GRU": RECURRENT,
    "RNN": RECURRENT,
    "Embed": EMBEDDING,
    "Sum": REDUCTION,
    "Mean": REDUCTION,
    "Max": REDUCTION,
    "Min": REDUCTION,
    "Prod": REDUCTION,
    "Norm": REDUCTION,
    "ReduceSum": REDUCTION,
    "ReduceMean": REDUCTION,
    "CumSum": REDUCTION,
    "CumProd": REDUCTION,
    "Softmax": ELEMENTWISE,
    "LogSoftmax": ELEMENTWISE,
    "SquaredError": LOSS,
    "AbsoluteError": LOSS,
    "HuberLoss": LOSS,
    "EpsilonInsensitiveLoss": LOSS,
    "KLMultinomial": LOSS,
    "Identity": DATA,
    "Reshape": DATA,
    "Transpose": DATA,
    "Concatenate": DATA,
    "Split": DATA,
    "Stack": DATA,
    "Slice": DATA,
    "Pad": DATA,
    "Broadcast": DATA,
    "BroadcastTo": DATA,
    "Tile": DATA,
    "Flip": DATA,
    "Shift": DATA,
    "Sort": DATA,
    "MatrixDiag": DATA,
    "MatrixDiagPart": DATA,
    "OneHot": DATA,
    "Gather": DATA,
    "GatherNd": DATA,
    "ScatterNd": DATA,
    "ScatterAdd": DATA,
    "Unpooling": DATA,
    "Interpolate": DATA,
    "Dropout": ELEMENTWISE,
}

# Families by name, in order: the first that matches.
_FAMILIES = [
    (re.compile(r"(Convolution|Deconvolution)$"), CONVOLUTION),
    (re.compile(r"Affine$"), AFFINE),
    (re.compile(r"Normalization$|^MeanSubtraction$|^Norm(alize)?$"), NORMALIZATION),
    (re.compile(r"Pooling$"), POOLING),
    (re.compile(r"CrossEntropy$|Loss$"), LOSS),
    (re.compile(r"^(Add|Sub|Mul|Div|Pow|RSub|RDiv|RPow|Maximum|Minimum)(2|N|Scalar)$|Scalar$"), ELEMENTWISE),
    (re.compile(r"^(Logical|Greater|Less|Equal|NotEqual|Isnan|Isinf|ResetNan|ResetInf|Where|Sign)"), ELEMENTWISE),
    (
        re.compile(
            r"ReLU|ELU$|^Tanh$|^Sigmoid$|^Swish$|^Mish$|^GELU$|^Softplus$|^Softsign$|^TanhShrink$|^Sinc$"
            r"|^Binary(Tanh|Sigmoid)$|^HardTanh$|^HardSigmoid$|^LogSigmoid$"
        ),
        ELEMENTWISE,
    ),
    (
        re.compile(
            r"^(Abs|Exp|Log|Sqrt|Square|Sin|Cos|Tan|Sinh|Cosh|ASin|ACos|ATan|ATan2|ASinh|ACosh|ATanh|Ceil"
            r"|Floor|Round|Clip\w*|Erf|Identity)$"
        ),
        ELEMENTWISE,
    ),
]


def layer_kind(layer_type: str) -> str:
    """The kind of a layer of this function type (``other`` where no rule knows it)."""
    kind = _BY_NAME.get(layer_type)
    if kind is not None:
        return kind
    for pattern, family in _FAMILIES:
        if pattern.search(layer_type):
            return family
    return OTHER
