"""The NNC profile sequence: which entries, in which order, timed how.

For each optimizer (training) and executor (inference) of a project, this
module lays out the entries in the order NNC's Profile command logs them, as
items of a round (``nnprofile.measure.rounds``): data, setup, the layers'
forward, prepare_backward, the layers' backward, the whole passes, weight
decay, update and monitor_loss.

Two ways of timing the layers:

- ``isolated`` (NNC's way): each function's forward or backward is re-run on
  its own, on real buffers of the network (refreshed at the start of every
  round, since the whole passes clear them);
- ``graph``: each function is timed inside real forward and backward passes of
  the whole network, between NNabla's function pre- and post-hooks.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..base.choices import BACKWARD, FORWARD, MODES
from ..base.errors import ProfileError
from ..result import Entry, Section
from ..result.details import LoadBurst
from ..base.stats import Drift
from ..base import buffers
from ..result.layer import Layer
from . import peak
from .naming import LayerIndex, is_sink, layer_names, only_layers, parameters
from .economy import FirstStep, in_passes, run_first_step
from .items import Action, Item, PassProbe, Probe
from .pass_timeline import Timeline
from .rounds import EntryCallback, RoundCallback, RoundRunner
from .timing import Measurement, Timer

# load_dataset as nnabla_cli profile reads it: at least 100 reads in a row (it also reads for a second; a
# fifth here, the rest of the section's budget spent elsewhere).
BURST_READS = 100
BURST_SECONDS = 0.2


def let_data(variable, data, data_name: str, variable_name: str) -> None:
    from nnabla.utils.cli.utility import let_data_to_variable

    if variable.shape != data.shape and variable.size != data.size:
        raise ProfileError(
            "data '%s' has shape %s but variable '%s' expects %s"
            % (data_name, tuple(data.shape), variable_name, tuple(variable.shape))
        )
    try:
        let_data_to_variable(variable, data=data, data_name=data_name, variable_name=variable_name)
    except Exception as e:
        raise ProfileError("cannot assign data '%s' to variable '%s': %s" % (data_name, variable_name, e))


def simple(label: str, phase: str) -> Callable[[Measurement], Entry]:
    """The entry factory of a step that is not a layer."""

    def make(m: Measurement) -> Entry:
        return Entry(
            label=label,
            phase=phase,
            samples_ns=m.samples_ns,
            calls_per_sample=m.calls_per_sample,
            overhead_ns=m.overhead_ns,
        )

    return make


def layer_entry(layer: Layer, phase: str) -> Callable[[Measurement], Entry]:
    return lambda m: layer.entry(phase, m.samples_ns, m.calls_per_sample, m.overhead_ns)


class SolverSnapshot:
    """Parameters and solver state as they were: restored after every timed update."""

    def __init__(self, solver, params: Dict[str, Any]):
        self.solver = solver
        self.params = {name: (p, p.d.copy()) for name, p in params.items()}
        self.states = {
            name: (s.t, {k: v.d.copy() for k, v in s.pstate.items()}) for name, s in solver.get_states().items()
        }

    def restore(self) -> None:
        for p, data in self.params.values():
            p.d = data
        states = self.solver.get_states()
        for name, s in states.items():
            t, arrays = self.states[name]
            s.t = t
            for k, v in s.pstate.items():
                v.d = arrays[k]
        self.solver.set_states(states)


class SectionMeasurer:
    """Profiles sections of a project: plans each section's items, then runs them in rounds."""

    def __init__(
        self,
        timer: Timer,
        on_entry: Optional[EntryCallback] = None,
        mode: str = "isolated",
        layers: bool = True,
        backend: Optional[Tuple[str, str]] = None,
        on_round: Optional[RoundCallback] = None,
    ):
        if mode not in MODES:
            raise ProfileError("unknown mode '%s' (choose from %s)" % (mode, ", ".join(MODES)))
        self.timer = timer
        self.mode = mode
        self.layers = layers  # False: only the whole-step entries
        self.runner = RoundRunner(timer, on_entry, on_round=on_round)
        self.backend = backend  # (backend, device id) the project runs on, for the memory measurement
        self.timeline = Timeline()
        # What the timing hooks cost a function (in all, inside its interval), ns: measured once for the run where a
        # section's layers are timed inside its passes (``economy``); graph mode's own measurement, where given.
        self.hooks: Optional[Tuple[float, float]] = None

    # -- the items of a round -------------------------------------------------

    def _inputs(self, source, dataset_assign, generator_assign) -> List[Item]:
        items: List[Item] = [Probe(simple("load_dataset", "load_dataset"), source.next)]
        batch = source.next()
        for pv, data_name in dataset_assign.items():
            if data_name not in batch:
                raise ProfileError(
                    "data '%s' for variable '%s' is not in the dataset (it has: %s)"
                    % (data_name, pv.name, ", ".join(sorted(batch)) or "nothing")
                )
            var, data = pv.variable_instance, batch[data_name]
            if data.dtype.kind == "f" and not np.isfinite(data).all():
                # NaN and inf take slow paths in many kernels: the times would mislead.
                raise ProfileError("data '%s' for variable '%s' contains NaN or infinite values" % (data_name, pv.name))
            let_data(var, data, data_name, pv.name)  # once untimed: checks shapes, one clear error

            def assign(v=var, d=data, n=data_name, vn=pv.name) -> None:
                let_data(v, d, n, vn)

            items.append(Probe(simple("let_data (%s to %s)" % (data_name, pv.name), "let_data"), assign))
        for pv, generator in generator_assign.items():
            var = pv.variable_instance

            def generate(v=var, g=generator, vn=pv.name):
                let_data(v, g(v.shape), "generator", vn)

            items.append(Probe(simple("generate_data (%s)" % pv.name, "generate_data"), generate))
        return items

    def _setup(self, layers: List[Layer]) -> List[Item]:
        def setup(f) -> Callable[[], None]:
            inputs, outputs = f.inputs, f.outputs  # once, as nnabla_cli profile does: not timed
            return lambda: f.setup(inputs, outputs)

        return [Probe(layer_entry(layer, "setup_function"), setup(layer.function), layer=True) for layer in layers]

    def _layer_work(self, phase: str, order: List[Optional[Layer]], run_pass, before=None) -> List[Item]:
        """Per-layer forward or backward entries, in the mode chosen."""
        if self.mode == "graph":
            return [
                PassProbe(
                    [layer_entry(l, phase) if l else None for l in order],
                    run_pass,
                    before,
                    timeline=self.timeline,
                    phase="forward" if phase == FORWARD else "backward",
                    names=[l.name if l else None for l in order],
                    details=[l.trace_args("forward" if phase == FORWARD else "backward") if l else None for l in order],
                )
            ]
        items: List[Item] = []
        for layer in only_layers(order):
            f = layer.function
            # The variable lists are built once (NNabla makes new ones at every f.inputs), as
            # nnabla_cli profile does: their making is not the layer's time.
            if phase == FORWARD:
                work = functools.partial(f.forward, f.inputs, f.outputs)
            else:
                work = functools.partial(f.backward, f.inputs, f.outputs)
            items.append(Probe(layer_entry(layer, phase), work, layer=True))
        return items

    def optimizer_items(self, optimizer, source, first: FirstStep, in_passes: Optional[str] = None) -> List[Item]:
        """A training section's items in NNC's order; ``in_passes``: its layers are timed inside its whole passes
        (``nnprofile.measure.economy``), and those passes are forward_all's and backward_all's samples."""
        o = optimizer
        items = self._inputs(source, o.dataset_assign, o.generator_assign)
        loss_grad = 1.0 / o.loss_variables[0].variable_instance.size

        def forward_all(pre=None, post=None):
            o.target.forward(clear_no_need_grad=True, function_pre_hook=pre, function_post_hook=post)

        def backward_all(pre=None, post=None):
            o.target.backward(grad=loss_grad, clear_buffer=True, function_pre_hook=pre, function_post_hook=post)

        # Each backward run follows a forward pass, as in training: that pass is timed as a sample of
        # forward_all, which then needs no runs of its own.
        whole_forward = Probe(simple("forward_all", "forward_all"), forward_all)
        whole_forward.feeds()
        if in_passes:
            whole_backward = Probe(simple("backward_all", "backward_all"), backward_all)
            whole_backward.feeds()
        else:
            whole_backward = Probe(simple("backward_all", "backward_all"), backward_all, before_probe=whole_forward)
        if self.layers:
            index = LayerIndex(layer_names(o.network), parameters())
            forward_order, backward_order = index.order(first.forward), index.order(first.backward)
            items += self._setup(only_layers(forward_order))
            if in_passes:
                items += self._in_passes(FORWARD, forward_order, forward_all, whole_forward, first.forward_ns)
            else:
                items += self._training_refresh(o, loss_grad)
                items += self._layer_work(FORWARD, forward_order, forward_all)
        # NNabla's training loop zeroes the gradients between forward and backward.
        items.append(Probe(simple("prepare_backward", "prepare_backward"), o.solver.zero_grad))
        settling = None
        if self.layers and in_passes:
            refed = (lambda: forward_all(), first.forward_ns)
            items += self._in_passes(BACKWARD, backward_order, backward_all, whole_backward, first.backward_ns, refed)
        elif self.layers:
            items += self._layer_work(BACKWARD, backward_order, backward_all, before=forward_all)
            if self.mode != "graph":
                # Lean rounds hold the layer entries in some rounds only. The refresh keeps every
                # buffer alive, and the first clearing pass after it reads 10 to 20% slow: one
                # untimed step after the layers leaves the whole passes of a layer round measured
                # as those of the other rounds.
                settling = Action(
                    lambda: (forward_all(), backward_all()), layer=True, lean_only=True, costs_as=whole_backward
                )  # a forward and a backward pass, untimed
                items.append(settling)
        items += [whole_forward, whole_backward]
        if self.layers:  # a variant of backward_all, not part of the step: sampled with the layer entries
            known = (first.backward_ns, first.step_ns) if in_passes else None
            items.append(_zeroing_backward(o, backward_all, whole_forward, known))
        return items + self._solver_items(o)

    def _training_refresh(self, o, loss_grad) -> List[Item]:
        def refresh():
            # The whole passes clear buffers (and setup may reallocate them): the
            # per-layer runs of every round start from a real forward and backward.
            o.target.forward(clear_no_need_grad=False)
            o.target.backward(grad=loss_grad, clear_buffer=False)

        return [Action(refresh, layer=True)]

    def _in_passes(
        self,
        phase: str,
        order: List[Optional[Layer]],
        run_pass,
        whole: Probe,
        estimate_ns: float,
        between: Optional[Tuple[Callable[[], object], float]] = None,
    ) -> List[Item]:
        """Each layer timed inside the section's hooked passes (what the hooks add inside a function measured once
        for the run); ``whole`` sampled by a pass run without hooks before each hooked one."""
        if self.hooks is None:
            from .graph_mode import calibrate_hooks

            self.hooks = calibrate_hooks(self.timer)
            self.timer.hook_inside_ns = self.hooks[1]
        direction = "forward" if phase == FORWARD else "backward"
        return [
            PassProbe(
                [layer_entry(l, phase) if l else None for l in order],
                run_pass,
                None,
                timeline=self.timeline,
                phase=direction,
                names=[l.name if l else None for l in order],
                details=[l.trace_args(direction) if l else None for l in order],
                whole=whole,
                between=between[0] if between else None,
                between_ns=between[1] if between else 0.0,
                estimate_ns=estimate_ns,
            )
        ]

    def _solver_items(self, o) -> List[Item]:
        items: List[Item] = []
        solver = o.solver.name
        snapshot = SolverSnapshot(o.solver, o.parameters)
        if o.weight_decay > 0:
            items.append(
                Probe(
                    simple("weight_decay (%s)" % solver, "weight_decay"),
                    lambda: o.solver.weight_decay(o.weight_decay),
                    after=snapshot.restore,
                )
            )
        # Every timed update starts from the same weights and solver state.
        items.append(Probe(simple("update (%s)" % solver, "update"), o.solver.update, after=snapshot.restore))
        losses = [loss.variable_instance for loss in o.loss_variables]

        def monitor_loss():
            for v in losses:
                np.mean(v.d)

        items.append(Probe(simple("monitor_loss", "monitor_loss"), monitor_loss))
        return items

    def executor_items(self, executor, source, first: FirstStep, in_passes: Optional[str] = None) -> List[Item]:
        e = executor
        items = self._inputs(source, e.dataset_assign, e.generator_assign)

        def forward_all(pre=None, post=None):
            e.forward_target.forward(clear_buffer=True, function_pre_hook=pre, function_post_hook=post)

        whole = Probe(simple("forward_all", "forward_all"), forward_all)
        if self.layers:
            index = LayerIndex(layer_names(e.network), parameters())
            order = index.order(first.forward)
            items += self._setup(only_layers(order))
            if in_passes:
                whole.feeds()
                items += self._in_passes(FORWARD, order, forward_all, whole, first.forward_ns)
            else:
                items.append(Action(lambda: e.forward_target.forward(clear_no_need_grad=False), layer=True))
                items += self._layer_work(FORWARD, order, forward_all)
        items.append(whole)
        return items

    # -- memory ------------------------------------------------------------------

    def memory_estimate(self, section: Section, target, network, solver=None, parameters_by_name=None) -> None:
        """The step's memory as estimated from the graph, before anything runs (so that running
        out of memory can be explained with it)."""
        functions: List[Any] = []
        target.visit(functions.append)
        functions = [f for f in functions if not is_sink(f)]
        known = parameters()
        index = LayerIndex(layer_names(network), known)
        layers = [index.layer(f) for f in functions]
        describer = index.describer
        if parameters_by_name is not None:
            params = [describer.variable(v).id for v in parameters_by_name.values()]
        else:  # an executor: the parameters its functions read
            params = list(
                {v: None for layer in layers for v in layer.info.inputs if describer.graph().variables[v].parameter}
            )
        itemsize = layers[-1].itemsize if layers else 4
        training = solver is not None
        section.memory = buffers.step_memory(
            [layer.info for layer in layers],
            describer.graph(),
            [layer.name for layer in layers],
            params,
            itemsize,
            training,
            buffers.solver_state_bytes(solver) if training else 0,
        )

    def memory_reader(self) -> Callable[[Callable[[Any], None]], Tuple[Optional[int], str]]:
        """How a step's peak memory is read: the device's (NVML) on a GPU, else the allocator's."""
        device = None
        if self.backend is not None and self.backend[0] != "cpu":
            device = peak.device_reader(*self.backend)
        if device is not None:
            return lambda run_step: peak.measure_device_step(run_step, device[0], device[1], self.timer.sync)
        if self.backend is not None and self.backend[0] != "cpu":
            return lambda run_step: (None, "not measured: the GPU's memory could not be read (NVML)")
        return peak.measure_step

    def first_step(self, section: Section, forward, backward=None, update=None) -> FirstStep:
        """The section's first step (``nnprofile.measure.economy``): its memory, its passes' order and cost; and
        whether its layers are timed inside its whole passes (said in ``section.info``)."""
        first = run_first_step(self.timer.clock.now_ns, forward, backward, update, self.memory_reader())
        section.memory.peak_measured, section.memory.measured = first.grown, first.how
        sampling = self.timer.sampling
        reason = None
        if self.layers and self.mode == "isolated" and sampling.adaptive:
            reason = in_passes(first, backward is not None, sampling.min_rounds, sampling.max_seconds)
        if reason:
            section.info.layers_in_passes = reason
        return first

    def load_burst(self, section: Section, source) -> None:
        """load_dataset as nnabla_cli profile times it, beside nnprofile's own figure: reads in a row, nothing
        between them (``BURST_READS``, or as many as ``BURST_SECONDS`` allow), after a pass through the dataset
        (nnabla_cli reads for a second: mostly from the iterator's memory cache), so that the loader's own pace
        shows; nnprofile's entry is a read with the rest of the step between reads, as training's first reads."""
        clock, overhead = self.timer.clock, self.timer.overhead_ns
        times: List[float] = []
        start = clock.now_ns()
        epoch = getattr(source, "epoch_reads", lambda: 0)()
        skipped = 0  # first, through the dataset once: nnabla_cli reads for a second, mostly from the memory cache
        while skipped < epoch and clock.now_ns() - start < BURST_SECONDS * 1e9 / 2:
            source.next()
            skipped += 1
        while len(times) < BURST_READS and clock.now_ns() - start < BURST_SECONDS * 1e9:
            t0 = clock.now_ns()
            source.next()
            times.append(max(0.0, clock.now_ns() - t0 - overhead))
        if times:
            section.info.load_dataset_burst = LoadBurst(round(sum(times) / len(times) / 1e6, 6), len(times), skipped)

    # -- sections ---------------------------------------------------------------

    def profile_optimizer(self, section: Section, optimizer, source) -> Drift:
        o = optimizer
        self.timeline.section = section.title
        snapshot = SolverSnapshot(o.solver, o.parameters)
        self.memory_estimate(section, o.target, o.network, o.solver, o.parameters)
        loss_grad = 1.0 / o.loss_variables[0].variable_instance.size

        def backward(pre, post):
            o.solver.zero_grad()
            o.target.backward(grad=loss_grad, clear_buffer=True, function_pre_hook=pre, function_post_hook=post)

        try:
            first = self.first_step(
                section,
                lambda pre, post: o.target.forward(
                    clear_no_need_grad=True, function_pre_hook=pre, function_post_hook=post
                ),
                backward,
                o.solver.update,
            )
            snapshot.restore()
            items = self.optimizer_items(o, source, first, section.info.layers_in_passes)
            drift = self.runner.run(section, items)
            self.load_burst(section, source)
            section.complete = True
            return drift
        finally:
            snapshot.restore()  # later sections see the parameters (and solver state) as loaded

    def profile_executor(self, section: Section, executor, source) -> Drift:
        e = executor
        self.timeline.section = section.title
        self.memory_estimate(section, e.forward_target, e.network)
        first = self.first_step(
            section,
            lambda pre, post: e.forward_target.forward(
                clear_buffer=True, function_pre_hook=pre, function_post_hook=post
            ),
        )
        drift = self.runner.run(section, self.executor_items(e, source, first, section.info.layers_in_passes))
        self.load_burst(section, source)
        section.complete = True
        return drift


def _zeroing_backward(o: Any, backward_all: Callable[[], None], whole_forward: Probe, known: Any) -> Probe:
    """backward_all with the parameters' gradients zeroed first, as NNC's log times it (``backward_all(wo param
    zero_grad)``): a variant, not part of the step, sampled with the layer entries."""
    params = [p for name, p in o.parameters.items() if name[-2:] in ("/W", "/b")]

    def backward_all_zeroing() -> None:
        for p in params:
            p.grad.zero()
        backward_all()

    return Probe(
        simple("backward_all(wo param zero_grad)", "backward_all_wo_zero_grad"),
        backward_all_zeroing,
        before_probe=whole_forward,
        layer=True,
        known=known,
    )
