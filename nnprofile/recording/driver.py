"""A program's recording driven from the recorder's start to each window's profile.

``ProgramRun`` makes the recorder (and makes it again to measure what the hooks cost, before the program
runs and at its end), and makes each window's profile, or the run's, from what the recorder holds
(``profiling.program_profile``), the hooks' cost per function signature measured once each as the
captures show them. What the run does around that, its folder's lock, its signals, writing each window's
files and merging the ranks, is the API's (``nnprofile.api.programs.Recording``).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

from ..base.hookcost import KINDS
from ..base.quiet import quiet_nnabla
from ..result import Profile
from ..result.notes import Note
from .launcher import World
from .recorder import Recorder
from .schedule import Schedule


# The share of the first measurement of the hooks' cost that other work may take (the thread waiting for a CPU)
# before it is measured again at the end, the smaller figure kept.
DISTURBED = 0.01


class ProgramRun:
    """The recorder of one program's run, what its hooks cost, and the profiles made from it."""

    def __init__(
        self,
        name: str,
        command: str,
        schedule: Schedule,
        world: Optional[World],
        hook_costs: Optional[Any],
        new_recorder: Callable[[], Recorder],
    ) -> None:
        """``new_recorder``: a recorder as the run wants it (its clock, probe, namespaces, window callback), made
        anew to measure what the hooks cost."""
        self.name, self.command, self.schedule, self.world = name, command, schedule, world
        self.new_recorder = new_recorder
        self.hook_costs = hook_costs  # what the hooks cost (``nnprofile.base.hookcost.HookCosts``): given, or measured
        self.measure_again = hook_costs is None  # measured here: again at the end where disturbed
        self.recorder = self.new_recorder()
        self.capture: Optional[Any] = None  # the last profile's recording as data (``assembly.events.Capture``)
        self.origin_ns = 0  # the recorder's clock at the last window's first kept step
        self.started_unix = 0.0
        # nnprofile's own work outside the program's calls, in s by kind (``calibration``, ``replicas``,
        # ``machine``, ``windows``): what the run costs beyond the program, said in the log's About this run.
        self.own_cost: Dict[str, float] = {}
        self.disturbed = True  # whether other work took the CPU while the hooks' cost was first measured

    @contextlib.contextmanager
    def spent(self, kind: str) -> Iterator[None]:
        """Time what is done inside as nnprofile's own work of ``kind`` (the wall clock: what the run waits)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.own_cost[kind] = self.own_cost.get(kind, 0.0) + time.perf_counter() - start

    def calibrate(self) -> None:
        """What the hooks cost, measured before the program runs (where not given)."""
        from .calibrate import calibrate

        if self.hook_costs is None:
            probe = self.recorder.cpu.probe
            waited = probe.waited_ns()
            with quiet_nnabla(), self.spent("calibration"):
                start = time.perf_counter_ns()
                self.hook_costs = calibrate(self.new_recorder, kinds=("static",))  # the others once called
                took = time.perf_counter_ns() - start
            after = probe.waited_ns()
            # Measured again at the end only where other work took more than DISTURBED of it (or the kernel
            # does not say): on a quiet machine the second measurement, the run's largest cost, moves nothing.
            self.disturbed = waited is None or after is None or after - waited > DISTURBED * took

    def calibrate_again(self) -> None:
        """At the end of a run that recorded: measured again, the smaller of the two kept (the machine as it was
        then may have been busier)."""
        from ..base.hookcost import smaller
        from .calibrate import calibrate

        r = self.recorder
        if self.measure_again and self.hook_costs is not None and r.window.events and not r.shared:
            if not self.disturbed:
                return
            with quiet_nnabla(), self.spent("calibration"):
                self.hook_costs = smaller(self.hook_costs, calibrate(self.new_recorder, kinds=self.hook_costs.kinds))

    def _calls_measured(self, recorder: Recorder) -> None:
        """The hooks' cost of the kinds of call the recording holds and no calibration measured yet (auto_forward's
        and eager calls cost the most to measure: only a program that makes them waits for it)."""
        from ..assembly.events import Call
        from ..base.hookcost import joined
        from .calibrate import calibrate

        costs = self.hook_costs
        if costs is None:
            return
        made = {e.kind for e in recorder.window.events if isinstance(e, Call)}
        new = [k for k in KINDS if k in made and k not in costs.kinds]
        if new:
            with quiet_nnabla(), self.spent("calibration"):
                self.hook_costs = joined(costs, calibrate(self.new_recorder, kinds=new))

    def run_world(self) -> Optional[World]:
        """The launcher's world, else the one the program's communicator told when it was initialised."""
        if self.world is not None:
            return self.world
        rank = self.recorder.solver_calls.comm_rank
        if rank is not None and rank[1] > 1:
            return World(rank[0], rank[1], "communicator")
        return None

    def profile(
        self,
        failure: Optional[str],
        missed: Sequence[Note] = (),
        recorder: Optional[Recorder] = None,
        measure: bool = True,
    ) -> Profile:
        """The profile of a window (or the run) so far (``profiling.program_profile``); its capture kept.
        ``missed``: windows whose files could not be written, said in this one's notes; ``measure``: the hooks' cost
        of the kinds of call the recording made measured where it was not yet (never from another thread)."""
        from .profiling import Run, program_profile

        assert self.hook_costs is not None  # measured on entry
        s = self.schedule
        run = Run(self.name, self.command, s, s.active, s.warmup, self.started_unix, list(missed), self.run_world())
        run.own_cost = self.own_cost
        shared = (recorder or self.recorder).shared  # (another thread runs functions: NNabla's hooks stay as they are)
        if measure and self.measure_again and not shared:  # (never while the program's hooks are on)
            self._calls_measured(recorder or self.recorder)
        made = program_profile(run, recorder or self.recorder, self.hook_costs, failure)
        self.capture, self.origin_ns = made.capture, made.origin_ns
        return made.profile
