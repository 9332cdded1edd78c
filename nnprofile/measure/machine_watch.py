"""What a project's measuring reads of the machine beside its entries: a fixed workload timed each round (the
machine's own speed, comparable between runs) and what other work took of a section (``Watch``)."""

from __future__ import annotations

from ..result import Interference, Section
from .timing import Timer


class Reference:
    """A fixed workload timed once per round: the machine's own speed, comparable between runs.

    Within a run, the rounds' levels tell a slow spell from the usual speed; a whole run
    inside a slow spell looks steady. This workload, the same in every run, lets
    ``nnprofile check`` tell a slower machine from a slower network: a small convolution
    and activation in NNabla (what most layers are like), on fixed data, in one fixed context (CPU, float).
    """

    def __init__(self, timer: Timer):
        import nnabla as nn
        import nnabla.functions as F
        import numpy as np
        from nnabla.ext_utils import get_extension_context

        self.timer = timer
        rng = np.random.RandomState(0)
        # One fixed context, whatever the profile's: on a CPU in single precision (a half-precision profile's
        # reference would be as slow as its network, and excuse it).
        with nn.context_scope(get_extension_context("cpu", type_config="float")):
            x = nn.Variable((8, 16, 16, 16))
            w = nn.Variable((16, 16, 3, 3))
            x.d, w.d = rng.rand(*x.shape), rng.rand(*w.shape) - 0.5
            self.output = F.relu(F.convolution(x, w, pad=(1, 1)))
        self.output.forward()

    def sample(self) -> float:
        """One timing of the workload (its data back in the caches, as the entries' are): by the thread's CPU time
        where known, so that a busy machine's other work does not read as a slower machine."""
        self.output.forward()
        cpu = self.timer.cpu
        if cpu is None:
            return float(self.timer.sample(self.output.forward, 2)) / 2
        c0 = cpu()
        self.output.forward()
        self.output.forward()
        return float(cpu() - c0) / 2


class Watch:
    """What other work took of a section's measuring: the thread's time waited for a CPU and its involuntary context
    switches, read as it begins and as it ends (``nnprofile.base.interference``)."""

    def __init__(self, timer: Timer):
        self.timer = timer
        probe = timer.probe
        self.start, self.waited, self.switches = timer.clock.now_ns(), probe.waited_ns(), probe.switches()

    def taken(self, section: Section) -> Interference:
        probe, timer = self.timer.probe, self.timer
        if timer.cpu is None:
            return Interference(measured=False)
        now, waited = timer.clock.now_ns(), probe.waited_ns()
        spoiled = sum(len(e.disturbed) for e in section.entries)
        samples = sum(len(e.samples_ns) for e in section.entries)
        taken = waited - self.waited if waited is not None and self.waited is not None else None
        return Interference(
            True,
            float(now - self.start),
            None if taken is None else float(taken),
            int(probe.switches() - self.switches),
            spoiled,
            samples,
        )
