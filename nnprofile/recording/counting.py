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

from ..assembly.iterations import INSIDE, ITERATION, RUN, Counter
from ..assembly.steps import Loop, pattern
from . import importlock
from .raw import device_sync

# Without a window open, steps are counted by the loop as it comes until it has shown this many updates
# (or marks); then by the pattern it showed, so that what is kept stays small over a run of any length.
FREEZE_AT = 64
WATCH_EVERY = 16  # steps between the watcher's looks (a window asked for from outside) between windows
RECHECK = 8  # steps between looks at whether the updates alone can count the steps
OUTSIDE_KEPT = 64  # the calls outside the loop kept, to choose the next loop from
LEFT_LOOP = 3  # updates in a row outside the loop kept (passes, without a solver): the loop is chosen again
MIN_READS = 2  # a loop without a solver counts its steps by its reads from its second read on


class Counting:
    """The counting part of ``Recorder`` (a mix-in: the state is the recorder's)."""

    _per_step: Optional[Tuple[str, int]]

    def _by_iterations(self: Any) -> bool:
        return self.counter.loop is not None and not self.loop.marks and not self._marked

    def _take(self: Any, frame: Any) -> Any:
        """The program's stack at a call, where the recording keeps it or the loop is still being chosen; between
        windows, once the loop is known, none is taken (``_moved`` reads the loop's frame alone)."""
        if self.capturing or not self.counter.fixed or not self.frame_loop:
            return self.stacks.take(frame)
        return None

    def _moved(
        self: Any,
        stack: Any,
        key: Optional[str],
        since: Optional[int] = None,
        frame: Any = None,
        begun: Optional[Tuple[int, int, int]] = None,
    ) -> None:
        """A call of the program's that can begin a step, before it is recorded: fed to the count of the
        loop's iterations; a step that ended is followed by the schedule, its work (from ``since``, the
        clock's last reading) set aside as nnprofile's own. Once the loop is known, its iterations are counted
        from its own frame (``FastLoop``); the stack, where taken, is for the recording only."""
        counter = self.counter
        if self.capturing and (since is not None or begun is not None):  # where a step may begin: the wait so far
            self.cpu.note(since if begun is None else begun[0], begun)
        if not self.hooks_on and self.capturing and frame is not None:
            self.past_the_loop(frame)
        if counter.fixed and self.frame_loop and frame is not None:
            counter.moved(self.frame_loop.event(frame), key)
        elif not stack:
            return
        else:
            counter.feed(stack, key)
            if counter.fixed and self.frame_loop is None:  # the loop was kept as found: counted from its frame now
                self.frame_loop = FastLoop.of(counter, self.stacks) or False
        if counter.fixed:
            self._follow(stack, frame, key)
        if self._by_iterations():
            steps = self._counter_base + self.counter.completed
            if steps > self.steps_done:
                t0 = self.clock() if since is None else since
                self.steps_done = steps
                self._step_ended()
                if self.capturing:
                    self._aside(t0)

    def _follow(self: Any, stack: Any, frame: Any, key: Optional[str]) -> None:
        """A call, the loop kept: outside it, its stack is kept (a few); where the program's updates (its passes,
        without a solver) go on outside it, the program moved on to another loop (a second stage, a fine-tuning):
        the loop is chosen again, from the calls made since it left the old one, the steps counted so far kept."""
        if self.counter.inside:
            if self._updates_outside or self._outside:
                self._updates_outside, self._outside = 0, []
            return
        if len(self._outside) < OUTSIDE_KEPT:
            self._outside.append((stack or self.stacks.take(frame), key))
        if key == "update" or (key == "other" and not self.solvers):
            self._updates_outside += 1
            if self._updates_outside >= LEFT_LOOP:
                calls, self._outside, self._updates_outside = self._outside, [], 0
                self._counter_base = self.steps_done
                self.counter = Counter(self.stacks.codes, expects_updates=bool(self.solvers))
                self.frame_loop, self.by_frame_only = None, False
                for s, k in calls:
                    self.counter.feed(s, k)

    # -- the wrappers between windows: only those that count the steps --------------------------------------

    def _sync_wrappers(self: Any) -> None:
        """Between windows, the monitors' wrappers are off, and the iterators' too where the updates alone count
        the steps (every iteration of the loop kept has one) and no window is near: the program's reads then
        run as NNabla's own. Both are on again a step before a window begins (or when one is asked for)."""
        if self.recording:  # (once stopped, every original is back)
            self.toggles.set("monitors", self.capturing)
        if self._import_locks is not None:
            importlock.stacked(self.capturing)
        w = self.windows
        near = self._asked or w.queued or (w.next_start is not None and self.steps_done + 1 >= w.next_start)
        by_updates = (
            bool(self.frame_loop) and bool(self.solvers) and self._by_iterations() and self.counter.updates_show_it
        )
        if self.recording:
            self.toggles.set("reads", self.capturing or near or not by_updates)
        self.by_frame_only = bool(self.frame_loop) and self._by_iterations() and not self.capturing and self.recording

    def lean_update(self: Any, frame: Any) -> None:
        """A solver's update between windows, the loop known (``lean``): its iteration counted from the loop's
        frame, and nothing else (``_moved``'s work for an update, in the fewest steps)."""
        counter = self.counter
        counter.moved(self.frame_loop.event(frame), "update")
        if not counter.inside or self._updates_outside or self._outside:
            self._follow(None, frame, "update")
        steps = self._counter_base + self.counter.completed
        if steps > self.steps_done and self._by_iterations():
            self.steps_done = steps
            self._step_ended(late=True)

    def _next_due(self: Any) -> int:
        """Between windows, the step count at which a step's end next has something to do: the window a step
        ahead, the watcher's turn, the wrappers' choice while it can still change (checked every few steps)."""
        due = []
        w = self.windows
        if w.next_start is not None and w.more():
            due.append(w.next_start - 1)
        if self.watch is not None:
            due.append(self.steps_done - self.steps_done % WATCH_EVERY + WATCH_EVERY)
        if self.toggles.is_on("reads"):
            due.append(self.steps_done + RECHECK)
        return min(due) if due else 1 << 62

    def _count_steps(self: Any) -> None:
        """A program whose passes are its steps (no solver, no loop found): counted as each pass starts."""
        if self._by_iterations():
            return
        before = self.steps_done
        self.steps_done = max(before, self._steps_before + self.loop.steps())
        if self.steps_done != before:
            self._step_ended()

    def _count_at_end(self: Any) -> None:
        """At an update or a mark: under the pattern rule, count the steps (the callers leave this work out
        of every step)."""
        if not self._sync_known:
            self.sync, self._sync_known = device_sync(), True
            if self.sync is not None:  # an asynchronous device: its waits are no CPU time
                self.cpu.on_async_device()
                self._mark = self.cpu.mark
        if self._by_iterations():
            return
        before = self.steps_done
        self.steps_done = max(before, self._steps_before + self.loop.steps())
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
            self.steps_done = max(before, self._steps_before + self.loop.steps())
            if len(self.loop.segments) + len(self.loop.marks) >= FREEZE_AT:
                self._freeze()
        elif kind == self._per_step[0]:
            self._counted_since += 1
            self.steps_done = self._steps_before + self._counted_since // self._per_step[1]
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
                self.steps_done = max(
                    self.steps_done, self._steps_before + max(0, len(self._reads) - offset - 1) // period
                )
                if len(self._reads) >= FREEZE_AT:
                    counted = self.steps_done - self._steps_before
                    self._per_step, self._counted_since = (
                        ("reads", period),
                        len(self._reads) - offset - counted * period,
                    )
                    self._steps_before, self._reads = self.steps_done, []  # type: ignore[var-annotated]
        else:
            self._counted_since += 1
            self.steps_done = self._steps_before + max(0, self._counted_since - 1) // self._per_step[1]
        if self.steps_done != before:
            self._step_ended()

    def _freeze(self: Any) -> None:
        """Count from here on by what the window showed: the loop's iterations where a loop was found; else
        by the pattern: updates (or marks) per step, and how many of the step under way are done."""
        if self.counter.loop is not None:
            self.counter.fix()
            self.frame_loop = FastLoop.of(self.counter, self.stacks) or False
        rule = self.loop.rule()
        counted = self.loop.steps()
        if self._by_iterations():
            if not self.loop.segments and not self.loop.read_at and not self.solvers:
                self.countable = False  # its iterations show only in passes, which only the hooks see
        elif rule.kind == "updates":
            done = max(0, len(self.loop.segments) - rule.offset) - counted * rule.period
            self._per_step, self._counted_since = ("updates", rule.period), max(0, done)
        elif rule.kind == "marks":
            self._per_step, self._counted_since = ("marks", 1), 0
        elif rule.kind == "passes" and (reads := self.loop.reads_per_step(rule)):
            self._per_step, self._counted_since = ("reads", reads), self.loop.reads_after(rule)
        elif self.counter.loop is None:
            self.countable = False
        self._steps_before += counted
        self.loop = Loop()


class FastLoop:
    """The iterations of a known loop counted from the loop's own frame: the frame running the loop's code, the
    instruction it is at, and which call below it the program is in; a few attribute reads a call, where taking
    the whole stack costs microseconds (between windows only the light wrappers run, and only this)."""

    def __init__(self, code: Any, loops: Any, head: int):
        self.code = code  # the code object holding the loop
        self.loops = loops  # its CodeInfo (loops by offset)
        self.head = head
        self.end = next((e for h, e in loops.loops if h == head), head)
        self.frame: Any = None  # the loop's frame at the last call inside it (None: outside)
        self.lasti = -1
        self.child: Any = None  # the frame below it the last call was made in (None: made there)

    @classmethod
    def of(cls, counter: Any, stacks: Any) -> Optional["FastLoop"]:
        loop = counter.loop
        code = stacks.objects[loop[0]] if loop is not None and loop[0] < len(stacks.objects) else None
        if code is None:
            return None
        fast = cls(code, stacks.codes[loop[0]], loop[1])
        frames = stacks.held()
        for k, f in enumerate(frames):  # where the last stack was: the next call is compared with it
            if f.f_code is code and fast.head <= f.f_lasti <= fast.end:
                fast.frame, fast.lasti = f, f.f_lasti
                fast.child = frames[k + 1] if k + 1 < len(frames) else None
        return fast

    def _crossed(self, lo: int, hi: int) -> str:
        """What moving back between these offsets crossed: this loop (ITERATION), one around it (RUN), or one
        inside it (INSIDE)."""
        inner = self.loops.innermost(lo, hi)
        if inner is None or not (inner[0] <= self.head and self.end <= inner[1]):
            return INSIDE
        return ITERATION if inner == (self.head, self.end) else RUN

    def event(self, frame: Any) -> Optional[str]:
        """A call from ``frame``: what it begins in the loop (``nnprofile.assembly.iterations.entry``): RUN,
        ITERATION, INSIDE, or None outside the loop."""
        code, child, f = self.code, None, frame
        while f is not None and f.f_code is not code:
            child, f = f, f.f_back
        if f is None or not (self.head <= f.f_lasti <= self.end):
            self.frame = None
            return None
        lasti = f.f_lasti
        if self.frame is not f:  # entered, or the function holding the loop called anew
            begins = RUN
        elif lasti > self.lasti:
            begins = INSIDE
        elif lasti < self.lasti:
            begins = self._crossed(lasti, self.lasti)
        elif child is None or child is not self.child:  # the same instruction run again
            begins = self._crossed(lasti, lasti)
        else:  # within one call of what it called
            begins = INSIDE
        self.frame, self.lasti, self.child = f, lasti, child
        return begins
