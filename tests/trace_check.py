"""A small validator of Chrome Trace Event files, as Perfetto UI and chrome://tracing read them."""

import gzip
import json

REQUIRED = {
    "X": ("name", "ph", "ts", "dur", "pid", "tid"),
    "M": ("name", "ph", "pid", "tid", "args"),
    "C": ("name", "ph", "ts", "pid", "args"),
}


def load(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def check(document):
    """Assert the format's required fields and proper nesting per thread; returns the complete events."""
    events = document["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert e["ph"] in REQUIRED, e
        for key in REQUIRED[e["ph"]]:
            assert key in e, (key, e)
    complete = [e for e in events if e["ph"] == "X"]
    threads = {}
    for e in complete:
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        threads.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in threads.values():
        # In whole nanoseconds, as a reader converts: children strictly inside their parents.
        spans = sorted(
            ((round(e["ts"] * 1000), -round((e["ts"] + e["dur"]) * 1000), e) for e in evs), key=lambda s: (s[0], s[1])
        )
        stack = []
        for start, neg_end, e in spans:
            end = -neg_end
            while stack and start >= stack[-1][1]:
                stack.pop()
            if stack:
                assert end <= stack[-1][1], "%s overlaps %s without nesting" % (e["name"], stack[-1][2]["name"])
            stack.append((start, end, e))
    return complete


def children(events, parent):
    """The events directly inside ``parent`` (inside it, and inside no other event inside it)."""
    inside = [
        e
        for e in events
        if e is not parent and parent["ts"] <= e["ts"] and e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + 1e-6
    ]
    return [
        e
        for e in inside
        if not any(
            o is not e
            and o["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= o["ts"] + o["dur"] + 1e-6
            and o["dur"] > e["dur"]
            for o in inside
        )
    ]
