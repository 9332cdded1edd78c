"""The NNC profile sequence: which entries, in which order, timed how.

For each optimizer (training) and executor (inference) of a project, entries
are measured in the order NNC's Profile command logs them. Each entry is
appended to its section as soon as it is measured, so whatever was measured
before a failure or Ctrl-C is still there to be written.

Two ways of timing the layers:

- ``isolated`` (NNC's way): each function's forward or backward is re-run on
  its own, on real buffers of the network;
- ``graph``: each function is timed inside real forward and backward passes of
  the whole network, between NNabla's function pre- and post-hooks.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from . import flops as flop_counts
from .errors import ProfileError
from .result import Entry, Section
from .timing import Measurement, Sampling, StopRule, Timer, summarize

EntryCallback = Callable[[Section, Entry], None]
MODES = ("isolated", "graph")


class Layer:
    """A function of the executed graph, named as the project names it."""

    def __init__(self, function, name: str, parameters=frozenset()):
        self.function = function
        self.name = name
        self.type = function.info.type_name
        self.impl_class = function.name  # the class that ran: ConvolutionCudaCudnn under cuDNN
        self.in_place = any(function.inplace_data(i) != 0 for i in range(len(function.outputs)))
        inputs, outputs = function.inputs, function.outputs
        self.shapes = flop_counts.Shapes(
            inputs=[tuple(v.shape) for v in inputs], outputs=[tuple(v.shape) for v in outputs],
            need_grad=[bool(v.need_grad) for v in inputs], args=dict(function.info.args or {}))
        self.params = sum(v.size for v in inputs if v in parameters)
        self.flops = flop_counts.count(self.type, self.shapes)
        self.dtype = _dtype(outputs[0]) if outputs else None
        self.itemsize = int(np.dtype(self.dtype).itemsize) if self.dtype else 4

    def label(self, phase: str) -> str:
        return "%s (%s : %s%s)" % (phase, self.name, self.impl_class,
                                   " : in_place" if self.in_place else "")

    def entry(self, phase: str, m: Measurement) -> Entry:
        e = Entry(label=self.label(phase), phase=phase, samples_ns=m.samples_ns,
                  calls_per_sample=m.calls_per_sample, overhead_ns=m.overhead_ns,
                  layer=self.name, layer_type=self.type, impl_class=self.impl_class,
                  in_place=self.in_place, params=self.params, dtype=self.dtype,
                  output_shape="x".join(str(d) for d in self.shapes.outputs[0]) if self.shapes.outputs else "")
        if phase in ("forward_function", "backward_function"):
            forward = phase == "forward_function"
            if self.flops is not None:
                e.flops = self.flops[0 if forward else 1]
            e.bytes_read, e.bytes_written = flop_counts.bytes_moved(
                self.shapes, self.itemsize, "forward" if forward else "backward")
        return e


def _dtype(variable) -> Optional[str]:
    try:
        return np.dtype(variable.data.dtype).name
    except Exception:  # an array NNabla has not allocated yet
        return None


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


def _layers(functions, names: Dict[object, str], parameters) -> List[Optional[Layer]]:
    """A Layer per function, None for functions that are not layers."""
    layers: List[Optional[Layer]] = []
    seen: Dict[str, int] = {}
    for f in functions:
        if _is_sink(f):  # added by NNabla to join several outputs; not a layer
            layers.append(None)
            continue
        name = names.get(f.outputs[0]) if f.outputs else None
        if name is None:
            name = f.info.type_name
        # Every layer keeps its own line, even if two resolve to one name.
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name = "%s#%d" % (name, seen[name])
        layers.append(Layer(f, name, parameters))
    return layers


def _parameters():
    import nnabla as nn
    return frozenset(nn.get_parameters(grad_only=False).values())


def _execution_order(target, names, forward=True, loss_grad=None) -> List[Optional[Layer]]:
    """The functions of one pass in the order they run: a Layer each, None for a Sink."""
    functions = []
    if forward:
        target.forward(clear_no_need_grad=False, function_pre_hook=functions.append)
    else:
        target.backward(grad=loss_grad, clear_buffer=False, function_pre_hook=functions.append)
    return _layers(functions, names, _parameters())


def _only_layers(order: List[Optional[Layer]]) -> List[Layer]:
    return [layer for layer in order if layer is not None]


def _let_data(variable, data, data_name, variable_name):
    from nnabla.utils.cli.utility import let_data_to_variable
    if variable.shape != data.shape and variable.size != data.size:
        raise ProfileError("data '%s' has shape %s but variable '%s' expects %s"
                           % (data_name, tuple(data.shape), variable_name, tuple(variable.shape)))
    try:
        let_data_to_variable(variable, data=data, data_name=data_name, variable_name=variable_name)
    except Exception as e:
        raise ProfileError("cannot assign data '%s' to variable '%s': %s" % (data_name, variable_name, e))


class GraphTimer:
    """Times every function inside whole passes, between NNabla's pre- and post-hooks.

    The hooks only read the clock: functions run in the same order in every
    pass, so the i-th pair of readings belongs to the i-th function of the
    order recorded beforehand (checked on every pass).
    """

    def __init__(self, timer: Timer):
        self.timer = timer

    def hooks(self, starts: List[int], ends: List[int]):
        now = self.timer.clock.now_ns
        sync = self.timer.sync
        start, end = starts.append, ends.append
        if sync is None:
            return (lambda f: start(now())), (lambda f: end(now()))

        def pre(f):
            sync()  # what ran before this function is not its time
            start(now())

        def post(f):
            sync()
            end(now())
        return pre, post

    def measure(self, order: List[Optional[str]], run_pass: Callable[[object, object], None],
                before: Optional[Callable[[], object]] = None) -> Dict[str, Measurement]:
        """One sample per layer per pass, until every layer's series is long enough.

        ``order`` names the functions of a pass in execution order (None for a
        function that is not a layer). A layer's budget is charged the whole
        pass: that is what one of its samples costs.
        """
        overhead = self.timer.overhead_ns
        names = [n for n in order if n is not None]
        samples: Dict[str, List[float]] = {name: [] for name in names}
        rules = {name: StopRule(self.timer.sampling, overhead) for name in names}
        starts: List[int] = []
        ends: List[int] = []
        pre, post = self.hooks(starts, ends)
        for _ in range(self.timer.sampling.warmup):
            if before is not None:
                before()
            run_pass(None, None)
        now = self.timer.clock.now_ns
        passes = 0
        while not all(r.done() for r in rules.values()) and passes < self.timer.sampling.max_runs:
            if before is not None:
                before()
            del starts[:], ends[:]
            t0 = now()
            run_pass(pre, post)
            spent = now() - t0
            passes += 1
            if len(starts) != len(order) or len(ends) != len(order):
                raise ProfileError("graph mode: a pass ran %d functions where %d were expected; "
                                   "use --mode isolated" % (len(starts), len(order)))
            for name, t_start, t_end in zip(order, starts, ends):
                if name is not None:
                    samples[name].append(t_end - t_start)
                    rules[name].add(t_end - t_start, spent)
        return {name: Measurement(s, 1, overhead) for name, s in samples.items()}


class Profiler:
    def __init__(self, timer: Timer, on_entry: Optional[EntryCallback] = None, mode: str = "isolated",
                 layers: bool = True):
        if mode not in MODES:
            raise ProfileError("unknown mode '%s' (choose from %s)" % (mode, ", ".join(MODES)))
        self.timer = timer
        self.mode = mode
        self.layers = layers  # False: only the whole-step entries
        self.graph_timer = GraphTimer(timer)
        self.on_entry = on_entry or (lambda section, entry: None)

    def _add(self, section: Section, entry: Entry) -> Entry:
        section.entries.append(entry)
        self.on_entry(section, entry)
        return entry

    def _time(self, section: Section, entry_factory, work, before=None) -> Entry:
        return self._add(section, entry_factory(self.timer.measure(work, before=before)))

    def _simple(self, section: Section, label: str, phase: str, work, before=None) -> Entry:
        def make(m: Measurement) -> Entry:
            return Entry(label=label, phase=phase, samples_ns=m.samples_ns,
                         calls_per_sample=m.calls_per_sample, overhead_ns=m.overhead_ns)
        return self._time(section, make, work, before)

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

    def _setup(self, section: Section, layers: List[Layer]) -> None:
        if not self.layers:
            return
        for layer in layers:
            f = layer.function
            self._time(section, lambda m, l=layer: l.entry("setup_function", m),
                       lambda f=f: f.setup(f.inputs, f.outputs))

    def _layer_passes(self, section: Section, phase: str, order: List[Optional[Layer]],
                      run_pass, before=None) -> None:
        """Per-layer forward or backward entries, in the mode chosen."""
        if not self.layers:
            return
        measured = {}
        if self.mode == "graph":
            measured = self.graph_timer.measure([l.name if l else None for l in order], run_pass, before)
        for layer in _only_layers(order):
            if layer.name in measured:
                self._add(section, layer.entry(phase, measured[layer.name]))
                continue
            f = layer.function
            if phase == "forward_function":
                def work(f=f):
                    f.forward(f.inputs, f.outputs)
            else:
                def work(f=f):
                    f.backward(f.inputs, f.outputs)
            self._time(section, lambda m, l=layer: l.entry(phase, m), work)

    # -- sections -------------------------------------------------------------

    def profile_optimizer(self, section: Section, optimizer, source) -> None:
        o = optimizer
        snapshot = {name: p.d.copy() for name, p in o.parameters.items()}
        try:
            self._inputs(section, source, o.dataset_assign, o.generator_assign)
            names = _layer_names(o.network)
            loss_grad = 1.0 / o.loss_variables[0].variable_instance.size
            forward_order = _execution_order(o.target, names)
            self._setup(section, _only_layers(forward_order))

            def forward_all(pre=None, post=None):
                o.target.forward(clear_no_need_grad=True, function_pre_hook=pre, function_post_hook=post)

            def backward_all(pre=None, post=None):
                o.target.backward(grad=loss_grad, clear_buffer=True,
                                  function_pre_hook=pre, function_post_hook=post)

            # Fresh buffers for the per-layer runs: setup may reallocate.
            o.target.forward(clear_no_need_grad=False)
            self._layer_passes(section, "forward_function", forward_order, forward_all)
            o.target.forward(clear_no_need_grad=False)
            backward_order = _execution_order(o.target, names, forward=False, loss_grad=loss_grad)
            # NNabla's training loop zeroes the gradients between forward and backward.
            self._simple(section, "prepare_backward", "prepare_backward", o.solver.zero_grad)
            self._layer_passes(section, "backward_function", backward_order, backward_all,
                               before=forward_all)

            params = [p for name, p in o.parameters.items() if name[-2:] in ("/W", "/b")]

            def backward_all_zeroing():
                for p in params:
                    p.grad.zero()
                backward_all()

            self._simple(section, "forward_all", "forward_all", forward_all)
            # Each backward run follows an untimed forward, as in training.
            self._simple(section, "backward_all", "backward_all", backward_all, before=forward_all)
            if self.layers:  # a variant of backward_all, not part of the step
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
        order = _execution_order(e.forward_target, names)
        self._setup(section, _only_layers(order))

        def forward_all(pre=None, post=None):
            e.forward_target.forward(clear_buffer=True, function_pre_hook=pre, function_post_hook=post)
        e.forward_target.forward(clear_no_need_grad=False)
        self._layer_passes(section, "forward_function", order, forward_all)
        self._simple(section, "forward_all", "forward_all", forward_all)
        section.complete = True



def hook_costs(timer: Timer, target, n_functions: int, rounds: int = 5) -> Tuple[float, float]:
    """Per function, in ns: what the timing hooks add to a forward pass, and what NNabla's
    own dispatch of empty hooks adds (a part of the first).

    Passes without hooks, with the timing hooks and with empty hooks, interleaved
    so that drift on a busy machine hits all three alike; medians.
    """
    starts: List[int] = []
    ends: List[int] = []
    pre, post = GraphTimer(timer).hooks(starts, ends)

    def plain():
        target.forward(clear_no_need_grad=True)

    def timing_hooks():
        del starts[:], ends[:]
        target.forward(clear_no_need_grad=True, function_pre_hook=pre, function_post_hook=post)

    def empty_hooks():
        target.forward(clear_no_need_grad=True, function_pre_hook=lambda f: None,
                       function_post_hook=lambda f: None)
    fixed = Timer(Sampling(runs=10, warmup=2), timer.clock, timer.sync)
    samples: Dict[Callable, List[float]] = {plain: [], timing_hooks: [], empty_hooks: []}
    for _ in range(rounds):
        for work, values in samples.items():
            values += fixed.measure(work, batchable=False).samples_ns
    base, hooked, empty = (summarize(samples[w]).median for w in (plain, timing_hooks, empty_hooks))
    return (hooked - base) / n_functions, (empty - base) / n_functions


def calibrate_hooks(timer: Timer, n_functions: int = 200) -> float:
    """What the graph-mode timing hooks add per function, in ns.

    Measured on a chain of tiny functions in the current context, so that the
    hooks' cost is not lost in the noise of real layers.
    """
    import nnabla as nn
    import nnabla.functions as F
    x = nn.Variable((1,))
    x.d = 1.0
    y = x
    for _ in range(n_functions):
        y = F.relu(y)
    return hook_costs(timer, y, n_functions)[0]
