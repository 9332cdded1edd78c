"""The pass under way, as the function hooks and the calls run under auto_forward see it begin and end.

A static graph's pass is the run of functions one call site (``forward``/``backward`` at one instruction of the
program) runs: a function from another site, or one the pass ran already, begins the next. A run of functions made
under auto_forward is a pass too, begun where the program's own code ran long between them or another line of the
loop builds. Each pass that ends is told to the loop's structure (``assembly.steps.Loop``), with its phase and what
it ran on; the steps are found from those afterwards. ``PassTracker`` owns that state; it reaches the recording
through ``parts.PassHost``.
"""

from __future__ import annotations

from typing import Any, Dict, Set, Tuple

from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at
from .parts import PassHost


class PassTracker:
    """The pass under way (its call site, its functions, its first and last, when it began) and the sites seen."""

    def __init__(self, host: PassHost) -> None:
        self.host = host
        self.site: Any = None  # the call site of the static pass under way (None: none)
        self.functions: Set[Any] = set()
        self.first: Any = None
        self.last: Any = None
        self.start = 0
        self.dynamic = False  # a run of functions made under auto_forward is under way
        self.dynamic_place: Any = None  # where in the loop's body that run is built
        self.recent_dynamic: Set[Any] = set()  # functions made under auto_forward since the last update
        self.site_phases: Dict[Any, str] = {}  # the call sites of passes seen: (code, instruction) -> phase

    def static_function(self, f: Any, site: Any, start: int) -> bool:
        """A static graph's function ``f`` ran from ``site``: whether it begins a new pass (the last one closed)."""
        if site != self.site or f in self.functions:
            self.close()
            self.site, self.functions, self.first, self.start, self.last = site, {f}, f, start, f
            return True
        self.functions.add(f)
        self.last = f
        return False

    def dynamic_begins(self, place: Any, entered: int, frame: Any, t0: int, begun: Tuple[int, int, int]) -> Any:
        """A run of functions made under auto_forward begins at ``place`` (the pass before it closed), its first
        function entered at ``entered`` (``begun``: its start and marks) from ``frame``: the loop's structure told,
        the step count moved on; returns the stack the pass began at."""
        host = self.host
        self.close()
        self.dynamic, self.dynamic_place = True, place
        host.solver_calls.check_subclasses()
        host.loop.pass_started("forward", None, "auto_forward", entered)
        stack = host.steps.take(frame)
        host.steps.moved(stack, "other", t0, frame, begun=begun)
        if not host.solvers and not host.loop.marks:
            host.steps.count_passes()
        return stack

    def phase(self, site: Any) -> str:
        phase = self.site_phases.get(site)
        if phase is None:
            method, _ = call_at(site[0], site[1], FORWARD_NAMES + BACKWARD_NAMES)
            phase = self.site_phases[site] = "backward" if method in BACKWARD_NAMES else "forward"
        return phase

    def close(self) -> None:
        """The pass that just ended, to the loop's structure (its graph: what it ran on)."""
        host = self.host
        if self.site is not None:
            phase = self.phase(self.site)
            root = self.first if phase == "backward" else self.last
            graph = ("auto_forward", self.site) if root in self.recent_dynamic else ("static", root)
            host.loop.pass_started(phase, graph, self.site, self.start)
            self.site = None
            if not host.solvers and not host.loop.marks:  # a program without a solver: passes mark its steps
                host.steps.count_passes()
        self.dynamic = False
        host.builds.ended()

    def updated(self) -> None:
        """A solver's update ended: auto_forward's graphs begin anew."""
        self.recent_dynamic = set()
