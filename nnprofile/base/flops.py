"""What each layer computes: FLOPs forward and backward, from shapes alone.

A registry maps a layer type to a counting function, as fvcore does for
operators; adding a type is one entry. Conventions:

- a multiply-add is 2 FLOPs; a comparison, an addition or an activation
  (including transcendental ones such as tanh and exp) is 1 FLOP per element;
- the backward count covers only the gradients NNabla computes: the gradient
  of an input that needs no gradient (the data, a frozen weight) is not counted;
- a type without a counter is reported as unknown (None), never as zero.

Every counter takes a ``Shapes`` (input and output shapes, which inputs need a
gradient, the function's arguments) and returns ``(forward, backward)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


@dataclass
class Shapes:
    inputs: List[Tuple[int, ...]]
    outputs: List[Tuple[int, ...]]
    need_grad: List[bool] = field(default_factory=list)
    args: Dict[str, Any] = field(default_factory=dict)

    def grad(self, i: int) -> bool:
        return i < len(self.inputs) and (self.need_grad[i] if i < len(self.need_grad) else True)


def size(shape: Sequence[int]) -> int:
    return int(math.prod(shape)) if shape else 1


Counter = Callable[[Shapes], Tuple[int, int]]


def _weighted(s: Shapes, macs: int, bias_elements: int) -> Tuple[int, int]:
    """A layer with weights (input 1) and an optional bias (input 2).

    Forward: the multiply-adds plus the bias additions. Backward: the same
    multiply-adds again for the input's gradient and for the weights', each
    only when it is computed, plus the bias gradient's sum.
    """
    has_bias = len(s.inputs) > 2
    forward = 2 * macs + (bias_elements if has_bias else 0)
    backward = (2 * macs if s.grad(0) else 0) + (2 * macs if s.grad(1) else 0)
    backward += bias_elements if has_bias and s.grad(2) else 0
    return forward, backward


def _affine(s: Shapes) -> Tuple[int, int]:
    base_axis = int(s.args.get("base_axis", 1))
    batch = size(s.inputs[0][:base_axis])
    k = size(s.inputs[0][base_axis:])
    n = size(s.outputs[0][base_axis:])
    return _weighted(s, batch * k * n, batch * n)


def _convolution(s: Shapes) -> Tuple[int, int]:
    # W: (out_maps, in_maps / group, *kernel); every output element is one kernel window.
    return _weighted(s, size(s.outputs[0]) * size(s.inputs[1][1:]), size(s.outputs[0]))


def _deconvolution(s: Shapes) -> Tuple[int, int]:
    # W: (in_maps, out_maps / group, *kernel); every input element scatters one kernel window.
    return _weighted(s, size(s.inputs[0]) * size(s.inputs[1][1:]), size(s.outputs[0]))


def _batch_normalization(s: Shapes) -> Tuple[int, int]:
    n = size(s.inputs[0])
    if s.args.get("batch_stat", True):
        # mean (1), variance (2), normalise (2), scale and shift (2) per element
        return 7 * n, (9 * n if s.grad(0) else 0) + (4 * n if s.grad(1) or s.grad(2) else 0)
    return 4 * n, (2 * n if s.grad(0) else 0) + (4 * n if s.grad(1) or s.grad(2) else 0)


def _pool_window(s: Shapes) -> int:
    kernel = s.args.get("kernel") or ()
    return size(tuple(kernel)) if kernel else 1


def _max_pooling(s: Shapes) -> Tuple[int, int]:
    out = size(s.outputs[0])
    return out * _pool_window(s), (out if s.grad(0) else 0)  # the gradient goes to the max only


def _average_pooling(s: Shapes) -> Tuple[int, int]:
    out = size(s.outputs[0])
    window = _pool_window(s)
    return out * window, (out * window if s.grad(0) else 0)


def _global_average_pooling(s: Shapes) -> Tuple[int, int]:
    n = size(s.inputs[0])
    return n, (n if s.grad(0) else 0)


def _unary(forward_per_element: int = 1, backward_per_element: int = 2) -> Counter:
    def count(s: Shapes) -> Tuple[int, int]:
        n = size(s.outputs[0])
        return forward_per_element * n, (backward_per_element * n if s.grad(0) else 0)

    return count


def _binary(backward_per_grad: int) -> Counter:
    def count(s: Shapes) -> Tuple[int, int]:
        n = size(s.outputs[0])
        grads = sum(1 for i in range(len(s.inputs)) if s.grad(i))
        return n, backward_per_grad * n * grads

    return count


def _softmax(s: Shapes) -> Tuple[int, int]:
    n = size(s.outputs[0])
    return 4 * n, (3 * n if s.grad(0) else 0)  # max, exp, sum, divide; dot and scale back


def _cross_entropy(s: Shapes) -> Tuple[int, int]:
    n = size(s.outputs[0])  # one log and one product per sample
    return 2 * n, (2 * n if s.grad(0) else 0)


def _squared_error(s: Shapes) -> Tuple[int, int]:
    n = size(s.inputs[0])
    grads = sum(1 for i in range(2) if s.grad(i))
    return 2 * n, 2 * n * grads


def _zero(s: Shapes) -> Tuple[int, int]:
    return 0, 0  # moves or views data, computes nothing


REGISTRY: Dict[str, Counter] = {
    "Affine": _affine,
    "BinaryConnectAffine": _affine,
    "BinaryWeightAffine": _affine,
    "Convolution": _convolution,
    "BinaryConnectConvolution": _convolution,
    "BinaryWeightConvolution": _convolution,
    "DepthwiseConvolution": _convolution,
    "Deconvolution": _deconvolution,
    "BatchNormalization": _batch_normalization,
    "MaxPooling": _max_pooling,
    "AveragePooling": _average_pooling,
    "SumPooling": _average_pooling,
    "GlobalAveragePooling": _global_average_pooling,
    "ReLU": _unary(1, 1),
    "LeakyReLU": _unary(1, 1),
    "ReLU6": _unary(1, 1),
    "PReLU": _unary(2, 3),
    "ELU": _unary(1, 2),
    "SELU": _unary(2, 2),
    "Tanh": _unary(1, 2),
    "Sigmoid": _unary(1, 2),
    "Swish": _unary(2, 3),
    "BinarySigmoid": _unary(1, 1),
    "BinaryTanh": _unary(1, 1),
    "Abs": _unary(1, 1),
    "Exp": _unary(1, 1),
    "Log": _unary(1, 1),
    "Add2": _binary(1),
    "Sub2": _binary(1),
    "Mul2": _binary(2),
    "Div2": _binary(3),
    "Softmax": _softmax,
    "CategoricalCrossEntropy": _cross_entropy,
    "SoftmaxCrossEntropy": _cross_entropy,
    "BinaryCrossEntropy": _squared_error,
    "SigmoidCrossEntropy": _squared_error,
    "SquaredError": _squared_error,
    "AbsoluteError": _squared_error,
    "Identity": _zero,
    "Reshape": _zero,
    "Split": _zero,
    "Stack": _zero,
    "Concatenate": _zero,
    "Slice": _zero,
    "Transpose": _zero,
    "Broadcast": _zero,
    "Dropout": _unary(1, 1),
}


def count(layer_type: str, shapes: Shapes) -> Optional[Tuple[int, int]]:
    """(forward, backward) FLOPs, or None for a type with no counter, or whose shapes or arguments its counter
    cannot read (a function recorded without its inputs or outputs, an argument of an unexpected kind): unknown,
    never a guess and never a failure."""
    counter = REGISTRY.get(layer_type)
    if counter is None:
        return None
    try:
        forward, backward = counter(shapes)
        return int(forward), int(backward)
    except Exception:
        return None


def bytes_moved(shapes: Shapes, itemsize: int, phase: str) -> Tuple[int, int]:
    """(read, written) bytes of one call: every input and output touched once.

    Forward reads the inputs and writes the outputs. Backward reads the
    output gradients and the inputs' data, and writes the gradients of the
    inputs that need one.
    """
    inputs = sum(size(s) for s in shapes.inputs)
    outputs = sum(size(s) for s in shapes.outputs)
    if phase == "forward":
        return inputs * itemsize, outputs * itemsize
    grads = sum(size(s) for i, s in enumerate(shapes.inputs) if shapes.grad(i))
    return (outputs + inputs) * itemsize, grads * itemsize
