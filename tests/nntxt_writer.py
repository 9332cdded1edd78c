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
            out += _function(lname, ltype, [prev, lname + "/affine/W", lname + "/affine/b"], lname,
                             ["affine_param {", "  base_axis: 1", "}"])
        else:
            out += _function(lname, ltype, [prev], lname)
        prev = lname
    out += _function("Softmax", "Softmax", [prev], "Softmax", ["softmax_param {", "  axis: 1", "}"])
    if training:
        out += _function("CategoricalCrossEntropy", "CategoricalCrossEntropy",
                         ["Softmax", "CategoricalCrossEntropy_T"], "CategoricalCrossEntropy",
                         ["categorical_cross_entropy_param {", "  axis: 1", "}"])
    return out + ["}"]


def mlp_project(layer_types: Sequence[Tuple[str, int]], input_dim: int = 784, classes: int = 10,
                batch_size: int = 64, weight_decay: float = 0.0,
                datasets=("training.csv", "validation.csv")) -> str:
    """An NNC project of the given (type, units) layers, ending in Softmax and the loss.

    The last Affine must have ``classes`` units. Types other than Affine take no units.
    """
    layers = mlp_layers(layer_types)
    params = ["%s/affine/%s" % (n, p) for n, t, _ in layers if t == "Affine" for p in "Wb"]
    text = ["global_config {", "  default_context {", '    array_class: "CpuCachedArray"',
            '    backends: "cpu:float"', "  }", "}",
            "training_config {", "  max_epoch: 1", "  iter_per_epoch: 1", "  save_best: true",
            "  monitor_interval: 10", "}"]
    text += _network("Main", batch_size, input_dim, layers, classes, True)
    text += _network("MainValidation", batch_size, input_dim, layers, classes, True)
    text += _network("MainRuntime", batch_size, input_dim, layers, classes, False)
    for name, uri, shuffle in (("Training", datasets[0], "true"), ("Validation", datasets[1], "false")):
        text += ["dataset {", '  name: "%s"' % name, '  uri: "%s"' % uri, "  shuffle: %s" % shuffle,
                 "  no_image_normalization: False", "  batch_size: %d" % batch_size, "}"]
    text += ["optimizer {", '  name: "Optimizer"', "  update_interval: 1", '  network_name: "Main"',
             '  dataset_name: "Training"', "  solver {", '    type: "Adam"',
             "    weight_decay: %g" % weight_decay, "    adam_param {", "      alpha: 0.001",
             "      beta1: 0.9", "      beta2: 0.999", "      eps: 1e-08", "    }", "  }",
             "  data_variable {", '    variable_name: "Input"', '    data_name: "x"', "  }",
             "  data_variable {", '    variable_name: "CategoricalCrossEntropy_T"', '    data_name: "y"', "  }",
             "  loss_variable {", '    variable_name: "CategoricalCrossEntropy"', "  }"]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p,
                 "    learning_rate_multiplier: 1", "  }"]
    text += ["}"]
    text += ["monitor {", '  name: "valid_error"', '  network_name: "MainValidation"',
             '  dataset_name: "Validation"',
             "  data_variable {", '    variable_name: "Input"', '    data_name: "x"', "  }",
             "  data_variable {", '    variable_name: "CategoricalCrossEntropy_T"', '    data_name: "y"', "  }",
             "  monitor_variable {", '    type: "Error"', '    variable_name: "CategoricalCrossEntropy"', "  }",
             "}"]
    text += ["executor {", '  name: "Executor"', '  network_name: "MainRuntime"', "  num_evaluations: 1",
             '  repeat_evaluation_type: "mean"', "  need_back_propagation: false",
             "  data_variable {", '    variable_name: "Input"', '    data_name: "x"', "  }",
             "  output_variable {", '    variable_name: "Softmax"', '    data_name: "y\'"', "  }"]
    for p in params:
        text += ["  parameter_variable {", '    variable_name: "%s"' % p, "  }"]
    text += ["}"]
    return "\n".join(text) + "\n"


def deep_mlp(n_layers: int, width: int = 64, input_dim: int = 784, classes: int = 10,
             batch_size: int = 64) -> str:
    """n_layers layers in all: (Affine, ReLU) pairs, the last Affine giving the classes."""
    pairs = max(1, n_layers // 2)
    layer_types: List[Tuple[str, int]] = []
    for i in range(pairs - 1):
        layer_types += [("Affine", width), ("ReLU", 0)]
    layer_types += [("Affine", classes)]
    return mlp_project(layer_types, input_dim=input_dim, classes=classes, batch_size=batch_size)
