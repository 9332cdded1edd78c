"""A recorded program's raw events as a file (``events.json.gz``, ``nnprofile run --save-events``): a ``Capture``
saved, and loaded again without NNabla, to assemble the same profile (``tests/events/``).
"""

from __future__ import annotations

import dataclasses

import gzip
import json
import re
from typing import Any, Dict, Optional, Tuple

from ..base.functions import FunctionInfo, Graph, VariableInfo
from ..base.hookcost import KINDS, HookCosts
from ..base.schedule import Schedule
from .events import (
    Call,
    Capture,
    CommCall,
    Event,
    Hooks,
    InputCall,
    IteratorInfo,
    MonitorCall,
    SiteInfo,
    SolverCall,
    SolverInfo,
    StepMark,
)
from .iterations import CodeInfo, Stack

FORMAT = "nnprofile-events"
FILENAME = "events.json.gz"  # where a run saves its recording as data (``--save-events``)
# 2: each event's depth and stack, the program's code objects; 3: the names calls' results are stored in, the
# thread's marks around each call (its CPU time) and the time it waited for a CPU as steps ended; 4: each fault
# as where it happened and how many times (3 held its note's words); 5: an auto_forward call's program frames and
# when the program's call that made it entered NNabla; when each solver was made
VERSION = 5

SAVED_ACTIVE = 20  # the kept steps of a file that does not say: the default schedule's before 10 (0.3)


def _stack_out(stack: Optional[Stack]) -> Optional[list]:
    return [list(f) for f in stack] if stack else None


def _stack_in(x: Any) -> Optional[Stack]:
    return tuple((int(a), int(b), int(c)) for a, b, c in x) if x else None


def _marks(e: Any) -> list:
    return [e.m0, e.m1] if (e.m0 or e.m1) else []


def _event_list(e: Event) -> list:
    if isinstance(e, Call):
        head = ["f", e.function, e.start_ns, e.end_ns, e.site, e.kind, e.depth, _stack_out(e.stack)]
        if e.entered_ns != e.start_ns or e.frames:  # (version 5: marks written, then these)
            return head + [e.m0, e.m1, e.entered_ns, _stack_out(e.frames)]
        return head + _marks(e)
    if isinstance(e, SolverCall):
        return ["s", e.method, e.solver, e.start_ns, e.end_ns, e.depth, _stack_out(e.stack)] + _marks(e)
    if isinstance(e, InputCall):
        return ["i", e.iterator, e.start_ns, e.end_ns, e.depth, _stack_out(e.stack)] + _marks(e)
    if isinstance(e, MonitorCall):
        return ["m", e.monitor, e.start_ns, e.end_ns, e.depth, _stack_out(e.stack)] + _marks(e)
    if isinstance(e, CommCall):
        return ["c", e.method, e.start_ns, e.end_ns, e.bytes, e.depth, _stack_out(e.stack)] + _marks(e)
    if isinstance(e, StepMark):
        return ["k", e.at_ns, _stack_out(e.stack)]
    return ["h", e.on, e.at_ns]


def _tail(x: list, at: int) -> Tuple[int, Optional[Stack]]:
    """(depth, stack) from an event's list (version 1 had neither: 0 and None)."""
    return (int(x[at]) if len(x) > at else 0), (_stack_in(x[at + 1]) if len(x) > at + 1 else None)


def _switches(x: list, at: int) -> Tuple[int, int]:
    """(m0, m1) from an event's list (version 3 may hold them after its stack; else 0, 0)."""
    return (int(x[at]), int(x[at + 1])) if len(x) > at + 1 else (0, 0)


def _event(x: list) -> Event:
    kind = x[0]
    if kind == "f":
        depth, stack = _tail(x, 6)
        entered, frames = (int(x[10]), _stack_in(x[11])) if len(x) > 11 else (None, None)
        return Call(int(x[1]), int(x[2]), int(x[3]), x[4], str(x[5]), depth, stack, *_switches(x, 8), entered, frames)
    if kind == "s":
        return SolverCall(str(x[1]), int(x[2]), int(x[3]), int(x[4]), *_tail(x, 5), *_switches(x, 7))
    if kind == "i":
        return InputCall(int(x[1]), int(x[2]), int(x[3]), *_tail(x, 4), *_switches(x, 6))
    if kind == "m":
        return MonitorCall(str(x[1]), int(x[2]), int(x[3]), *_tail(x, 4), *_switches(x, 6))
    if kind == "c":
        return CommCall(str(x[1]), int(x[2]), int(x[3]), int(x[4]), *_tail(x, 5), *_switches(x, 7))
    if kind == "k":
        return StepMark(int(x[1]), _stack_in(x[2]) if len(x) > 2 else None)
    return Hooks(bool(x[1]), int(x[2]))


def _fault(x: Any) -> Tuple[str, int]:
    """A fault as (where, times); version 3 held the note's words, read back."""
    if isinstance(x, list):
        return str(x[0]), int(x[1])
    said = re.match(r"could not be recorded at (.*) \((\d+) times?\); ", str(x))
    return (said.group(1), int(said.group(2))) if said else (str(x), 1)


def to_dict(c: Capture) -> Dict[str, Any]:
    costs = None
    if c.costs is not None:
        costs = {k: list(v) if k == "kinds" else v for k, v in vars(c.costs).items() if k != "by_signature"}
        costs["by_signature"] = {k: list(v) for k, v in c.costs.by_signature.items()}
    return {
        "format": FORMAT,
        "version": VERSION,
        "started_ns": c.started_ns,
        "stopped_ns": c.stopped_ns,
        "skip_first": c.skip_first,
        "active": c.active,
        "excluded": [list(x) for x in c.excluded],
        "comm_rank": list(c.comm_rank) if c.comm_rank else None,
        "callback_used": c.callback_used,
        "communicators": c.communicators,
        "costs": costs,
        "variables": [v.to_list() for v in c.graph.variables.values()],
        "functions": [f.to_list() for f in c.graph.functions.values()],
        "sites": [[s.id, s.file, s.line, s.code, s.phase, s.receiver, s.clears] for s in c.sites.values()],
        "solvers": [
            [s.type_name, s.variable, s.parameters, s.state_bytes, s.created, s.made_ns, s.module] for s in c.solvers
        ],
        "iterators": [[i.name, i.threaded] for i in c.iterators],
        "codes": [x.to_list() for x in c.codes],
        "faults": [list(x) for x in c.faults],
        "samples": [list(x) for x in c.samples],
        "sample_sites": [list(x) for x in c.sample_sites],
        "sampled": c.sampled,
        "sample_clock": list(c.sample_clock),
        "handled": [list(x) for x in c.handled],
        "blocked": [list(x) for x in c.blocked],
        "marks": c.marks,
        "waits": [list(x) for x in c.waits],
        "pass_calls": [list(x) for x in c.pass_calls],
        "events": [_event_list(e) for e in c.events],
    }


def from_dict(d: Dict[str, Any]) -> Capture:
    if d.get("format") != FORMAT:
        raise ValueError("not nnprofile's events (format %r)" % d.get("format"))
    if int(d.get("version", 0)) > VERSION:
        raise ValueError(
            "events format version %s is newer than this nnprofile reads (%d)" % (d.get("version"), VERSION)
        )
    costs = None
    if d.get("costs"):
        raw = dict(d["costs"])
        by_signature = {k: (float(v[0]), float(v[1])) for k, v in (raw.pop("by_signature", None) or {}).items()}
        known = {f.name for f in dataclasses.fields(HookCosts)}  # (older files: "outside", "carry", no more fitted)
        raw = {k: v for k, v in raw.items() if k in known}
        costs = HookCosts(**dict(raw, kinds=tuple(raw.get("kinds", KINDS))), by_signature=by_signature)
    return Capture(
        events=[_event(x) for x in d["events"]],
        graph=Graph(
            [FunctionInfo.from_list(x) for x in d["functions"]], [VariableInfo.from_list(x) for x in d["variables"]]
        ),
        sites={
            int(x[0]): SiteInfo(int(x[0]), x[1], int(x[2]), x[3], x[4], x[5], x[6] if len(x) > 6 else "")
            for x in d["sites"]
        },
        solvers=[
            SolverInfo(
                x[0], x[1], list(x[2]), int(x[3]), x[4], int(x[5]) if len(x) > 5 else 0, str(x[6]) if len(x) > 6 else ""
            )
            for x in d["solvers"]
        ],
        iterators=[IteratorInfo(x[0], bool(x[1])) for x in d["iterators"]],
        communicators=list(d.get("communicators", [])),
        started_ns=int(d["started_ns"]),
        stopped_ns=int(d["stopped_ns"]),
        excluded=[(int(a), int(b)) for a, b in d.get("excluded", [])],
        comm_rank=(int(d["comm_rank"][0]), int(d["comm_rank"][1])) if d.get("comm_rank") else None,
        callback_used=bool(d.get("callback_used")),
        skip_first=int(d.get("skip_first", Schedule.warmup)),
        active=int(d.get("active", SAVED_ACTIVE)),
        costs=costs,
        codes=[CodeInfo.from_list(x) for x in d.get("codes", [])],
        faults=[_fault(x) for x in d.get("faults", [])],
        samples=[(int(a), int(b)) for a, b in d.get("samples", [])],
        sample_sites=[(str(a), int(b), str(c), str(t)) for a, b, c, t in d.get("sample_sites", [])],
        sampled=int(d.get("sampled", 0)),
        marks=str(d.get("marks", "")),
        sample_clock=_clock(d.get("sample_clock")),
        handled=[(int(a), int(b)) for a, b in d.get("handled", [])],
        blocked=[(int(a), int(b), int(c)) for a, b, c in d.get("blocked", [])],
        waits=[(int(a), int(b), int(c)) for a, b, c in d.get("waits", [])],
        pass_calls=[_pass_call(x) for x in d.get("pass_calls", [])],
    )


def _pass_call(x: Any) -> Tuple[int, int, str, str]:
    """A pass call as saved: its site is "" in files saved before sites were."""
    return int(x[0]), int(x[1]), str(x[2]), str(x[3]) if len(x) > 3 else ""


def save(c: Capture, path: str) -> str:
    """Write the capture, gzipped JSON, whole (a temporary file renamed into place)."""
    import os

    raw = json.dumps(to_dict(c), separators=(",", ":")).encode("utf-8")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(gzip.compress(raw, compresslevel=6, mtime=0))
    os.replace(tmp, path)
    return path


def _clock(value: Any) -> Tuple[str, float]:
    """A capture's sample clock as stored: [kind, ms apart]; ("", 0.0) where it was not stored."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return str(value[0]), float(value[1])
    return "", 0.0


def load(path: str) -> Capture:
    with open(path, "rb") as f:
        raw = f.read()
    return from_dict(json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw))
