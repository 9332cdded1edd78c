"""The recorder's count of the program's steps while it runs: where each step ends, to open and close windows.

The rule is the assembly's (``nnprofile.assembly.iterations``): a step is one iteration of the
program's loop, read off its code from the stacks of the calls that can begin one (its updates, reads,
passes, marks). The loop is chosen from the calls seen so far, and kept once a window has shown it;
between windows the light wrappers (a solver's update, a read) feed the same count.

Where no loop holds the program's calls (updates made one after the other outside any loop, a
recording without stacks), the steps are the repeating pattern of solver updates, marks or passes
(``nnprofile.assembly.steps.Loop``), as before; ``nnprofile.step()`` marks override both.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from ..assembly.steps import Loop, pattern
from .raw import device_sync

# Without a window open, steps are counted by the loop as it comes until it has shown this many updates
# (or marks); then by the pattern it showed, so that what is kept stays small over a run of any length.
FREEZE_AT = 64
MIN_READS = 2  # a loop without a solver counts its steps by its reads from its second read on


class Counting:
    """The counting part of ``Recorder`` (a mix-in: the state is the recorder's)."""

    _per_step: Optional[Tuple[str, int]]

    def _by_iterations(self: Any) -> bool:
        return self.counter.loop is not None and not self.loop.marks and not self._marked

    def _moved(self: Any, stack: Any, key: Optional[str], since: Optional[int] = None) -> None:
        """A call of the program's that can begin a step, before it is recorded: fed to the count of the
        loop's iterations; a step that ended is followed by the schedule, its work (from ``since``, the
        clock's last reading) set aside as nnprofile's own."""
        if not stack:
            return
        self.counter.feed(stack, key)
        if self._by_iterations():
            steps = self._counter_base + self.counter.completed
            if steps > self.steps_done:
                t0 = self.clock() if since is None else since
                self.steps_done = steps
                self._step_ended()
                if self.capturing:
                    self.excluded.append((t0, self.clock()))

    def _count_steps(self: Any) -> None:
        """A program whose passes are its steps (no solver, no loop found): counted as each pass starts."""
        if self._by_iterations():
            return
        before = self.steps_done
        self.steps_done = max(before, self._base + self.loop.steps())
        if self.steps_done != before:
            self._step_ended()

    def _count_at_end(self: Any) -> None:
        """At an update or a mark: under the pattern rule, count the steps (the callers leave this work out
        of every step)."""
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
        if self._by_iterations():
            return
        before = self.steps_done
        self.steps_done = max(before, self._base + self.loop.steps())
        if self.steps_done != before:
            self._step_ended()

    def _light_step(self: Any, kind: str, solver: int) -> None:
        """An update (or a step mark) with no window open, under the pattern rule."""
        if self._by_iterations():
            return
        before = self.steps_done
        if self._per_step is None:  # no window has shown the loop yet: the solvers' updates as they come
            if kind == "updates":
                self.loop.hooks(False)
                self.loop.update(solver, 0)
            else:
                self.loop.mark(0)
            self.steps_done = max(before, self._base + self.loop.steps())
            if len(self.loop.segments) + len(self.loop.marks) >= FREEZE_AT:
                self._freeze()
        elif kind == self._per_step[0]:
            self._light += 1
            self.steps_done = self._base + self._light // self._per_step[1]
        if self.steps_done != before:
            self._step_ended()

    def counts_reads(self: Any) -> bool:
        """Whether the steps are counted by the iterators' reads now (no window open, the pattern rule): in a
        loop without a solver or a step mark, before any window, or after windows that showed a fixed number
        a step."""
        if self._by_iterations():
            return False
        if self._per_step is None:
            return not self.solvers and not self.loop.segments and not self.loop.marks and len(self._reads) < FREEZE_AT
        return self._per_step[0] == "reads"

    def _light_read(self: Any, iterator: int) -> None:
        """An iterator's read with no window open, in a loop whose steps only passes show (pattern rule)."""
        before = self.steps_done
        if self._per_step is None:
            self._reads.append(iterator)
            found = pattern(self._reads) if len(self._reads) >= MIN_READS else None
            if found is not None:
                offset, period, _ = found
                self.steps_done = max(self.steps_done, self._base + max(0, len(self._reads) - offset - 1) // period)
                if len(self._reads) >= FREEZE_AT:
                    counted = self.steps_done - self._base
                    self._per_step, self._light = ("reads", period), len(self._reads) - offset - counted * period
                    self._base, self._reads = self.steps_done, []  # type: ignore[var-annotated]
        else:
            self._light += 1
            self.steps_done = self._base + max(0, self._light - 1) // self._per_step[1]
        if self.steps_done != before:
            self._step_ended()

    def _freeze(self: Any) -> None:
        """Count from here on by what the window showed: the loop's iterations where a loop was found; else
        by the pattern: updates (or marks) per step, and how many of the step under way are done."""
        if self.counter.loop is not None:
            self.counter.fix()
        rule = self.loop.rule()
        counted = self.loop.steps()
        if self._by_iterations():
            if not self.loop.segments and not self.loop.read_at and not self.solvers:
                self.countable = False  # its iterations show only in passes, which only the hooks see
        elif rule.kind == "updates":
            done = max(0, len(self.loop.segments) - rule.offset) - counted * rule.period
            self._per_step, self._light = ("updates", rule.period), max(0, done)
        elif rule.kind == "marks":
            self._per_step, self._light = ("marks", 1), 0
        elif rule.kind == "passes" and (reads := self.loop.reads_per_step(rule)):
            self._per_step, self._light = ("reads", reads), self.loop.reads_after(rule)
        elif self.counter.loop is None:
            self.countable = False
        self._base += counted
        self.loop = Loop()
