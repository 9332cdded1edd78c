"""What other work on the machine took from the recorded program, as the recording reads it while it runs.

The kernel's accounting (``nnprofile.base.interference``): around every timed call, marks that tell whether the
call was held up (the thread's CPU time, short of its wall time where it was kept from running; on an asynchronous
device, whose waits are no CPU time, its involuntary context switches); around a wait (a read, a log), the
process's context switches (the loader thread it waits for among them); where a step may begin and as
nnprofile's own work ends, the time the thread has waited for a CPU so far (``readings``), from which the
assembly gives each step its share. A scripted clock (a test's) has no such accounting (``NoProbe``).
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from ..assembly.events import CPU, SWITCHES
from ..base.interference import Probe
from .faults import Faults


class CpuWaits:
    """The probe's readings for one recording: each call's marks, and the waits for a CPU as steps pass."""

    def __init__(self, probe: Any, clock: Callable[[], int], faults: Faults) -> None:
        self.probe = probe
        self.clock = clock
        self.faults = faults
        self.kind = CPU if probe.available else ""  # what a call's marks are: CPU, SWITCHES, or none
        self.mark: Callable[[], int] = probe.cpu_ns  # a call's mark now
        self.process_switches: Callable[[], int] = probe.process_switches  # a wait's mark now
        self.readings: List[Tuple[int, int, int]] = []  # (ns, waited ns, switches so far), in a window

    def in_this_thread(self) -> None:
        """The kernel's files are the thread's that opened them: opened again by the thread recorded."""
        if type(self.probe) is Probe:
            self.probe = Probe()
            self.mark, self.process_switches = self.probe.cpu_ns, self.probe.process_switches

    def on_async_device(self) -> None:
        """An asynchronous device (CUDA): its waits are no CPU time, so a call's marks are its context switches."""
        if self.kind:
            self.mark, self.kind = self.probe.switches, SWITCHES

    def waited_ns(self) -> int:
        """The time the thread has waited for a CPU so far (0 where the kernel does not say)."""
        try:
            return int(self.probe.waited_ns() or 0)
        except Exception:
            return 0

    def note(self, at_ns: Optional[int], begun: Optional[Tuple[int, int, int]] = None) -> int:
        """The time the thread has waited for a CPU so far (what other work took of each step), read where a step
        can begin (a call of the program's loop) and as nnprofile's own work ends. ``at_ns`` None: dated by the clock
        read after it (returned). ``begun``: read after a call that already ran (its start, and its marks): the
        reading is dated at its start, what the call was held up taken off, so that it falls on the step's bound
        as the assembly draws it."""
        try:
            waited = self.probe.waited_ns()
            switches = int(self.probe.switches()) if waited is not None else 0
        except Exception as e:
            self.faults.add("reading what other work took", e)
            waited = None
        if at_ns is None:
            at_ns = self.clock()
        if waited is None:
            return at_ns
        try:
            if begun is not None:
                at_ns, m0, _ = begun
                if self.kind == CPU:
                    waited -= max(0, (self.clock() - at_ns) - (self.mark() - m0))
            readings = self.readings
            if readings and at_ns <= readings[-1][0]:
                return at_ns  # readings go forward in time (each step's share is read between them)
            waited = max(int(waited), readings[-1][1] if readings else 0)
            readings.append((at_ns, waited, switches))
        except Exception as e:
            self.faults.add("reading what other work took", e)
        return at_ns
