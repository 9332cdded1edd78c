"""FLOP formulas against hand-computed values, one per supported layer type."""

import pytest

from nnprofile.base import flops
from nnprofile.base.flops import Shapes, bytes_moved, count


def test_affine():
    # x (64, 30, 5, 5) flattened to 750, W (750, 150): 64*750*150 = 7,200,000 multiply-adds.
    s = Shapes([(64, 30, 5, 5), (750, 150), (150,)], [(64, 150)], [True, True, True], {"base_axis": 1})
    assert count("Affine", s) == (2 * 7_200_000 + 64 * 150, 2 * 7_200_000 * 2 + 64 * 150)
    first_layer = Shapes(s.inputs, s.outputs, [False, True, True], s.args)
    assert count("Affine", first_layer) == (14_409_600, 14_400_000 + 9_600)


def test_affine_without_bias_and_base_axis_2():
    s = Shapes([(4, 3, 10), (10, 7)], [(4, 3, 7)], [True, True], {"base_axis": 2})
    assert count("Affine", s) == (2 * 12 * 10 * 7, 4 * 12 * 10 * 7)


def test_convolution():
    # out (64, 16, 24, 24) = 589,824 elements, each a 1x5x5 window: 14,745,600 multiply-adds.
    s = Shapes([(64, 1, 28, 28), (16, 1, 5, 5), (16,)], [(64, 16, 24, 24)], [False, True, True], {})
    assert count("Convolution", s) == (29_491_200 + 589_824, 29_491_200 + 589_824)


def test_grouped_convolution_counts_one_group_per_output():
    # group 4: W (8, 2, 3, 3); out (1, 8, 8, 8) = 512 elements x 18.
    s = Shapes([(1, 8, 10, 10), (8, 2, 3, 3)], [(1, 8, 8, 8)], [True, True], {"group": 4})
    assert count("Convolution", s) == (2 * 512 * 18, 4 * 512 * 18)


def test_deconvolution():
    # x (2, 4, 5, 5) = 200 elements, each scattering a 3x2x2 window.
    s = Shapes([(2, 4, 5, 5), (4, 3, 2, 2)], [(2, 3, 10, 10)], [True, True], {"stride": [2, 2]})
    assert count("Deconvolution", s) == (2 * 200 * 12, 4 * 200 * 12)


def test_batch_normalization():
    s = Shapes(
        [(8, 4, 2, 2)] + [(1, 4, 1, 1)] * 4, [(8, 4, 2, 2)], [True, True, True, False, False], {"batch_stat": True}
    )
    assert count("BatchNormalization", s) == (7 * 128, 9 * 128 + 4 * 128)
    inference = Shapes(s.inputs, s.outputs, [False] * 5, {"batch_stat": False})
    assert count("BatchNormalization", inference) == (4 * 128, 0)


def test_pooling():
    s = Shapes([(64, 16, 24, 24)], [(64, 16, 12, 12)], [True], {"kernel": [2, 2]})
    assert count("MaxPooling", s) == (147_456 * 4, 147_456)
    assert count("AveragePooling", s) == (147_456 * 4, 147_456 * 4)
    assert count("SumPooling", s) == (147_456 * 4, 147_456 * 4)
    g = Shapes([(2, 3, 4, 4)], [(2, 3, 1, 1)], [True], {})
    assert count("GlobalAveragePooling", g) == (96, 96)


@pytest.mark.parametrize(
    "layer_type, per_element",
    [
        ("ReLU", (1, 1)),
        ("Tanh", (1, 2)),
        ("Sigmoid", (1, 2)),
        ("ELU", (1, 2)),
        ("Swish", (2, 3)),
    ],
)
def test_elementwise_unary(layer_type, per_element):
    s = Shapes([(10, 20)], [(10, 20)], [True], {})
    assert count(layer_type, s) == (200 * per_element[0], 200 * per_element[1])
    assert count(layer_type, Shapes(s.inputs, s.outputs, [False], {})) == (200 * per_element[0], 0)


def test_elementwise_binary():
    s = Shapes([(10, 20), (10, 20)], [(10, 20)], [True, False], {})
    assert count("Add2", s) == (200, 200)
    assert count("Mul2", s) == (200, 400)
    assert count("Mul2", Shapes(s.inputs, s.outputs, [True, True], {})) == (200, 800)


def test_softmax_and_losses():
    assert count("Softmax", Shapes([(64, 10)], [(64, 10)], [True], {"axis": 1})) == (2560, 1920)
    ce = Shapes([(64, 10), (64, 1)], [(64, 1)], [True, False], {"axis": 1})
    assert count("CategoricalCrossEntropy", ce) == (128, 128)
    se = Shapes([(8, 3), (8, 3)], [(8, 3)], [True, False], {})
    assert count("SquaredError", se) == (48, 48)


def test_unknown_type_is_none_not_zero():
    assert count("MyOwnLayer", Shapes([(1,)], [(1,)], [True], {})) is None
    assert count("Reshape", Shapes([(2, 3)], [(6,)], [True], {})) == (0, 0)  # known: computes nothing


def test_registry_adding_a_type_is_one_entry(monkeypatch):
    monkeypatch.setitem(flops.REGISTRY, "MyOwnLayer", lambda s: (42, 84))
    assert count("MyOwnLayer", Shapes([(1,)], [(1,)], [True], {})) == (42, 84)


def test_bytes_moved():
    s = Shapes([(64, 750), (750, 150), (150,)], [(64, 150)], [False, True, True], {})
    inputs, outputs = 64 * 750 + 750 * 150 + 150, 64 * 150
    assert bytes_moved(s, 4, "forward") == (4 * inputs, 4 * outputs)
    # backward reads output gradients and input data, writes the gradients of W and b only
    assert bytes_moved(s, 4, "backward") == (4 * (outputs + inputs), 4 * (750 * 150 + 150))
    assert bytes_moved(s, 2, "forward") == (2 * inputs, 2 * outputs)


def test_lenet_layers_get_their_counts_from_nnabla(tmp_path):
    """The shapes and arguments reach the counters from real NNabla functions."""
    from conftest import LENET
    from nnprofile.measure.naming import LayerIndex, layer_names, only_layers, parameters, pass_functions
    from nnprofile.project import load_project

    project = load_project([LENET])
    o = project.optimizers["Optimizer"]
    index = LayerIndex(layer_names(o.network), parameters())
    layers = {l.name: l for l in only_layers(index.order(pass_functions(o.target)))}
    conv = layers["Convolution"]
    assert conv.flops == (29_491_200 + 589_824, 29_491_200 + 589_824)
    assert conv.params == 16 * 25 + 16
    assert layers["MaxPooling"].flops == (147_456 * 4, 147_456)
    assert layers["Affine"].flops == (14_409_600, 28_809_600)  # its input needs a gradient
    assert layers["ReLU"].params == 0


# Every registered type with a hand-computed (forward, backward) on a small case:
# x (2, 3) -> y (2, 3) for element-wise types (6 elements, gradient needed).
UNARY_6 = Shapes([(2, 3)], [(2, 3)], [True], {})
BINARY_6 = Shapes([(2, 3), (2, 3)], [(2, 3)], [True, True], {})
HAND = {
    "Affine": (Shapes([(2, 3), (3, 4), (4,)], [(2, 4)], [True, True, True], {}), (2 * 24 + 8, 4 * 24 + 8)),
    "BinaryConnectAffine": (Shapes([(2, 3), (3, 4)], [(2, 4)], [False, True], {}), (48, 48)),
    "BinaryWeightAffine": (Shapes([(2, 3), (3, 4)], [(2, 4)], [False, True], {}), (48, 48)),
    "Convolution": (Shapes([(1, 2, 4, 4), (3, 2, 3, 3)], [(1, 3, 2, 2)], [True, True], {}), (2 * 216, 4 * 216)),
    "BinaryConnectConvolution": (Shapes([(1, 2, 4, 4), (3, 2, 3, 3)], [(1, 3, 2, 2)], [False, True], {}), (432, 432)),
    "BinaryWeightConvolution": (Shapes([(1, 2, 4, 4), (3, 2, 3, 3)], [(1, 3, 2, 2)], [False, True], {}), (432, 432)),
    "DepthwiseConvolution": (Shapes([(1, 2, 4, 4), (2, 1, 3, 3)], [(1, 2, 2, 2)], [True, True], {}), (144, 288)),
    "Deconvolution": (Shapes([(1, 2, 2, 2), (2, 3, 2, 2)], [(1, 3, 4, 4)], [True, False], {}), (2 * 96, 2 * 96)),
    "BatchNormalization": (
        Shapes([(2, 3)] + [(1, 3)] * 4, [(2, 3)], [True, True, True, False, False], {"batch_stat": True}),
        (42, 54 + 24),
    ),
    "MaxPooling": (Shapes([(1, 1, 4, 4)], [(1, 1, 2, 2)], [True], {"kernel": [2, 2]}), (16, 4)),
    "AveragePooling": (Shapes([(1, 1, 4, 4)], [(1, 1, 2, 2)], [True], {"kernel": [2, 2]}), (16, 16)),
    "SumPooling": (Shapes([(1, 1, 4, 4)], [(1, 1, 2, 2)], [True], {"kernel": [2, 2]}), (16, 16)),
    "GlobalAveragePooling": (Shapes([(1, 2, 3, 3)], [(1, 2, 1, 1)], [True], {}), (18, 18)),
    "ReLU": (UNARY_6, (6, 6)),
    "LeakyReLU": (UNARY_6, (6, 6)),
    "ReLU6": (UNARY_6, (6, 6)),
    "PReLU": (UNARY_6, (12, 18)),
    "ELU": (UNARY_6, (6, 12)),
    "SELU": (UNARY_6, (12, 12)),
    "Tanh": (UNARY_6, (6, 12)),
    "Sigmoid": (UNARY_6, (6, 12)),
    "Swish": (UNARY_6, (12, 18)),
    "BinarySigmoid": (UNARY_6, (6, 6)),
    "BinaryTanh": (UNARY_6, (6, 6)),
    "Abs": (UNARY_6, (6, 6)),
    "Exp": (UNARY_6, (6, 6)),
    "Log": (UNARY_6, (6, 6)),
    "Dropout": (UNARY_6, (6, 6)),
    "Add2": (BINARY_6, (6, 12)),
    "Sub2": (BINARY_6, (6, 12)),
    "Mul2": (BINARY_6, (6, 24)),
    "Div2": (BINARY_6, (6, 36)),
    "Softmax": (UNARY_6, (24, 18)),
    "CategoricalCrossEntropy": (Shapes([(2, 3), (2, 1)], [(2, 1)], [True, False], {}), (4, 4)),
    "SoftmaxCrossEntropy": (Shapes([(2, 3), (2, 1)], [(2, 1)], [True, False], {}), (4, 4)),
    "BinaryCrossEntropy": (Shapes([(2, 3), (2, 3)], [(2, 3)], [True, False], {}), (12, 12)),
    "SigmoidCrossEntropy": (Shapes([(2, 3), (2, 3)], [(2, 3)], [True, False], {}), (12, 12)),
    "SquaredError": (Shapes([(2, 3), (2, 3)], [(2, 3)], [True, True], {}), (12, 24)),
    "AbsoluteError": (Shapes([(2, 3), (2, 3)], [(2, 3)], [True, False], {}), (12, 12)),
    "Identity": (UNARY_6, (0, 0)),
    "Reshape": (UNARY_6, (0, 0)),
    "Split": (UNARY_6, (0, 0)),
    "Stack": (UNARY_6, (0, 0)),
    "Concatenate": (BINARY_6, (0, 0)),
    "Slice": (UNARY_6, (0, 0)),
    "Transpose": (UNARY_6, (0, 0)),
    "Broadcast": (UNARY_6, (0, 0)),
}


@pytest.mark.parametrize("layer_type", sorted(HAND))
def test_every_registered_type_against_a_hand_count(layer_type):
    shapes, expected = HAND[layer_type]
    assert count(layer_type, shapes) == expected


def test_no_registered_type_lacks_a_hand_count():
    assert sorted(flops.REGISTRY) == sorted(HAND)
