"""Write NNC-style projects for multilayer perceptrons.

Used to make test fixtures and the deep-MLP projects of the scaling benchmark,
laid out as Neural Network Console lays out its own files: a training network
``Main``, ``MainValidation`` and ``MainRuntime``, datasets, an optimizer, the
monitors and an executor.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

ACTIVATIONS = ("ReLU", "Tanh", "Sigmoid", "ELU", "Swish")


def _dims(shape: Sequence[int]) -> str:
    return "shape: { " + " ".join(("dim:%d" % d) if d < 0 else ("dim: %d" % d) for d in shape) + " }"


def _variable(name, kind, shape, init=None) -> List[str]:
    out = ["  variable {", '    name: "%s"' % name, '    type: "%s"' % kind, "    " + _dims(shape)]
    if init:
        out += ["    initializer {", '      type: "%s"' % init[0], "      multiplier: %s" % init[1], "    }"]
    return out + ["  }"]


def _function(name, ftype, inputs, output, param=None) -> List[str]:
    out = ["  function {", '    name: "%s"' % name, '    type: "%s"' % ftype]
    out += ['    input: "%s"' % i for i in inputs]
    out += ['    output: "%s"' % output]
    if param:
        out += ["    " + line for line in param]
    return out + ["  }"]


def mlp_layers(layer_types: Sequence[Tuple[str, int]]) -> List[Tuple[str, str, int]]:
    """Name layers as NNC does: the type, then _2, _3 ... for later layers of the same type."""
    counts = {}
    named = []
    for ltype, units in layer_types:
        counts[ltype] = counts.get(ltype, 0) + 1
        n = counts[ltype]
        named.append((ltype if n == 1 else "%s_%d" % (ltype, n), ltype, units))
    return named


def _network(name, batch_size, input_dim, layers, classes, training) -> List[str]:
    out = ["network {", '  name: "%s"' % name, "  batch_size: %d" % batch_size]
    out += _variable("Input", "Buffer", [-1, input_dim])
    width = input_dim
    shapes = []
    for lname, ltype, units in layers:
        if ltype == "Affine":
            out += _variable("%s/affine/W" % lname, "Parameter", [width, units], ("NormalAffineGlorot", 1))
            out += _variable("%s/affine/b" % lname, "Parameter", [units], ("Constant", 0))
            width = units
        shapes.append(width)
    if training:
        out += _variable("CategoricalCrossEntropy_T", "Buffer", [-1, 1])
    for (lname, _, _), w in zip(layers, shapes):
        out += _variable(lname, "Buffer", [-1, w])
    out += _variable("Softmax", "Buffer", [-1, classes])
    if training:
        out += _variable("CategoricalCrossEntropy", "Buffer", [-1, 1])
    prev = "Input"
    for lname, ltype, _ in layers:
        if ltype == "Affine":
            out += _function(
                lname,
                ltype,
                [prev, lname + "/affine/W", lname + "/affine/b"],
                lname,
                ["affine_param {", "  base_axis: 1", "}"],
            )
        else:
            out += _function(lname, ltype, [prev], lname)
        prev = lname
    out += _function("Softmax", "Softmax", [prev], "Softmax", ["softmax_param {", "  axis: 1", "}"])
    if training:
        out += _function(
            "CategoricalCrossEntropy",
            "CategoricalCrossEntropy",
            ["Softmax", "CategoricalCrossEntropy_T"],
            "CategoricalCrossEntropy",
            ["categorical_cross_entropy_param {", "  axis: 1", "}"],
        )
    return out + ["}"]


def mlp_project(
    layer_types: Sequence[Tuple[str, int]],
    input_dim: int = 784,
    classes: int = 10,
    batch_size: int = 64,
    weight_decay: float = 0.0,
    datasets=("training.csv", "validation.csv"),
) -> str:
    """An NNC project of the given (type, units) layers, ending in Softmax and the loss.

    The last Affine must have ``classes`` units. Types other than Affine take no units.
    """
    layers = mlp_layers(layer_types)
    params = ["%s/affine/%s" % (n, p) for n, t, _ in layers if t == "Affine" for p in "Wb"]
    text = [
        "global_config {",
        "  default_context {",
        '    array_class: "CpuCachedArray"',
        '    backends: "cpu:float"',
        "  }",
        "}",
        "training_config {",
        "  max_epoch: 1",
        "  iter_per_epoch: 1",
        "  save_best: true",
        "  monitor_interval: 10",
        "}",
    ]
    text += _network("Main", batch_size, input_dim, layers, classes, True)
    text += _network("MainValidation", batch_size, input_dim, layers, classes, True)
    text += _network("MainRuntime", batch_size, input_dim, layers, classes, False)
    for name, uri, shuffle in (("Training", datasets[0], "true"), ("Validation", datasets[1], "false")):
        text += [
            "dataset {",
            '  name: "%s"' % name,
            '  uri: "%s"' % uri,
            "  shuffle: %s" % shuffle,
            "  no_image_normalization: False",
            "  batch_size: %d" % batch_size,
            "}",
        ]
    text += [
        "optimizer {",
        '  name: "Optimizer"',
        "  update_interval: 1",
        '  network_name: "Main"',
        '  dataset_name: "Training"',
        "  solver {",
        '    type: "Adam"',
        "    weight_decay: %g" % weight_decay,
        "    adam_param {",
        "      alpha: 0.001",
        "      beta1: 0.9",
        "      beta2: 0.999",
        "      eps: 1e-08",
        "    }",
        "  }",
        "  data_variable {",
        '    variable_name: "Input"',
        '    data_name: "x"',
        "  }",
        "  data_variable {",
        '    variable_name: "CategoricalCrossEntropy_T"',
        '    data_name: "y"',
        "  }",
        "  loss_variable {",
        '    variable_name: "CategoricalCrossEntropy"',
        "  }",
    ]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p, "    learning_rate_multiplier: 1", "  }"]
    text += ["}"]
    text += [
        "monitor {",
        '  name: "valid_error"',
        '  network_name: "MainValidation"',
        '  dataset_name: "Validation"',
        "  data_variable {",
        '    variable_name: "Input"',
        '    data_name: "x"',
        "  }",
        "  data_variable {",
        '    variable_name: "CategoricalCrossEntropy_T"',
        '    data_name: "y"',
        "  }",
        "  monitor_variable {",
        '    type: "Error"',
        '    variable_name: "CategoricalCrossEntropy"',
        "  }",
        "}",
    ]
    text += [
        "executor {",
        '  name: "Executor"',
        '  network_name: "MainRuntime"',
        "  num_evaluations: 1",
        '  repeat_evaluation_type: "mean"',
        "  need_back_propagation: false",
        "  data_variable {",
        '    variable_name: "Input"',
        '    data_name: "x"',
        "  }",
        "  output_variable {",
        '    variable_name: "Softmax"',
        '    data_name: "y\'"',
        "  }",
    ]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p, "  }"]
    text += ["}"]
    return "\n".join(text) + "\n"


def deep_mlp(n_layers: int, width: int = 64, input_dim: int = 784, classes: int = 10, batch_size: int = 64) -> str:
    """n_layers layers in all: (Affine, ReLU) pairs, the last Affine giving the classes."""
    pairs = max(1, n_layers // 2)
    layer_types: List[Tuple[str, int]] = []
    for _ in range(pairs - 1):
        layer_types += [("Affine", width), ("ReLU", 0)]
    layer_types += [("Affine", classes)]
    return mlp_project(layer_types, input_dim=input_dim, classes=classes, batch_size=batch_size)


def _lstm_network(name: str, batch_size: int, steps: int, features: int, hidden: int, training: bool) -> List[str]:
    """An LSTM that reads a sequence and reconstructs each step: RecurrentInput over the steps,
    the four gates as Affine layers on [x_t, h_t-1], Delay for h and c, an Affine back to the
    features inside the loop, RecurrentOutput, and a SquaredError against the input."""
    out = [
        "network {",
        '  name: "%s"' % name,
        "  batch_size: %d" % batch_size,
        "  repeat_info {",
        '    id: "RecurrentInput"',
        "    times: %d" % steps,
        "  }",
    ]
    out += _variable("Input", "Buffer", [-1, steps, features])
    gates = ["Affine", "Affine_2", "Affine_3", "Affine_4"]
    for g in gates:
        out += _variable("%s/affine/W" % g, "Parameter", [features + hidden, hidden], ("NormalAffineGlorot", 1))
        out += _variable("%s/affine/b" % g, "Parameter", [hidden], ("Constant", 0))
    out += _variable("Affine_5/affine/W", "Parameter", [hidden, features], ("NormalAffineGlorot", 1))
    out += _variable("Affine_5/affine/b", "Parameter", [features], ("Constant", 0))
    out += _variable("Delay_T", "Buffer", [-1, hidden])
    out += _variable("Delay_2_T", "Buffer", [-1, hidden])
    inside = [("RecurrentInput", features), ("Delay", hidden), ("Delay_2", hidden), ("Concatenate", features + hidden)]
    inside += [(g, hidden) for g in gates]
    inside += [
        ("Sigmoid", hidden),
        ("Sigmoid_2", hidden),
        ("Sigmoid_3", hidden),
        ("Tanh", hidden),
        ("Mul2", hidden),
        ("Mul2_2", hidden),
        ("Add2", hidden),
        ("Tanh_2", hidden),
        ("Mul2_3", hidden),
        ("Affine_5", features),
    ]
    for vname, width in inside:
        out += (
            _variable(vname, "Buffer", [-1, width])[:3]
            + ['    repeat_id: "RecurrentInput"']
            + _variable(vname, "Buffer", [-1, width])[3:]
        )
    out += _variable("RecurrentOutput", "Buffer", [-1, steps, features])
    if training:
        out += _variable("SquaredError", "Buffer", [-1, steps, features])

    def looped(lines: List[str]) -> List[str]:
        return lines[:3] + ['    repeat_id: "RecurrentInput"'] + lines[3:]

    recurrent = ["recurrent_param {", '  repeat_id: "RecurrentInput"']
    out += looped(
        _function("RecurrentInput", "RecurrentInput", ["Input"], "RecurrentInput", recurrent + ["  axis: 1", "}"])
    )
    out += looped(_function("Delay", "Delay", ["Mul2_3", "Delay_T"], "Delay", recurrent + ["}"]))
    out += looped(_function("Delay_2", "Delay", ["Add2", "Delay_2_T"], "Delay_2", recurrent + ["}"]))
    out += looped(
        _function(
            "Concatenate",
            "Concatenate",
            ["RecurrentInput", "Delay"],
            "Concatenate",
            ["concatenate_param {", "  axis: 1", "}"],
        )
    )
    affine = ["affine_param {", "  base_axis: 1", "}"]
    for g, act in zip(gates, ["Sigmoid", "Sigmoid_2", "Sigmoid_3", "Tanh"]):
        out += looped(_function(g, "Affine", ["Concatenate", g + "/affine/W", g + "/affine/b"], g, affine))
        out += looped(_function(act, act.split("_")[0], [g], act))
    out += looped(_function("Mul2", "Mul2", ["Sigmoid_2", "Delay_2"], "Mul2"))
    out += looped(_function("Mul2_2", "Mul2", ["Sigmoid", "Tanh"], "Mul2_2"))
    out += looped(_function("Add2", "Add2", ["Mul2", "Mul2_2"], "Add2"))
    out += looped(_function("Tanh_2", "Tanh", ["Add2"], "Tanh_2"))
    out += looped(_function("Mul2_3", "Mul2", ["Sigmoid_3", "Tanh_2"], "Mul2_3"))
    out += looped(
        _function("Affine_5", "Affine", ["Mul2_3", "Affine_5/affine/W", "Affine_5/affine/b"], "Affine_5", affine)
    )
    out += _function(
        "RecurrentOutput",
        "RecurrentOutput",
        ["Affine_5"],
        "RecurrentOutput",
        ["recurrent_param {", '  repeat_id: "RecurrentInput"', "  length: %d" % steps, "  axis: 1", "}"],
    )
    if training:
        out += _function("SquaredError", "SquaredError", ["RecurrentOutput", "Input"], "SquaredError")
    return out + ["}"]


def lstm_autoencoder(steps: int = 53, features: int = 16, hidden: int = 64, batch_size: int = 32) -> str:
    """An NNC project of an LSTM sequence autoencoder, which NNabla unrolls over ``steps``: 15
    functions per step (53 steps: 798 functions in the training network). Synthetic data only
    (``--synthetic``): its datasets name files that do not exist."""
    params = ["Affine%s/affine/%s" % (s, p) for s in ("", "_2", "_3", "_4", "_5") for p in "Wb"]
    text = [
        "global_config {",
        "  default_context {",
        '    array_class: "CpuCachedArray"',
        '    backends: "cpu:float"',
        "  }",
        "}",
        "training_config {",
        "  max_epoch: 1",
        "  iter_per_epoch: 1",
        "  save_best: true",
        "  monitor_interval: 10",
        "}",
    ]
    text += _lstm_network("Main", batch_size, steps, features, hidden, True)
    text += _lstm_network("MainRuntime", batch_size, steps, features, hidden, False)
    for name, uri, shuffle in (
        ("Training", "sequences/training.csv", "true"),
        ("Validation", "sequences/validation.csv", "false"),
    ):
        text += [
            "dataset {",
            '  name: "%s"' % name,
            '  uri: "%s"' % uri,
            "  shuffle: %s" % shuffle,
            "  no_image_normalization: True",
            "  batch_size: %d" % batch_size,
            "}",
        ]
    zero_state = []
    for v in ("Delay_T", "Delay_2_T"):
        zero_state += [
            "  generator_variable {",
            '    variable_name: "%s"' % v,
            '    type: "Constant"',
            "    multiplier: 0",
            "  }",
        ]
    text += [
        "optimizer {",
        '  name: "Optimizer"',
        "  update_interval: 1",
        '  network_name: "Main"',
        '  dataset_name: "Training"',
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
        "  data_variable {",
        '    variable_name: "Input"',
        '    data_name: "x"',
        "  }",
    ]
    text += zero_state + ["  loss_variable {", '    variable_name: "SquaredError"', "  }"]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p, "    learning_rate_multiplier: 1", "  }"]
    text += ["}"]
    text += [
        "executor {",
        '  name: "Executor"',
        '  network_name: "MainRuntime"',
        "  num_evaluations: 1",
        '  repeat_evaluation_type: "mean"',
        "  need_back_propagation: false",
        "  data_variable {",
        '    variable_name: "Input"',
        '    data_name: "x"',
        "  }",
    ]
    text += zero_state + ["  output_variable {", '    variable_name: "RecurrentOutput"', '    data_name: "y\'"', "  }"]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p, "  }"]
    text += ["}"]
    return "\n".join(text) + "\n"
