"""result.json: a profile saved as data, so that any run can be re-rendered or compared.

The file holds every entry with all its samples; statistics are written too,
for readers of the file, but recomputed from the samples on loading. Files
carry a format version; older versions keep loading (missing fields take
their defaults).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, fields
from typing import Any, Dict

from .errors import ProfileError
from .result import Entry, Profile, Section

FILENAME = "result.json"
FORMAT = "nnprofile-result"
VERSION = 1
_ENTRY_FIELDS = {f.name for f in fields(Entry)}


def to_dict(profile: Profile) -> Dict[str, Any]:
    sections = []
    for s in profile.sections:
        entries = []
        for e in s.entries:
            d = {k: v for k, v in asdict(e).items() if k in _ENTRY_FIELDS}
            st = e.stats
            d["stats_ns"] = {"n": st.n, "mean": st.mean, "median": st.median, "std": st.std,
                             "min": st.min, "max": st.max, "p90": st.p90, "rse": st.rse}
            entries.append(d)
        sections.append({"kind": s.kind, "name": s.name, "network": s.network,
                         "complete": s.complete, "entries": entries})
    return {"format": FORMAT, "version": VERSION, "header": profile.header, "notes": profile.notes,
            "complete": profile.complete, "failure": profile.failure, "sections": sections}


def from_dict(data: Dict[str, Any]) -> Profile:
    if data.get("format") != FORMAT:
        raise ProfileError("not an nnprofile result (format %r)" % data.get("format"))
    version = data.get("version", 0)
    if version > VERSION:
        raise ProfileError("result format version %s is newer than this nnprofile reads (%d); "
                           "upgrade nnprofile" % (version, VERSION))
    sections = []
    for s in data.get("sections", []):
        entries = [Entry(**{k: v for k, v in e.items() if k in _ENTRY_FIELDS}) for e in s.get("entries", [])]
        sections.append(Section(kind=s["kind"], name=s["name"], network=s["network"],
                                entries=entries, complete=s.get("complete", False)))
    return Profile(header=dict(data.get("header", {})), notes=list(data.get("notes", [])),
                   sections=sections, complete=data.get("complete", False), failure=data.get("failure"))


def save(profile: Profile, outdir: str) -> str:
    path = os.path.join(outdir, FILENAME)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(to_dict(profile), f, indent=1)
        f.write("\n")
    os.replace(tmp, path)  # never a half-written result
    return path


def load(path: str) -> Profile:
    """Load OUTDIR/result.json, or the file itself."""
    if os.path.isdir(path):
        path = os.path.join(path, FILENAME)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ProfileError("%s: no such result (profile into that folder first)" % path)
    except (OSError, ValueError) as e:
        raise ProfileError("%s: not a readable result file (%s)" % (path, e))
    try:
        return from_dict(data)
    except ProfileError as e:
        raise ProfileError("%s: %s" % (path, e))
    except (KeyError, TypeError, AttributeError) as e:
        raise ProfileError("%s: damaged result file (%s: %s)" % (path, type(e).__name__, e))
