"""trace.json.gz: the timeline in the Chrome Trace Event format, for Perfetto UI and chrome://tracing.

Complete events (``"ph": "X"``) on one thread (in a merged view of ranks, one
process per rank, its clock aligned as the merge states), nested step > pass (forward,
backward) > layer, with the solver calls inside their step; times are whole
nanoseconds written as microseconds with three decimals, so a child that
lies inside its parent in nanoseconds still does after any reader's rounding
(Perfetto drops events that overlap without nesting). Shapes, FLOPs and the
implementation class go in ``args``; process and thread names are metadata
events. The size is bounded by the recording: events per step times the
active steps.
"""

from __future__ import annotations

import gzip
import json
from typing import Any, Dict, List

from .notes import text
from ..base.choices import PART_OF_PHASE
from ..analysis import Analysis
from ..result import Profile
from ..result.timeline import SharedArgs, json_string
from .base import Contents

NAME = "trace"
FILENAME = "trace.json.gz"
WHAT = "the Perfetto timeline"
WRITES = (FILENAME,)
PID, TID = 1, 1
_encode = json.JSONEncoder(separators=(",", ":")).encode  # (as json.dumps with these separators, made once)
_COUNTER = '{"ph":"C","pid":%d,"name":"live activations (estimated bytes)","ts":%s,"args":{"bytes":%s}}'
_EVENT = '{"ph":"X","pid":%d,"tid":%d,"name":%s,"cat":%s,"ts":%s,"dur":%s,"args":%s}'
# Parents before children when they start together: a longer event first.
CATEGORY_DEPTH = {"step": 0, **dict.fromkeys(PART_OF_PHASE.values(), 1)}  # (the rest, nested in them: 2)


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def trace_events(profile: Profile) -> List[str]:
    """The events, each as its JSON: one process, or in a merged view one process per rank (its pid the rank + 1), on
    the clocks the merge aligned. (Written out here: a layer's arguments, shared by its calls, are encoded once.)"""
    title = profile.header.project or "nnabla program"
    ranks = sorted({e.rank for e in profile.timeline if e.rank is not None})
    events = [_encode(m) for m in _processes(profile, title, ranks)]
    ordered = sorted(profile.timeline, key=lambda e: (e.rank or 0, e.start, -e.end, CATEGORY_DEPTH.get(e.cat, 2)))
    curves = {s.title: s.memory.curve for s in profile.sections if s.memory.estimated} if not ranks else {}
    counters: List[str] = []
    current: Dict[str, Any] = {}
    encoded = SharedArgs(_encode)
    for e in ordered:
        start, end, args = e.start, e.end, e.args
        events.append(
            _EVENT
            % (
                e.rank + 1 if e.rank is not None else PID,
                TID,
                json_string(e.name),
                json_string(e.cat),
                repr(_us(start)),
                repr(_us(end - start)),
                encoded(args),
            )
        )
        if "section" in args and e.cat in ("forward", "backward"):  # a pass: its functions follow
            steps = [c for c in curves.get(args["section"], []) if c[1] == e.cat]
            current = {"curve": steps, "next": 0, "end": end}
            if steps:
                counters.append(_counter(start, steps[0][2] if e.cat == "backward" else 0))
        elif e.is_call and current and start < current["end"] and current["next"] < len(current["curve"]):
            counters.append(_counter(end, current["curve"][current["next"]][2]))
            current["next"] += 1
    return events + counters


def _processes(profile: Profile, title: str, ranks: List[int]) -> List[Dict[str, Any]]:
    """The metadata events that name the process (one per rank in a merged view) and its thread."""
    if ranks:
        method = text(profile.ranks.clock_method)
        hosts = {r.rank: r.host for r in profile.ranks.ranks}
        events: List[Dict[str, Any]] = []
        for rank in ranks:
            events += [
                {
                    "ph": "M",
                    "pid": rank + 1,
                    "tid": TID,
                    "name": "process_name",
                    "args": {"name": "rank %d (%s): %s" % (rank, hosts.get(rank) or "?", title)},
                },
                {"ph": "M", "pid": rank + 1, "tid": TID, "name": "process_sort_index", "args": {"sort_index": rank}},
                {
                    "ph": "M",
                    "pid": rank + 1,
                    "tid": TID,
                    "name": "thread_name",
                    "args": {"name": "main thread (clocks: %s)" % method},
                },
            ]
    else:
        events = [
            {"ph": "M", "pid": PID, "tid": TID, "name": "process_name", "args": {"name": "nnprofile: %s" % title}},
            {"ph": "M", "pid": PID, "tid": TID, "name": "thread_name", "args": {"name": "main thread"}},
        ]
    return events


def _counter(ns: int, live_bytes: int) -> str:
    """A point of the memory track: the activations alive (estimated) after a function."""
    return _COUNTER % (PID, repr(_us(ns)), live_bytes if isinstance(live_bytes, int) else _encode(live_bytes))


def files(profile: Profile, analysis: Analysis) -> Contents:
    if not profile.timeline:
        return {}
    other = {
        "nnprofile": profile.header.nnprofile,
        "nnabla": profile.header.nnabla,
        "project": profile.header.project,
        "context": profile.header.context,
    }
    raw = '{"traceEvents":[%s],"displayTimeUnit":"ms","otherData":%s}' % (
        ",".join(trace_events(profile)),
        _encode(other),
    )
    # zlib's default level: 2.5 times as fast as gzip's 9 on a 23 MB timeline, and 4 % larger; the same profile,
    # the same bytes
    return {FILENAME: gzip.compress(raw.encode("utf-8"), compresslevel=6, mtime=0)}
