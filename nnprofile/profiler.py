"""The NNC profile sequence: which entries, in which order, timed how.

For each optimizer (training) and executor (inference) of a project, entries
are measured in the order NNC's Profile command logs them. Each entry is
appended to its section as soon as it is measured, so whatever was measured
before a failure or Ctrl-C is still there to be written.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional

import numpy as np

from .errors import ProfileError
from .result import Entry, Section
from .timing import Timer

EntryCallback = Callable[[Section, Entry], None]


class Layer:
    """A function of the executed graph, named as the project names it."""

    def __init__(self, function, name: str):
        self.function = function
        self.name = name
        self.type = function.info.type_name
        self.impl_class = function.name  # the class that ran: ConvolutionCudaCudnn under cuDNN
        self.in_place = any(function.inplace_data(i) != 0 for i in range(len(function.outputs)))

    def label(self, phase: str) -> str:
        return "%s (%s : %s%s)" % (phase, self.name, self.impl_class,
                                   " : in_place" if self.in_place else "")

    def entry(self, phase: str, samples) -> Entry:
        return Entry(label=self.label(phase), phase=phase, samples_ns=samples, layer=self.name,
                     layer_type=self.type, impl_class=self.impl_class, in_place=self.in_place)


def _layer_names(network) -> Dict[object, str]:
    """Output variable -> project layer name, to name functions seen in hooks."""
    names = {}
    for pf in network.functions.values():
        for out in pf.outputs:
            pv = network.variables.get(out)
            if pv is not None and getattr(pv, "variable_instance", None) is not None:
                # "$EC$/" marks functions NNabla made while unrolling loops.
                names[pv.variable_instance] = pf.name.replace("$EC$/", "")
    return names


def _is_sink(function) -> bool:
    return function.info.type_name == "Sink"


def _layers(functions, names: Dict[object, str]) -> List[Layer]:
    layers = []
    seen: Dict[str, int] = {}
    for f in functions:
        if _is_sink(f):  # added by NNabla to join several outputs; not a layer
            continue
        name = names.get(f.outputs[0]) if f.outputs else None
        if name is None:
            name = f.info.type_name
        # Every layer keeps its own line, even if two resolve to one name.
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = "%s#%d" % (name, seen[name])
        layers.append(Layer(f, name))
    return layers


def _execution_order(target, names, forward=True, loss_grad=None) -> List[Layer]:
    functions = []
    if forward:
        target.forward(clear_no_need_grad=False, function_pre_hook=functions.append)
    else:
        target.backward(grad=loss_grad, clear_buffer=False, function_pre_hook=functions.append)
    return _layers(functions, names)


def _let_data(variable, data, data_name, variable_name):
    from nnabla.utils.cli.utility import let_data_to_variable
    if variable.shape != data.shape and variable.size != data.size:
        raise ProfileError("data '%s' has shape %s but variable '%s' expects %s"
                           % (data_name, tuple(data.shape), variable_name, tuple(variable.shape)))
    try:
        let_data_to_variable(variable, data=data, data_name=data_name, variable_name=variable_name)
    except Exception as e:
        raise ProfileError("cannot assign data '%s' to variable '%s': %s" % (data_name, variable_name, e))


class Profiler:
    def __init__(self, timer: Timer, on_entry: Optional[EntryCallback] = None):
        self.timer = timer
        self.on_entry = on_entry or (lambda section, entry: None)

    def _time(self, section: Section, entry_factory, work, before=None) -> Entry:
        samples = self.timer.measure(work, before=before)
        entry = entry_factory(samples)
        section.entries.append(entry)
        self.on_entry(section, entry)
        return entry

    def _simple(self, section: Section, label: str, phase: str, work, before=None) -> Entry:
        return self._time(section, lambda s: Entry(label=label, phase=phase, samples_ns=s), work, before)

    # -- shared first steps: data and layers ---------------------------------

    def _inputs(self, section: Section, source, dataset_assign, generator_assign) -> None:
        self._simple(section, "load_dataset", "load_dataset", source.next)
        batch = source.next()
        for pv, data_name in dataset_assign.items():
            if data_name not in batch:
                raise ProfileError("data '%s' for variable '%s' is not in the dataset (it has: %s)"
                                   % (data_name, pv.name, ", ".join(sorted(batch)) or "nothing"))
            var, data = pv.variable_instance, batch[data_name]
            if data.dtype.kind == "f" and not np.isfinite(data).all():
                # NaN and inf take slow paths in many kernels: the times would mislead.
                raise ProfileError("data '%s' for variable '%s' contains NaN or infinite values"
                                   % (data_name, pv.name))
            _let_data(var, data, data_name, pv.name)  # once untimed: checks shapes, one clear error
            self._simple(section, "let_data (%s to %s)" % (data_name, pv.name), "let_data",
                         lambda v=var, d=data, n=data_name, vn=pv.name: _let_data(v, d, n, vn))
        for pv, generator in generator_assign.items():
            var = pv.variable_instance

            def generate(v=var, g=generator, vn=pv.name):
                _let_data(v, g(v.shape), "generator", vn)
            self._simple(section, "generate_data (%s)" % pv.name, "generate_data", generate)

    def _setup_and_forward(self, section: Section, layers: List[Layer]) -> None:
        for layer in layers:
            f = layer.function
            self._time(section, lambda s, l=layer: l.entry("setup_function", s),
                       lambda f=f: f.setup(f.inputs, f.outputs))
        for layer in layers:
            f = layer.function
            self._time(section, lambda s, l=layer: l.entry("forward_function", s),
                       lambda f=f: f.forward(f.inputs, f.outputs))

    # -- sections -------------------------------------------------------------

    def profile_optimizer(self, section: Section, optimizer, source) -> None:
        o = optimizer
        snapshot = {name: p.d.copy() for name, p in o.parameters.items()}
        try:
            self._inputs(section, source, o.dataset_assign, o.generator_assign)
            names = _layer_names(o.network)
            loss_grad = 1.0 / o.loss_variables[0].variable_instance.size
            forward_layers = _execution_order(o.target, names)
            self._setup_and_forward(section, forward_layers)

            # Fresh buffers for the per-layer backward runs: setup may reallocate.
            o.target.forward(clear_no_need_grad=False)
            backward_layers = _execution_order(o.target, names, forward=False, loss_grad=loss_grad)
            # NNabla's training loop zeroes the gradients between forward and backward.
            self._simple(section, "prepare_backward", "prepare_backward", o.solver.zero_grad)
            for layer in backward_layers:
                f = layer.function
                self._time(section, lambda s, l=layer: l.entry("backward_function", s),
                           lambda f=f: f.backward(f.inputs, f.outputs))

            def forward_all():
                o.target.forward(clear_no_need_grad=True)

            def backward_all():
                o.target.backward(grad=loss_grad, clear_buffer=True)

            params = [p for name, p in o.parameters.items() if name[-2:] in ("/W", "/b")]

            def backward_all_zeroing():
                for p in params:
                    p.grad.zero()
                o.target.backward(grad=loss_grad, clear_buffer=True)

            self._simple(section, "forward_all", "forward_all", forward_all)
            # Each backward run follows an untimed forward, as in training.
            self._simple(section, "backward_all", "backward_all", backward_all, before=forward_all)
            self._simple(section, "backward_all(wo param zero_grad)", "backward_all_wo_zero_grad",
                         backward_all_zeroing, before=forward_all)
            solver = o.solver.name
            if o.weight_decay > 0:
                self._simple(section, "weight_decay (%s)" % solver, "weight_decay",
                             lambda: o.solver.weight_decay(o.weight_decay))
            self._simple(section, "update (%s)" % solver, "update", o.solver.update)

            losses = [l.variable_instance for l in o.loss_variables]

            def monitor_loss():
                for v in losses:
                    np.mean(v.d)
            self._simple(section, "monitor_loss", "monitor_loss", monitor_loss)
            section.complete = True
        finally:
            # Timed updates moved the parameters; later sections see them as loaded.
            for name, p in o.parameters.items():
                p.d = snapshot[name]

    def profile_executor(self, section: Section, executor, source) -> None:
        e = executor
        self._inputs(section, source, e.dataset_assign, e.generator_assign)
        names = _layer_names(e.network)
        layers = _execution_order(e.forward_target, names)
        self._setup_and_forward(section, layers)

        def forward_all():
            e.forward_target.forward(clear_buffer=True)
        self._simple(section, "forward_all", "forward_all", forward_all)
        section.complete = True
