"""Write an NNC project shaped as Neural Network Console's own "LSTM auto encoder" tutorial sample.

The sample (``tutorial/recurrent_neural_networks/LSTM_auto_encoder``) reads a 28x28 digit row by row: the
image flipped, an encoder LSTM of 256 units over its 28 rows, its last state repeated 28 times (Unpooling), a
decoder LSTM of 28 units over those, a 1x1 Convolution and a Sigmoid, and a SquaredError against the image.
Each LSTM is laid out as NNC lays out its cells: the four gates as Affine layers on the concatenation of the
row and the last output, Delay for the cell and the output, Mul2 and Add2 for the cell's update. NNabla
unrolls both loops: 34 functions a row, 960 functions in the training network. This writes that structure
(the sample's own file is not copied); the benchmarks profile it as a user would (``--synthetic``: its
datasets name files that do not exist).
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from nntxt_writer import _function, _variable

AFFINE = ["affine_param {", "  base_axis: 1", "}"]


def _looped(lines: List[str], repeat: str) -> List[str]:
    return lines[:3] + ['    repeat_id: "%s"' % repeat] + lines[3:]


ENCODER = {
    "gates": ["Affine_2", "Affine_4", "Affine_5", "Affine_6"],
    "acts": ["Tanh", "Sigmoid", "Sigmoid_2", "Sigmoid_3"],
    "cat": "Concatenate",
    "c": "Delay",
    "h": "Delay_2",
    "kept": "Mul2",
    "let": "Mul2_3",
    "out": "Mul2_2",
    "add": "Add2",
    "squash": "Tanh_2",
}
DECODER = {
    "gates": ["Affine_7", "Affine_8", "Affine_9", "Affine_10"],
    "acts": ["Tanh_3", "Sigmoid_5", "Sigmoid_6", "Sigmoid_7"],
    "cat": "Concatenate_2",
    "c": "Delay_3",
    "h": "Delay_4",
    "kept": "Mul2_4",
    "let": "Mul2_5",
    "out": "Mul2_6",
    "add": "Add2_2",
    "squash": "Tanh_4",
}


def _cell(loop: str, n: dict, units: int, x: str) -> Tuple[List[str], List[str], List[Tuple[str, int]], List[str]]:
    """One LSTM cell, NNC's way (its layers named ``n``): variables, functions, (buffer, width) inside the loop, and
    its parameters, its state's initial buffers and its output."""
    g, act, cat, c, h = n["gates"], n["acts"], n["cat"], n["c"], n["h"]
    params: List[str] = []
    variables: List[str] = []
    for name in g:
        params += ["%s/affine/W" % name, "%s/affine/b" % name]
        variables += _variable("%s/affine/W" % name, "Parameter", [284, 1, units], ("NormalAffineGlorot", 1))
        variables += _variable("%s/affine/b" % name, "Parameter", [1, units], ("Constant", 0))
    variables += _variable(c + "_Initial", "Buffer", [-1, 1, units])
    variables += _variable(h + "_Initial", "Buffer", [-1, 1, units])
    inside = [(cat, 284)] + [(v, units) for v in g + act + [c, h, n["kept"], n["let"], n["out"], n["add"], n["squash"]]]
    functions = _looped(_function(cat, "Concatenate", [h, x], cat, ["concatenate_param {", "  axis: 2", "}"]), loop)
    for gate, a in zip(g, act):
        functions += _looped(
            _function(gate, "Affine", [cat, gate + "/affine/W", gate + "/affine/b"], gate, AFFINE), loop
        )
        functions += _looped(_function(a, a.split("_")[0], [gate], a), loop)
    recurrent = ["recurrent_param {", '  repeat_id: "%s"' % loop, "}"]
    functions += _looped(_function(n["kept"], "Mul2", [c, act[2]], n["kept"]), loop)  # the cell kept
    functions += _looped(_function(n["let"], "Mul2", [act[0], act[1]], n["let"]), loop)  # the input let in
    functions += _looped(
        _function(n["add"], "Add2", [n["kept"], n["let"]], n["add"], ["add2_param {", "  inplace: True", "}"]), loop
    )
    functions += _looped(_function(n["squash"], "Tanh", [n["add"]], n["squash"]), loop)
    functions += _looped(_function(n["out"], "Mul2", [n["squash"], act[3]], n["out"]), loop)  # the output
    functions += _looped(_function(c, "Delay", [n["add"], c + "_Initial"], c, recurrent), loop)
    functions += _looped(_function(h, "Delay", [n["out"], h + "_Initial"], h, recurrent), loop)
    return variables, functions, inside, params + [c + "_Initial", h + "_Initial", n["out"]]


def _network(name: str, batch_size: int, rows: int, training: bool) -> Tuple[List[str], List[str], List[str]]:
    out = ["network {", '  name: "%s"' % name, "  batch_size: %d" % batch_size]
    for loop in ("RecurrentInput", "RecurrentInput_2"):
        out += ["  repeat_info {", '    id: "%s"' % loop, "    times: %d" % rows, "  }"]
    out += _variable("Input", "Buffer", [-1, 1, rows, 28]) + _variable("Flip", "Buffer", [-1, 1, rows, 28])
    ev, ef, ein, eextra = _cell("RecurrentInput", ENCODER, 256, "RecurrentInput")
    dv, df, din, dextra = _cell("RecurrentInput_2", DECODER, 28, "RecurrentInput_2")
    out += ev + dv
    out += _variable("Convolution/conv/W", "Parameter", [1, 1, 1, 1], ("NormalConvolutionGlorot", 1))
    out += _variable("Convolution/conv/b", "Parameter", [1], ("Constant", 0))
    for loop, inside in (
        ("RecurrentInput", [("RecurrentInput", 28)] + ein),
        ("RecurrentInput_2", [("RecurrentInput_2", 256)] + din),
    ):
        for vname, width in inside:
            out += _looped(_variable(vname, "Buffer", [-1, 1, width]), loop)
    for vname, shape in (
        ("RecurrentOutput", [-1, 1, rows, 256]),
        ("Slice", [-1, 1, 1, 256]),
        ("Unpooling", [-1, 1, rows, 256]),
        ("RecurrentOutput_2", [-1, 1, rows, 28]),
        ("Convolution", [-1, 1, rows, 28]),
        ("Sigmoid_4", [-1, 1, rows, 28]),
    ):
        out += _variable(vname, "Buffer", shape)
    if training:
        out += _variable("SquaredError_T", "Buffer", [-1, 1, rows, 28])
        out += _variable("SquaredError", "Buffer", [-1, 1, rows, 28])
    out += _function("Flip", "Flip", ["Input"], "Flip", ["flip_param {", "  axes: 2", "}"])
    out += _looped(
        _function(
            "RecurrentInput",
            "RecurrentInput",
            ["Flip"],
            "RecurrentInput",
            ["recurrent_param {", "  axis: 2", '  repeat_id: "RecurrentInput"', "}"],
        ),
        "RecurrentInput",
    )
    out += ef
    out += _function(
        "RecurrentOutput",
        "RecurrentOutput",
        [eextra[-1]],
        "RecurrentOutput",
        ["recurrent_param {", "  axis: 2", '  repeat_id: "RecurrentInput"', "  length: %d" % rows, "}"],
    )
    out += _function(
        "Slice",
        "Slice",
        ["RecurrentOutput"],
        "Slice",
        ["slice_param {"]
        + ["  start: %d" % v for v in (0, rows - 1, 0)]
        + ["  stop: %d" % v for v in (1, rows, 256)]
        + ["  step: 1"] * 3
        + ["}"],
    )
    out += _function(
        "Unpooling",
        "Unpooling",
        ["Slice"],
        "Unpooling",
        ["unpooling_param {", "  kernel: { dim: %d dim: 1 }" % rows, "}"],
    )
    out += _looped(
        _function(
            "RecurrentInput_2",
            "RecurrentInput",
            ["Unpooling"],
            "RecurrentInput_2",
            ["recurrent_param {", "  axis: 2", '  repeat_id: "RecurrentInput_2"', "}"],
        ),
        "RecurrentInput_2",
    )
    out += df
    out += _function(
        "RecurrentOutput_2",
        "RecurrentOutput",
        [dextra[-1]],
        "RecurrentOutput_2",
        ["recurrent_param {", "  axis: 2", '  repeat_id: "RecurrentInput_2"', "  length: %d" % rows, "}"],
    )
    out += _function(
        "Convolution",
        "Convolution",
        ["RecurrentOutput_2", "Convolution/conv/W", "Convolution/conv/b"],
        "Convolution",
        [
            "convolution_param {",
            "  pad: { dim: 0 dim: 0 }",
            "  stride: { dim: 1 dim: 1 }",
            "  dilation: { dim: 1 dim: 1 }",
            "  group: 1",
            "  base_axis: 1",
            "}",
        ],
    )
    out += _function("Sigmoid_4", "Sigmoid", ["Convolution"], "Sigmoid_4")
    if training:
        out += _function("SquaredError", "SquaredError", ["Sigmoid_4", "SquaredError_T"], "SquaredError")
    params = [p for p in eextra[:-3] + dextra[:-3]] + ["Convolution/conv/W", "Convolution/conv/b"]
    return out + ["}"], params, eextra[-3:-1] + dextra[-3:-1]


def _block(kind: str, name: str, network: str, dataset: str, state: Sequence[str], extra: List[str]) -> List[str]:
    out = ["%s {" % kind, '  name: "%s"' % name]
    out += ['  network_name: "%s"' % network] if kind != "executor" else []
    out += ['  dataset_name: "%s"' % dataset] if kind != "executor" else []
    out += extra
    out += ["  data_variable {", '    variable_name: "Input"', '    data_name: "x"', "  }"]
    for v in state:
        out += [
            "  generator_variable {",
            '    variable_name: "%s"' % v,
            '    type: "Constant"',
            "    multiplier: 0",
            "  }",
        ]
    return out


def nnc_lstm_autoencoder(batch_size: int = 64, rows: int = 28) -> str:
    """The project: ``Main`` (training), ``MainValidation`` (the monitors), ``MainRuntime`` (the executor)."""
    text = [
        "global_config {",
        "  default_context {",
        '    array_class: "CpuCachedArray"',
        '    backends: "cpu:float"',
        "  }",
        "}",
        "training_config {",
        "  max_epoch: 100",
        "  iter_per_epoch: 23",
        "  save_best: true",
        "  monitor_interval: 10",
        "}",
    ]
    main, params, state = _network("Main", batch_size, rows, True)
    text += main + _network("MainValidation", batch_size, rows, True)[0]
    text += _network("MainRuntime", batch_size, rows, False)[0]
    for name, uri, shuffle in (
        ("Training", "mnist/small_mnist_4or9_training.csv", "true"),
        ("Validation", "mnist/small_mnist_4or9_test.csv", "false"),
    ):
        text += [
            "dataset {",
            '  name: "%s"' % name,
            '  uri: "%s"' % uri,
            "  shuffle: %s" % shuffle,
            "  no_image_normalization: False",
            "  batch_size: %d" % batch_size,
            "}",
        ]
    solver = [
        "  update_interval: 1",
        "  solver {",
        '    type: "Adam"',
        "    weight_decay: 0",
        "    adam_param {",
        "      alpha: 0.001",
        "      beta1: 0.9",
        "      beta2: 0.999",
        "      eps: 1e-08",
        "    }",
        "  }",
    ]
    text += _block("optimizer", "Optimizer", "Main", "Training", state, solver)
    text += [
        "  data_variable {",
        '    variable_name: "SquaredError_T"',
        '    data_name: "x"',
        "  }",
        "  loss_variable {",
        '    variable_name: "SquaredError"',
        "  }",
    ]
    text += sum(
        (
            ["  parameter_variable {", '    variable_name: "%s"' % p, "    learning_rate_multiplier: 1", "  }"]
            for p in params
        ),
        [],
    ) + ["}"]
    for monitor, dataset in (("train_error", "Training"), ("valid_error", "Validation")):
        text += _block("monitor", monitor, "MainValidation", dataset, state, [])
        text += [
            "  data_variable {",
            '    variable_name: "SquaredError_T"',
            '    data_name: "x"',
            "  }",
            "  monitor_variable {",
            '    type: "Error"',
            '    variable_name: "SquaredError"',
            "  }",
            "}",
        ]
    text += _block(
        "executor",
        "Executor",
        "MainRuntime",
        "",
        state,
        [
            '  network_name: "MainRuntime"',
            "  num_evaluations: 1",
            '  repeat_evaluation_type: "mean"',
            "  need_back_propagation: false",
        ],
    )
    text += ["  output_variable {", '    variable_name: "Sigmoid_4"', '    data_name: "y\'"', "  }"]
    text += sum((["  parameter_variable {", '    variable_name: "%s"' % p, "  }"] for p in params), []) + ["}"]
    return "\n".join(text) + "\n"
