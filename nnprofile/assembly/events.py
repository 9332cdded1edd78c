"""A recorded program's raw events as data: the saved form of a recording, and its events' types.

The recorder (``recorder``) keeps, in order, every call it timed: functions (a static graph's
forward and backward between NNabla's hooks, an auto_forward function as it is made, an eager
call on NdArrays), solver calls, waits for a batch, monitors, communicator calls, the program's
``nnprofile.step()`` marks and where the hooks were switched. ``nnprofile.recording.capturing`` turns NNabla's objects
into data (``Capture``): functions and variables by id (``nnprofile.base.functions``), each call
site with the pass it runs and the name the program called it on, each solver with its
parameters. From a ``Capture`` on, everything is pure (``nnprofile.assembly``): it saves to a
file (``capture_file``: ``events.json.gz``, ``nnprofile run --save-events``), loads without NNabla, and
assembles the same profile again. Times are integer nanoseconds of the recorder's clock.

NNabla runs functions inside functions (a custom layer's ``forward_impl`` calls NNabla functions on
NdArrays, a backward builds and runs new functions, a solver of the program's own computes on
NdArrays): a program's calls are a tree. Each event keeps its ``depth``, the calls open around it when
it ran; events are kept in the order they ended, so a call's children are the events just before it one
level deeper (``nnprofile.assembly.tree``). Each call that can begin a step keeps its ``stack``, the
program's frames it was called from (``nnprofile.assembly.iterations``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from ..base.places import place
from ..base.functions import Graph
from ..base.hookcost import HookCosts
from ..base.schedule import Schedule
from ..base.interference import CPU, SWITCHES, shortfall  # noqa: F401 (the events' vocabulary)
from .iterations import CodeInfo, Stack

STATIC, DYNAMIC, EAGER = "static", "dynamic", "eager"  # how a function ran (and was timed)


class Call:
    """One function's forward or backward as timed. ``function``: the NNabla function while recording,
    its id in the capture's graph once described; ``site``: the call site of its pass (a static
    graph's), or None; ``kind``: STATIC, DYNAMIC (auto_forward) or EAGER (on NdArrays)."""

    __slots__ = ("function", "start_ns", "end_ns", "site", "kind", "depth", "stack", "m0", "m1", "entered_ns", "frames")

    def __init__(
        self,
        function: Any,
        start_ns: int,
        end_ns: int,
        site: Any = None,
        kind: str = STATIC,
        depth: int = 0,
        stack: Optional[Stack] = None,
        m0: int = 0,
        m1: int = 0,
        entered_ns: Optional[int] = None,
        frames: Optional[Stack] = None,
    ):
        self.function = function
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.site = site
        self.kind = kind
        self.depth = depth  # calls open around it (0: the program's own call)
        self.stack = stack  # the program's frames, for the first call of a pass
        # The thread's marks as it began and as it ended (``Capture.marks``: its CPU time in ns, or its involuntary
        # context switches on an asynchronous device): other work took the thread from it in between where its CPU
        # time fell short of its wall time, or the switches moved (``disturbed``); 0, 0 where not read.
        self.m0 = m0
        self.m1 = m1
        # An auto_forward call (its graph is built as it runs): when the program's call that made it entered NNabla
        # (a parametric function: its parameters fetched, its function made), so that what lies between the last
        # function's end and this is the program's own code; and the program's frames it was made from.
        self.entered_ns = start_ns if entered_ns is None else entered_ns
        self.frames = frames

    @property
    def dynamic(self) -> bool:
        return self.kind == DYNAMIC

    def __repr__(self) -> str:
        return "Call(%r, %d, %d, %s)" % (self.function, self.start_ns, self.end_ns, self.kind)


@dataclass
class SolverCall:
    method: str
    solver: int  # index into Capture.solvers
    start_ns: int
    end_ns: int
    depth: int = 0
    stack: Optional[Stack] = None
    m0: int = 0  # the thread's marks as it began and ended (``Call``)
    m1: int = 0


@dataclass
class InputCall:
    """The program waiting in DataIterator.next()."""

    iterator: int  # index into Capture.iterators
    start_ns: int
    end_ns: int
    depth: int = 0
    stack: Optional[Stack] = None
    m0: int = 0
    m1: int = 0


@dataclass
class MonitorCall:
    monitor: str
    start_ns: int
    end_ns: int
    depth: int = 0
    stack: Optional[Stack] = None
    m0: int = 0
    m1: int = 0


@dataclass
class CommCall:
    """A communicator's call: a collective (all_reduce, bcast, ...), init or barrier."""

    method: str
    start_ns: int
    end_ns: int
    bytes: int = 0  # the data it moved (what the arrays given hold), 0 where unknown
    depth: int = 0
    stack: Optional[Stack] = None
    m0: int = 0
    m1: int = 0


@dataclass
class StepMark:
    """``nnprofile.step()``: the program says where a step ends."""

    at_ns: int
    stack: Optional[Stack] = None


@dataclass
class Hooks:
    """The function hooks switched on or off (at a step's end)."""

    on: bool
    at_ns: int


Event = Union[Call, SolverCall, InputCall, MonitorCall, CommCall, StepMark, Hooks]
WAITS = (InputCall, MonitorCall)  # calls that wait: marked by the thread's involuntary context switches


def start_of(e: Event) -> int:
    return e.at_ns if isinstance(e, (StepMark, Hooks)) else e.start_ns


def end_of(e: Event) -> int:
    return e.at_ns if isinstance(e, (StepMark, Hooks)) else e.end_ns


def depth_of(e: Event) -> int:
    return getattr(e, "depth", 0)


def stack_of(e: Event) -> Optional[Stack]:
    return getattr(e, "stack", None)


def disturbed(e: Any, marks: str) -> bool:
    """Whether other work kept the program from running while the call ran. A wait (for a batch, a log written) is
    no CPU time: its marks are the thread's involuntary context switches. A collective's time is the other ranks'
    to set (a rank that waits polls, and is switched out as any spinning task is): never judged."""
    if not hasattr(e, "m0") or not marks or isinstance(e, CommCall):
        return False
    return shortfall(e.start_ns, e.end_ns, e.m0, e.m1, SWITCHES if isinstance(e, WAITS) else marks)


@dataclass
class SiteInfo:
    """A call site of a pass: the program's line, and what the bytecode says it called on what."""

    id: int
    file: str
    line: int
    code: str  # the function (or module) the line is in
    phase: str  # "forward", "backward", or "" where the bytecode does not say
    receiver: str  # the name it was called on ("loss" in loss.backward()), "" where unknown
    clears: str = ""  # the buffers the call asks to clear: "clear_buffer", "clear_no_need_grad" or ""

    @property
    def where(self) -> str:
        return place(self.file, self.line)


@dataclass
class SolverInfo:
    type_name: str  # Adam
    variable: str = ""  # what the program calls it, where the bytecode says
    parameters: List[int] = field(default_factory=list)  # variable ids of the parameters it updates
    state_bytes: int = 0  # what it keeps per parameter, in all
    created: Optional[str] = None  # where the program made it ("train.py:40")
    made_ns: int = 0  # when (the recorder's clock; 0: not known, or before the window began)
    module: str = ""  # the module of its class: NNabla's ("nnabla.solver"), or the program's own ("" not known)


@dataclass
class IteratorInfo:
    name: str  # what the program calls it, else its data source's class
    threaded: bool  # NNabla prefetches in a thread: next() is a wait, not the loading


@dataclass
class Capture:
    """A recording as data: its events, and what they refer to."""

    events: List[Event] = field(default_factory=list)
    graph: Graph = field(default_factory=Graph)
    sites: Dict[int, SiteInfo] = field(default_factory=dict)
    solvers: List[SolverInfo] = field(default_factory=list)
    iterators: List[IteratorInfo] = field(default_factory=list)
    communicators: List[str] = field(default_factory=list)  # the type of each communicator made
    started_ns: int = 0
    stopped_ns: int = 0
    excluded: List[Tuple[int, int]] = field(default_factory=list)  # nnprofile's own work between calls
    comm_rank: Optional[Tuple[int, int]] = None
    callback_used: bool = False  # all_reduce_callback: its communication runs inside backward
    skip_first: int = Schedule.warmup
    active: int = Schedule.active
    costs: Optional[HookCosts] = None  # what the hooks cost, as measured (on the chain; per signature in earlier files)
    codes: List[CodeInfo] = field(default_factory=list)  # the program's code objects the stacks name
    # The program's own lines between NNabla's calls, sampled (``nnprofile.recording.sampler``): each sample
    # (ns, index into sample_sites), each site (file, line, function, the line's text).
    samples: List[Tuple[int, int]] = field(default_factory=list)
    sample_sites: List[Tuple[str, int, str, str]] = field(default_factory=list)
    sampled: int = 0  # samples tried (the sampler's cost's count)
    # What the samples came from, and how far apart (ms): "cpu" (the thread's CPU clock), "timer" (the profiling timer,
    # at the kernel's tick), "thread" (a thread of nnprofile's, on the wall clock); "" in a file that does not say.
    sample_clock: Tuple[str, float] = ("", 0.0)
    # When the sampler's handler ran in the program's thread (ns): a pass it ran in fits no costs (its leavings in the
    # caches slow the hooks' code after it), though its time is left out of every figure as the rest of nnprofile's.
    handled: List[Tuple[int, int]] = field(default_factory=list)
    # Where the program's own Python waited between NNabla's calls (``nnprofile.recording.waitwatch``): (ns, index
    # into sample_sites, ns it was blocked since the watcher's last look).
    blocked: List[Tuple[int, int, int]] = field(default_factory=list)
    faults: List[Tuple[str, int]] = field(default_factory=list)  # what could not be recorded, where; how often
    # Other work on the machine (``nnprofile.base.interference``): what each call's marks are ("" none read, CPU:
    # the thread's CPU time, SWITCHES: its involuntary context switches), and as steps ended, the thread's time
    # waited for a CPU and its involuntary context switches so far: (ns of the recorder's clock, waited ns, switches).
    marks: str = ""
    waits: List[Tuple[int, int, int]] = field(default_factory=list)
    # The program's own calls of a pass, timed where it made them (start, end, "forward" or "backward", its site:
    # "file:line:column", "" in files saved before sites were), in the steps without the hooks too
    # (``nnprofile.recording.passtimes``); none where its files were not compiled so.
    pass_calls: List[Tuple[int, int, str, str]] = field(default_factory=list)
