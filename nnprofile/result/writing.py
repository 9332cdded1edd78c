"""result.json's text: a profile as the file holds it (``entry_dict``: every entry compact and exact, a field at its
default left out), laid out readable at the top (``dumps``) and one line per entry and per timeline event below
(``body_text``). Reading it back, and its checks, are ``nnprofile.result.file``'s.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any, Dict, Iterator, List, Optional, Sequence

from .model import Entry, Profile
from .notes import Note
from .timeline import SharedArgs, TimelineEvent, json_string
from .upgrades import VERSION

FORMAT = "nnprofile-result"
_ENTRY_ORDER = [f.name for f in fields(Entry)]
# Defaults of the entry's fields: a field at its default is left out of the file.
_ENTRY_DEFAULTS: Dict[str, Any] = {}
for _f in fields(Entry):
    if _f.default is not MISSING:
        _ENTRY_DEFAULTS[_f.name] = _f.default
    elif _f.default_factory is not MISSING:
        _ENTRY_DEFAULTS[_f.name] = _f.default_factory()


def _sample_totals(samples: List[float], calls: int) -> Optional[List[int]]:
    """Each sample's whole-nanosecond total over its calls, when that gives the samples back exactly (numpy's
    rounding and division are Python's, half to even and IEEE's, on every total below 2**53 ns: 104 days; a long
    window holds tens of thousands of samples)."""
    import numpy as np

    values = np.asarray(samples, dtype=np.float64)
    totals = np.rint(values * calls)
    if totals.size and not (np.abs(totals).max() < 2.0**53 and np.array_equal(totals / calls, values)):
        return None
    return [int(t) for t in totals.tolist()]


def entry_dict(e: Entry) -> Dict[str, Any]:
    """An entry as the file holds it (version 3): compact, and exact."""
    d: Dict[str, Any] = {}
    for k in _ENTRY_ORDER:  # getattr, not asdict: asdict deep-copies every list of every entry
        v = getattr(e, k)
        if k == "samples_ns":
            continue
        if k in _ENTRY_DEFAULTS and v == _ENTRY_DEFAULTS[k] and k not in ("label", "phase"):
            continue
        d[k] = [c.to_json() for c in v] if k == "children" else v
    totals = _sample_totals(e.samples_ns, e.calls_per_sample)
    if totals is not None:
        d["samples_total_ns"] = totals
    else:
        d["samples_ns"] = e.samples_ns
    st = e.stats
    d["stats_ns"] = {
        "n": st.n,
        "mean": round(st.mean, 3),
        "median": round(st.median, 3),
        "std": round(st.std, 3),
        "min": round(st.min, 3),
        "max": round(st.max, 3),
        "p90": round(st.p90, 3),
        "rse": round(st.rse, 6) if st.rse_known else None,
    }
    return d


def _sections(profile: Profile) -> List[Dict[str, Any]]:
    sections = []
    for s in profile.sections:
        sections.append(
            {
                "kind": s.kind,
                "name": s.name,
                "network": s.network,
                "complete": s.complete,
                "speed_levels": s.speed_levels,
                "memory": s.memory.to_json(),
                "reference_ns": s.reference_ns,
                "sampling": s.sampling.to_json(),
                "info": s.info.to_json(),
                "interference": s.interference.to_dict() if s.interference is not None else None,
                "entries": [entry_dict(e) for e in s.entries],
            }
        )
    return sections


def _head(profile: Profile) -> Dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "header": profile.header.to_dict(),
        "notes": [Note.from_json(n).to_json() for n in profile.notes],
        "complete": profile.complete,
        "failure": profile.failure,
        "ranks": profile.ranks.to_json(),
        "windows": [w.to_dict() for w in profile.windows],
        "files": list(profile.files),
    }


_COMPACT = json.JSONEncoder(separators=(",", ":"))


def dumps(profile: Profile, body: Optional[str] = None) -> str:
    """The file's text: readable at the top, one line per entry and per timeline event below. ``body``: the
    sections and the timeline as ``body_text`` made them (a record rewritten with only its head changed, as
    ``nnprofile.render.files`` does, makes them once)."""
    data = _head(profile)
    encode = _COMPACT.encode  # (one encoder for the many lines: json.dumps with options makes one a call)
    out = ["{"]
    for key in ("format", "version", "header", "notes", "complete", "failure", "files"):
        out.append(" %s: %s," % (json.dumps(key), json.dumps(data[key], indent=1).replace("\n", "\n ")))
    out.append(' "ranks": %s,' % _ranks_text(data["ranks"]))
    out.append(
        ' "windows": [%s],'
        % ",\n".join(("\n  " if i == 0 else "  ") + encode(w) for i, w in enumerate(data["windows"]))
    )
    out.append(body_text(profile) if body is None else body)
    return "\n".join(line for line in out if line) + "\n"


def body_text(profile: Profile) -> str:
    """The sections, an entry a line, and the timeline, an event a line: the bulk of the file."""
    encode = _COMPACT.encode
    sections = _sections(profile)
    out = [' "sections": [']
    for i, section in enumerate(sections):
        entries = section.pop("entries")
        head = encode(section)[:-1]
        out.append('  %s,"entries":[' % head)
        out.append(",\n".join("   " + encode(e) for e in entries))
        out.append("  ]}" + ("," if i + 1 < len(sections) else ""))
    out.append(" ],")
    out.append(' "timeline": [')
    out.append(",\n".join(_event_lines(profile.timeline)))
    out.append(" ]")
    out.append("}")
    return "\n".join(line for line in out if line)


def _event_lines(timeline: Sequence[TimelineEvent]) -> Iterator[str]:
    """Each event's line, as ``encode(e.to_dict())`` writes it: the arguments a function's calls share encoded once."""
    encode = _COMPACT.encode
    args = SharedArgs(encode)
    for e in timeline:
        yield '  {"name":%s,"cat":%s,"start":%s,"end":%s,"args":%s%s}' % (
            json_string(e.name),
            json_string(e.cat),
            e.start if type(e.start) is int else encode(e.start),
            e.end if type(e.end) is int else encode(e.end),
            args(e.args),
            "" if e.rank is None else ',"rank":%s' % encode(e.rank),
        )


def _ranks_text(ranks: Dict[str, Any]) -> str:
    """The ranks block: its top readable, one line per rank."""
    if not ranks:
        return "{}"
    head = {k: v for k, v in ranks.items() if k != "ranks"}
    rows = ",\n   ".join(json.dumps(r, separators=(",", ":")) for r in ranks.get("ranks", []))
    top = json.dumps(head, separators=(",", ":"))[:-1]
    return '%s%s\n  "ranks":[\n   %s]}' % (top, "," if head else "", rows)
