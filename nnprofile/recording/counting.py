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

from typing import Any, List, Optional, Tuple

from ..assembly.iterations import INSIDE, ITERATION, RUN, Counter
from ..assembly.steps import Loop, pattern
from .parts import CountingHost

# Without a window open, steps are counted by the loop as it comes until it has shown this many updates
# (or marks); then by the pattern it showed, so that what is kept stays small over a run of any length.
FREEZE_AT = 64
WATCH_EVERY = 16  # steps between the watcher's looks (a window asked for from outside) between windows
RECHECK = 8  # steps between looks at whether the updates alone can count the steps
OUTSIDE_KEPT = 64  # the calls outside the loop kept, to choose the next loop from
LEFT_LOOP = 3  # updates in a row outside the loop kept (passes, without a solver): the loop is chosen again
MIN_READS = 2  # a loop without a solver counts its steps by its reads from its second read on


class StepCount:
    """The live count of the program's steps (``done``), and what it is counted by: the loop's iterations
    (``counter``, from its frame once known: ``frame_loop``), else the pattern its updates, marks or reads showed
    (``per_step``). It tells the recording (``host``) each step that ends."""

    def __init__(self, host: CountingHost) -> None:
        self.host = host
        self.done = 0  # steps counted so far
        self.counter = Counter(host.stacks.codes)
        # the loop's iterations counted from its own frame, once the loop is known (a FastLoop; False: it cannot be;
        # read on the hot path as it is, its kind known by the count's state: Any)
        self.frame_loop: Any = None
        self.by_frame_only = False  # between windows, the loop known: updates counted by its frame alone
        self.marked = False  # the program marks its steps (nnprofile.step())
        self.countable = True  # False: steps show only as passes, which only the hooks see
        self.counter_base = 0  # steps counted before the count of iterations began
        self.updates_outside = 0  # updates in a row outside the loop kept
        self.outside: List[Tuple[Any, Optional[str]]] = []  # the calls since the program left it (stack, key)
        self.steps_before = 0  # steps counted before the loop now followed began
        self.per_step: Optional[Tuple[str, int]] = None  # counting without the hooks: (updates|marks|reads, per step)
        self.counted_since = 0  # updates (or marks, or reads) since then
        self.reads: List[int] = []  # before any window, in a program without a solver: the iterators read

    def by_iterations(self) -> bool:
        return self.counter.loop is not None and not self.host.loop.marks and not self.marked

    def take(self, frame: Any) -> Any:
        """The program's stack at a call, where the recording keeps it or the loop is still being chosen; between
        windows, once the loop is known, none is taken (``moved`` reads the loop's frame alone)."""
        if self.host.capturing or not self.counter.fixed or not self.frame_loop:
            return self.host.stacks.take(frame)
        return None

    def moved(
        self,
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
        counter, host = self.counter, self.host
        if host.capturing and (since is not None or begun is not None):  # where a step may begin: the wait so far
            host.cpu.note(since if begun is None else begun[0], begun)
        if counter.fixed and self.frame_loop and frame is not None:
            counter.moved(self.frame_loop.event(frame), key)
        elif not stack:
            return
        else:
            counter.feed(stack, key)
            if counter.fixed and self.frame_loop is None:  # the loop was kept as found: counted from its frame now
                self.frame_loop = FastLoop.of(counter, host.stacks) or False
        if counter.fixed:
            self._follow(stack, frame, key)
        if self.by_iterations():
            steps = self.counter_base + self.counter.completed
            if steps > self.done:
                t0 = host.clock() if since is None else since
                self.done = steps
                host.step_ended()
                if host.capturing:
                    host.aside(t0)
        # After the step it ended, if any: the call that ends the loop's last step (a read after the loop) has
        # the schedule's hooks switched for a next step that never comes; a call back in the loop, after work
        # between its runs that had them on again, has them off.
        if (not host.hooks_on or host.past) and host.capturing and frame is not None:
            host.past_the_loop(frame)

    def _follow(self, stack: Any, frame: Any, key: Optional[str]) -> None:
        """A call, the loop kept: outside it, its stack is kept (a few); where the program's updates (its passes,
        without a solver) go on outside it, the program moved on to another loop (a second stage, a fine-tuning):
        the loop is chosen again, from the calls made since it left the old one, the steps counted so far kept."""
        if self.counter.inside:
            if self.updates_outside or self.outside:
                self.updates_outside, self.outside = 0, []
            return
        if len(self.outside) < OUTSIDE_KEPT:
            self.outside.append((stack or self.host.stacks.take(frame), key))
        solvers = bool(self.host.solvers)
        if key == "update" or (key == "other" and not solvers):
            self.updates_outside += 1
            if self.updates_outside >= LEFT_LOOP:
                calls, self.outside, self.updates_outside = self.outside, [], 0
                self.counter_base = self.done
                self.counter = Counter(self.host.stacks.codes, expects_updates=solvers)
                self.frame_loop, self.by_frame_only = None, False
                for s, k in calls:
                    self.counter.feed(s, k)

    def lean_update(self, frame: Any) -> None:
        """A solver's update between windows, the loop known (``by_frame_only``): its iteration counted from the
        loop's frame, and nothing else (``moved``'s work for an update, in the fewest steps)."""
        counter = self.counter
        counter.moved(self.frame_loop.event(frame), "update")
        if not counter.inside or self.updates_outside or self.outside:
            self._follow(None, frame, "update")
        steps = self.counter_base + self.counter.completed
        if steps > self.done and self.by_iterations():
            self.done = steps
            self.host.step_ended(late=True)

    def traced(self, frame: Any) -> None:
        """A line of the loop run between windows, in a loop whose steps show only in its passes
        (``linecount.LineCount``): fed to the count of its iterations as a call is. Its header's line is not: it
        runs once more as the loop ends, where no call is made (each iteration begins at its body's first line)."""
        if frame.f_lasti <= self.frame_loop.head:
            return
        self.counter.moved(self.frame_loop.event(frame), "other")
        steps = self.counter_base + self.counter.completed
        if steps > self.done and self.by_iterations():
            self.done = steps
            self.host.step_ended()

    def count_passes(self) -> None:
        """A program whose passes are its steps (no solver, no loop found): counted as each pass starts; at an
        update or a mark, under the pattern rule, likewise (the callers leave this work out of every step)."""
        if self.by_iterations():
            return
        before = self.done
        self.done = max(before, self.steps_before + self.host.loop.steps())
        if self.done != before:
            self.host.step_ended()

    def light_step(self, kind: str, solver: int) -> None:
        """An update (or a step mark) with no window open, under the pattern rule."""
        if self.by_iterations():
            return
        before, loop = self.done, self.host.loop
        if self.per_step is None:  # no window has shown the loop yet: the solvers' updates as they come
            if kind == "updates":
                loop.hooks(False)
                loop.update(solver, 0)
            else:
                loop.mark(0)
            self.done = max(before, self.steps_before + loop.steps())
            if len(loop.segments) + len(loop.marks) >= FREEZE_AT:
                self.freeze()
        elif kind == self.per_step[0]:
            self.counted_since += 1
            self.done = self.steps_before + self.counted_since // self.per_step[1]
        if self.done != before:
            self.host.step_ended()

    def counts_reads(self) -> bool:
        """Whether the steps are counted by the iterators' reads now (no window open, the pattern rule): in a
        loop without a solver or a step mark, before any window, or after windows that showed a fixed number
        a step."""
        if self.by_iterations():
            return False
        if self.per_step is None:
            loop = self.host.loop
            return not self.host.solvers and not loop.segments and not loop.marks and len(self.reads) < FREEZE_AT
        return self.per_step[0] == "reads"

    def light_read(self, iterator: int) -> None:
        """An iterator's read with no window open, in a loop whose steps only passes show (pattern rule)."""
        before = self.done
        if self.per_step is None:
            self.reads.append(iterator)
            found = pattern(self.reads) if len(self.reads) >= MIN_READS else None
            if found is not None:
                offset, period, _ = found
                self.done = max(self.done, self.steps_before + max(0, len(self.reads) - offset - 1) // period)
                if len(self.reads) >= FREEZE_AT:
                    counted = self.done - self.steps_before
                    self.per_step = ("reads", period)
                    self.counted_since = len(self.reads) - offset - counted * period
                    self.steps_before, self.reads = self.done, []
        else:
            self.counted_since += 1
            self.done = self.steps_before + max(0, self.counted_since - 1) // self.per_step[1]
        if self.done != before:
            self.host.step_ended()

    def freeze(self) -> None:
        """Count from here on by what the window showed: the loop's iterations where a loop was found; else
        by the pattern: updates (or marks) per step, and how many of the step under way are done."""
        if self.counter.loop is not None:
            self.counter.fix()
            self.frame_loop = FastLoop.of(self.counter, self.host.stacks) or False
        loop = self.host.loop
        rule = loop.rule()
        counted = loop.steps()
        if self.by_iterations():
            if not loop.segments and not loop.read_at and not self.host.solvers:
                self.countable = False  # its iterations show only in passes, which only the hooks see
        elif rule.kind == "updates":
            done = max(0, len(loop.segments) - rule.offset) - counted * rule.period
            self.per_step, self.counted_since = ("updates", rule.period), max(0, done)
        elif rule.kind == "marks":
            self.per_step, self.counted_since = ("marks", 1), 0
        elif rule.kind == "passes" and (reads := loop.reads_per_step(rule)):
            self.per_step, self.counted_since = ("reads", reads), loop.reads_after(rule)
        elif self.counter.loop is None:
            self.countable = False
        self.steps_before += counted
        self.host.loop = Loop()

    def window_opened(self) -> None:
        """A window begins: the count goes on from here, by the window's own loop (what came before frozen)."""
        if self.per_step is None and self.host.loop.segments:
            self.freeze()
        self.reads = []
        self.steps_before = self.done

    def last_iteration(self) -> bool:
        """The program ended inside its loop's last iteration: that step ends with it. Whether it did."""
        if not (self.by_iterations() and self.counter.inside):
            return False
        self.counter.inside = False
        self.done = max(self.done, self.counter_base + self.counter.completed)
        return True

    def last_reads(self) -> None:
        """The program ended, its steps counted by its reads between windows: its last step ran (its end, the next
        read, never comes)."""
        if self.per_step is not None and self.per_step[0] == "reads":
            self.done = max(self.done, self.steps_before + self.counted_since // self.per_step[1])


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
