"""A program's steps as the iterations of its loop, read off the program's own code.

A step is one iteration of the program's training (or inference) loop, whatever the iteration holds:
k updates of a critic and one of a generator, an actor updated every second iteration, new models and
solvers at each stage, an environment's steps between updates, epochs of any length. The loop is read
from the program itself, not from the order of its calls:

- each timed call of the program's (a pass, a solver call, a read of a data iterator, ...) carries its
  *stack*: the program's frames from the outermost in, each as (frame token, code, instruction), the
  token telling one call of a function from the next;
- each code object's loops come from its bytecode: a jump back to an earlier instruction closes a loop
  (``CodeInfo.loops``: the head's offset and the last jump back's);
- between two calls, the loop whose back edge was crossed is found where their stacks part
  (``crossed``): a frame that moved back to an earlier instruction crossed the innermost loop holding
  both instructions; a frame that ran the same instruction again, or called anew, crossed the
  innermost loop holding it;
- the step loop is the innermost loop that holds every kind of solver update that repeats (a kind: the
  program's path of lines to the call), or without a solver every kind of pass and read that repeats
  (``step_loop``); an update made once, before the loop, does not count;
- an iteration begins where the step loop, or a loop around it, is crossed, or where the program
  enters the step loop (``starts``).

Everything here is pure: stacks and code descriptions are data (``nnprofile.assembly.events``), so
that the recorder, counting steps while the program runs, and the assembly, cutting a recording into
steps, read one rule.
"""

from __future__ import annotations
from ..base.places import place, short

from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

Frame = Tuple[int, int, int]  # (frame token, code index, instruction offset)
Stack = Tuple[Frame, ...]  # the program's frames, outermost first
LoopRef = Tuple[int, int]  # (code index, head offset)
TOP = (-1, -1)  # the program's outermost frame itself was entered anew


@dataclass
class CodeInfo:
    """A code object of the program's: where it is, and its loops."""

    file: str
    name: str
    line: int  # its first line
    loops: List[Tuple[int, int]] = field(default_factory=list)  # (head, last jump back), by head
    lines: List[Tuple[int, int]] = field(default_factory=list)  # (offset, line) where a line starts
    stores: List[Tuple[int, str]] = field(default_factory=list)  # (a call's offset, the name its result is stored in)

    def stored_at(self, offset: int) -> str:
        """The name the call at ``offset`` stores its result in (``vloss`` of ``vloss = model(x)``), "" for none."""
        for at, name in self.stores:
            if at == offset:
                return name
        return ""

    def line_at(self, offset: int) -> int:
        line = self.line
        for at, n in self.lines:
            if at > offset:
                break
            line = n
        return line

    def innermost(self, lo: int, hi: int) -> Optional[Tuple[int, int]]:
        """The innermost loop holding both offsets (None: no loop does)."""
        best = None
        for start, end in self.loops:
            if start <= lo and hi <= end and (best is None or end - start < best[1] - best[0]):
                best = (start, end)
        return best

    def to_list(self) -> list:
        return [
            self.file,
            self.name,
            self.line,
            [list(x) for x in self.loops],
            [list(x) for x in self.lines],
            [list(x) for x in self.stores],
        ]

    @classmethod
    def from_list(cls, x: list) -> "CodeInfo":
        return cls(
            str(x[0]),
            str(x[1]),
            int(x[2]),
            [(int(a), int(b)) for a, b in x[3]],
            [(int(a), int(b)) for a, b in x[4]],
            [(int(a), str(b)) for a, b in (x[5] if len(x) > 5 else [])],
        )


def stored_name(stack: Stack, codes: Sequence[CodeInfo]) -> str:
    """What the program calls the result of the call a stack is in: the name the outermost frame inside a loop
    stores it in (``vloss`` of ``vloss = vae_loss(vx)`` in the training loop); outside any loop, the name the
    outermost function (below the module's own code) stores it in; "" where it stores none (a helper's own variable
    names nothing the program made)."""
    framed = [(c, at) for _, c, at in stack if c < len(codes)]
    for c, at in framed:
        if codes[c].innermost(at, at) is not None:
            return codes[c].stored_at(at)
    outer = [(c, at) for c, at in framed if codes[c].name != "<module>"][:1] or framed[:1]
    return codes[outer[0][0]].stored_at(outer[0][1]) if outer else ""


def kind(stack: Stack) -> Tuple[Tuple[int, int], ...]:
    """Which call this is in the program: its path of code and instruction (tokens left out)."""
    return tuple((c, at) for _, c, at in stack)


def crossed(a: Stack, b: Stack, codes: Sequence[CodeInfo]) -> Optional[Tuple[int, LoopRef]]:
    """The loop whose back edge the program crossed between a call at ``a`` and the next at ``b``, with
    the level of the frame it is in; None where it only went forward."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    if k < n and a[k][0] == b[k][0]:  # one frame, moved
        x, y = a[k][2], b[k][2]
        if y > x:
            return None
        loop = codes[a[k][1]].innermost(y, x)
        return (k, (a[k][1], loop[0])) if loop is not None else None
    # The frame at level k is a new call (or one stack holds the other): the instruction that made it,
    # one level out, ran again: the innermost loop around it was crossed (else one further out).
    for j in range(k - 1, -1, -1):
        loop = codes[a[j][1]].innermost(a[j][2], a[j][2])
        if loop is not None:
            return (j, (a[j][1], loop[0]))
    return (-1, TOP)


def level_in(stack: Stack, loop: LoopRef, codes: Sequence[CodeInfo]) -> int:
    """The level of the frame of ``stack`` that runs inside ``loop`` (-1: the stack is outside it)."""
    code, head = loop
    end = _end(codes, loop)
    for j, (_, c, at) in enumerate(stack):
        if c == code and head <= at <= end:
            return j
    return -1


def _end(codes: Sequence[CodeInfo], loop: LoopRef) -> int:
    for start, end in codes[loop[0]].loops:
        if start == loop[1]:
            return end
    return loop[1]


def step_loop(stacks: Sequence[Stack], codes: Sequence[CodeInfo]) -> Optional[LoopRef]:
    """The innermost loop holding a call of every kind that repeats (every kind, where none repeats);
    None where no loop holds them all."""
    by_kind: Dict[Hashable, List[Stack]] = {}
    for s in stacks:
        if s:
            by_kind.setdefault(kind(s), []).append(s)
    if not by_kind:
        return None
    repeated = [v[0] for v in by_kind.values() if len(v) > 1] or [v[0] for v in by_kind.values()]
    reference = repeated[0]
    candidates: List[LoopRef] = []  # outermost first
    for _, c, at in reference:
        inside = sorted((l for l in codes[c].loops if l[0] <= at <= l[1]), key=lambda l: l[0] - l[1])
        candidates += [(c, l[0]) for l in inside]
    for loop in reversed(candidates):
        if all(level_in(s, loop, codes) >= 0 for s in repeated):
            return loop
    return None


def encloses(outer: LoopRef, inner: LoopRef, codes: Sequence[CodeInfo]) -> bool:
    return outer[0] == inner[0] and outer[1] <= inner[1] and _end(codes, inner) <= _end(codes, outer)


RUN, ITERATION, INSIDE = "run", "iteration", ""  # what a call inside the loop begins (``entry``)


def entry(previous: Optional[Stack], stack: Stack, loop: LoopRef, codes: Sequence[CodeInfo]) -> Optional[str]:
    """What the call at ``stack`` begins in ``loop`` (``previous``: the last call inside the loop before it, None
    where the program was outside the loop since): None outside the loop; RUN where it enters the loop anew (from
    outside it, in a new call of the function holding it, or across a loop around it: a run is one pass of the
    program through the loop, as an epoch is of ``for i in range(n)``); ITERATION where it begins the next iteration
    of the same run; INSIDE within the iteration under way."""
    j = level_in(stack, loop, codes)
    if j < 0:
        return None
    if previous is None or level_in(previous, loop, codes) != j or previous[j][0] != stack[j][0]:
        return RUN  # entered, or the loop's frame is another call of its function
    found = crossed(previous, stack, codes)
    if found is None:
        return INSIDE
    k, c = found
    if k < j or c == TOP:
        return RUN
    if k == j and encloses(c, loop, codes):
        return ITERATION if c == loop else RUN
    return INSIDE


def begins(previous: Optional[Stack], stack: Stack, loop: LoopRef, codes: Sequence[CodeInfo]) -> bool:
    """Whether the call at ``stack`` begins an iteration of ``loop`` (of the same run or a new one)."""
    return bool(entry(previous, stack, loop, codes))


def entries(stacks: Sequence[Optional[Stack]], loop: LoopRef, codes: Sequence[CodeInfo]) -> List[Optional[str]]:
    """For each call: what it begins in ``loop`` (``entry``); None also for a call without a stack (a call that does
    not move the loop)."""
    out: List[Optional[str]] = []
    previous: Optional[Stack] = None
    for s in stacks:
        if not s:
            out.append(None)
            continue
        if level_in(s, loop, codes) < 0:
            out.append(None)
            previous = None
            continue
        out.append(entry(previous, s, loop, codes))
        previous = s
    return out


def starts(stacks: Sequence[Optional[Stack]], loop: LoopRef, codes: Sequence[CodeInfo]) -> List[Optional[bool]]:
    """For each call: True where it begins an iteration of ``loop``, False inside it, None outside it (or
    without a stack: a call that does not move the loop)."""
    return [None if e is None else bool(e) for e in entries(stacks, loop, codes)]


class Gate:
    """Which iterations of the step loop are steps, as they come (the recorder's count) or replayed (the assembly).

    Where the loop was found by its updates (``gated``), a step is an iteration of a run of the loop that updates:
    its iterations from the run's first update on, and before it as many as the program's usual gap between two
    updates (gradients accumulated over several iterations: those iterations are the step's). Iterations before a
    run's first update beyond that gap are no steps (a warm-up: an environment's steps while a replay buffer fills,
    before training starts), nor are the iterations of a run that never updates (a validation epoch run through
    the training's own loop). The gap is read off the first two iterations that update. Without updates (an
    inference loop), every iteration is a step."""

    def __init__(self, gated: bool):
        self.gated = gated
        self.index = -1  # iterations begun, over every run (from 0)
        self.counted = 0  # of them steps (begun)
        self.current = False  # the iteration under way is a step
        self.updated = False  # the iteration under way has an update
        self.bare = 0  # steps ended without an update
        self.steps: List[int] = []  # the indexes of the iterations that are steps (in order of being found)
        self._run_updated = False
        self._pending: List[int] = []  # this run's iterations before its first update (the one under way too)
        self._first: Optional[Tuple[int, List[int]]] = None  # the first update's iteration, and those before it
        self.gap: Optional[int] = None  # iterations without an update between two that update (once known)

    def begin(self, new_run: bool) -> None:
        if self.current and not self.updated:
            self.bare += 1
        if new_run:
            self._run_updated, self._pending = False, []
        self.index += 1
        self.updated = False
        if not self.gated or self._run_updated:
            self._count([self.index])
            self.current = True
        else:
            self._pending.append(self.index)
            self.current = False

    def _count(self, iterations: Sequence[int]) -> None:
        self.steps += iterations
        self.counted += len(iterations)

    def update(self) -> None:
        if self.index < 0:
            return
        self.updated = True
        if not self.gated:
            return
        if self.gap is None and self._first is not None and self.index > self._first[0]:
            self.gap = self.index - self._first[0] - 1
            before = self._first[1]
            self._count(before[len(before) - min(len(before), self.gap) :])
        if self._run_updated:
            return
        self._run_updated = True
        before = [i for i in self._pending if i != self.index]
        self._pending = []
        if self._first is None:
            self._first = (self.index, before)
            kept: List[int] = []
        else:
            kept = before[len(before) - min(len(before), self.gap or 0) :]
        self._count(kept + [self.index])
        self.current = True

    def completed(self, inside: bool) -> int:
        """Steps ended: each one ends where the next iteration begins, or where the program leaves the loop."""
        return max(0, self.counted - (1 if inside and self.current else 0))


def select(flags: Sequence[Optional[str]], updates: Sequence[bool], gated: bool) -> List[bool]:
    """For each call beginning an iteration (``flags``: ``entries``; ``updates``: the call is an update): whether
    that iteration is a step (``Gate``'s rule, with the whole run known). One value per iteration, in order."""
    gate = Gate(gated)
    for flag, update in zip(flags, updates):
        if flag:
            gate.begin(flag == RUN)
        if update and flag is not None:
            gate.update()
    chosen = set(gate.steps)
    return [i in chosen for i in range(gate.index + 1)]


def loop_where(loop: LoopRef, codes: Sequence[CodeInfo]) -> str:
    """``train.py:57`` for the loop's head line."""
    code = codes[loop[0]]
    return short(place(code.file, code.line_at(loop[1])))


KEEP = 4096  # stacks a counter keeps to choose its loop again (then the loop is kept as found)
SETTLED = 50  # iterations of one loop, chosen and not changed since, after which a counter keeps it
PATIENCE = 2048  # calls without an update after which a program that made a solver has its loop chosen without


class Counter:
    """Iterations of a step loop counted as calls come (the recorder's live count). ``loop`` may be fixed
    (read off an earlier window); else it is chosen from the calls so far: the updates, or without a
    solver the passes and reads (``step_loop``). A program that made a solver has its loop chosen by its updates:
    passes and reads before its first update (a validation before training, an environment's warm-up) choose
    none, unless no update comes for ``PATIENCE`` calls. Which iterations are steps: ``Gate``."""

    def __init__(self, codes: Sequence[CodeInfo], loop: Optional[LoopRef] = None, expects_updates: bool = False):
        self.codes = codes
        self.loop = loop
        self.fixed = loop is not None
        self.expects_updates = expects_updates  # the program made a solver: its loop is the one that updates
        self.inside = False  # the last call was inside the loop
        self.gate = Gate(False)
        self._gated = False  # the loop was chosen by the updates
        self._previous: Optional[Stack] = None
        self._keys: Dict[str, List[Stack]] = {"update": [], "other": []}
        self._kinds: Dict[str, Dict[Hashable, int]] = {"update": {}, "other": {}}
        self._all: List[Stack] = []  # every stack since the count began (until the loop is fixed)
        self._all_keys: List[Optional[str]] = []

    @property
    def completed(self) -> int:
        """Steps ended: each one ends where the next begins, or where the program leaves the loop."""
        return self.gate.completed(self.inside)

    @property
    def bare(self) -> int:
        """Steps ended without an update (since the loop was chosen)."""
        return self.gate.bare

    def _waiting(self) -> bool:
        """Whether the loop waits for the program's first update to be chosen."""
        return self.expects_updates and not self._keys["update"] and len(self._keys["other"]) < PATIENCE

    def feed(self, stack: Optional[Stack], key: Optional[str]) -> None:
        """A call that can begin an iteration (``key``: "update" for a solver's update, "other" for a pass or a
        read, which choose the loop where the program has no solver; None for any other call)."""
        if not stack:
            return
        if not self.fixed:
            self._all.append(stack)
            self._all_keys.append(key)
            if key is not None:
                self._keys[key].append(stack)
                kinds = self._kinds[key]
                k = kind(stack)
                kinds[k] = kinds.get(k, 0) + 1
                # The loop is chosen again where the calls that choose it change: a kind seen a second
                # time, a new kind while none repeats, the first update.
                if kinds[k] == 2 or (kinds[k] == 1 and not any(n > 1 for n in kinds.values())):
                    if key == "update" or (not self._keys["update"] and not self._waiting()):
                        self._choose()
            if len(self._all) > KEEP:
                if self._keys["update"] or not self.expects_updates:
                    self.fix()
                else:  # still waiting for the first update: the oldest calls go (they are before any step)
                    half = KEEP // 2
                    self._all, self._all_keys = self._all[-half:], self._all_keys[-half:]
                    self._keys["other"] = self._keys["other"][-half:]
        self._advance(stack, key)
        if (
            not self.fixed
            and self.loop is not None
            and self.gate.counted > SETTLED
            and (self._gated or not self.expects_updates)
        ):
            self.fix()  # the loop chosen has held this many iterations: kept (counted from its frame from here)

    def _advance(self, stack: Stack, key: Optional[str] = None) -> None:
        if self.loop is None:
            return
        if level_in(stack, self.loop, self.codes) < 0:
            self.inside, self._previous = False, None
            return
        self.moved(entry(self._previous, stack, self.loop, self.codes), key)
        self._previous = stack

    def moved(self, begun: Any, key: Optional[str]) -> None:
        """A call found to begin a run of the loop (RUN), an iteration (ITERATION, or True), to be inside one
        (INSIDE, or False) or outside the loop (None)."""
        if begun is None:
            self.inside = False
            return
        if begun:
            self.gate.begin(begun == RUN)
        self.inside = True
        if key == "update":
            self.gate.update()

    @property
    def updates_show_it(self) -> bool:
        """Whether every iteration so far had an update (long enough to tell): the updates alone then
        count the iterations."""
        return self.loop is not None and self.gate.bare == 0 and self.gate.counted > SETTLED

    def _choose(self) -> None:
        updates = self._keys["update"]
        loop = step_loop(updates or self._keys["other"], self.codes)
        gated = bool(updates)
        if loop == self.loop and gated == self._gated:
            return
        self.loop, self._gated = loop, gated
        self.inside, self._previous = False, None  # counted again under the new loop
        self.gate = Gate(gated)
        for s, key in zip(self._all[:-1], self._all_keys):
            self._advance(s, key)

    def fix(self) -> None:
        """Keep the loop as found (between windows nothing more is kept)."""
        self.fixed = True
        self._all, self._all_keys = [], []
        self._keys = {"update": [], "other": []}
