"""result.json: a profile saved as data, so that any run can be re-rendered or compared.

The file holds every entry with all its samples; statistics are written too,
for readers of the file, but recomputed from the samples on loading. Files
carry a format version. Every change to the format bumps it, and files of
every earlier version keep loading: ``UPGRADES`` turns version n into n + 1,
one step at a time, and a checked-in file of each version is tested.

Versions:
  1. the first release: header, notes, sections of entries with their samples.
  2. sections carry ``speed_levels`` (the machine's speed per round); entries carry ``layer_id``, the layer's identity within its section (forward
     and backward entries of one function share it), ``round_sizes`` and
     ``dropped_rounds`` (samples are taken in rounds; the reported mean is that of
     the round means, rounds the machine ran slow in left out), ``run_means`` (with
     --repeat, each process's mean), the memory a layer holds (``output_bytes``, ``parameter_bytes``,
     ``gradient_bytes``, ``input_gradient_bytes``) and sections the step's ``memory`` and ``reference_ns`` (a fixed workload per round); profiles carry a ``timeline`` (recorded programs and
     graph mode: events of the active steps) and sections may be of kind ``script``
     and ``complete`` (False for an entry cut short by a failure or Ctrl-C).
"""
from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict, fields
from typing import Any, Callable, Dict

from ..errors import ProfileError
from .model import Entry, Profile, Section

FILENAME = "result.json"
FORMAT = "nnprofile-result"
VERSION = 2
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
                         "complete": s.complete, "speed_levels": s.speed_levels, "memory": s.memory,
                         "reference_ns": s.reference_ns,
                         "entries": entries})
    return {"format": FORMAT, "version": VERSION, "header": profile.header, "notes": profile.notes,
            "complete": profile.complete, "failure": profile.failure, "sections": sections,
            "timeline": profile.timeline}


def _v1_to_v2(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 1 had no layer identity (a layer's name stood for it, as it was unique per section
    then) and took each entry's samples in one burst (one round)."""
    for s in data.get("sections", []):
        ids: Dict[str, int] = {}
        for e in s.get("entries", []):
            if e.get("layer") is not None and e.get("phase") in ("setup_function", "forward_function",
                                                                  "backward_function"):
                e["layer_id"] = ids.setdefault(e["layer"], len(ids))
            e.setdefault("round_sizes", [])
            e.setdefault("dropped_rounds", [])
            e.setdefault("complete", True)
            e.setdefault("run_means", [])
        s.setdefault("speed_levels", [])
    return data


UPGRADES: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {1: _v1_to_v2}


def upgrade(data: Dict[str, Any]) -> Dict[str, Any]:
    """A result of any earlier version, brought to the current one step by step."""
    version = data.get("version", 1)
    if not isinstance(version, int) or version < 1:
        raise ProfileError("unknown result format version %r" % version)
    if version > VERSION:
        raise ProfileError("result format version %s is newer than this nnprofile reads (%d); "
                           "upgrade nnprofile" % (version, VERSION))
    while version < VERSION:
        data = UPGRADES[version](data)
        version += 1
        data["version"] = version
    return data


def from_dict(data: Dict[str, Any]) -> Profile:
    if data.get("format") != FORMAT:
        raise ProfileError("not an nnprofile result (format %r)" % data.get("format"))
    data = upgrade(copy.deepcopy(data))
    sections = []
    for s in data.get("sections", []):
        entries = [Entry(**{k: v for k, v in e.items() if k in _ENTRY_FIELDS}) for e in s.get("entries", [])]
        sections.append(Section(kind=s["kind"], name=s["name"], network=s["network"],
                                entries=entries, complete=s.get("complete", False),
                                speed_levels=list(s.get("speed_levels", [])), memory=dict(s.get("memory", {})),
                                reference_ns=list(s.get("reference_ns", []))))
    return Profile(header=dict(data.get("header", {})), notes=list(data.get("notes", [])),
                   sections=sections, complete=data.get("complete", False), failure=data.get("failure"),
                   timeline=list(data.get("timeline", [])))


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
