"""result.json: a profile saved as data, so that any run can be re-rendered or compared.

The file holds every entry with all its samples; statistics are written too,
for readers of the file, but recomputed from the samples on loading. Files
carry a format version. Every change to the format bumps it, and files of
every earlier version keep loading: ``nnprofile.result.upgrades`` turns version
n into n + 1, one step at a time (and lists what each version added), and a
checked-in file of each version is tested.
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import fields
from typing import Any, Dict, List, Optional, Type

from ..base.readable import check_regular
from ..base.errors import ProfileError
from ..base.outdir import MAX_RECORD_BYTES, remember, write_whole
from .checks import WHOLE_LIMIT, bounded, check_fields, declared
from .header import header_from_dict
from ..base.buffers import StepMemory
from ..base.records import R
from .details import Child, Sampling, SectionInfo
from .ranks import RanksView
from .model import Entry, Interference, Profile, Section
from .notes import Note
from .timeline import TimelineEvent
from .upgrades import VERSION, upgrade
from .windows import WindowSummary
from .writing import FORMAT, body_text, dumps  # noqa: F401 (the file's text, written there)

FILENAME = "result.json"
_ENTRY_FIELDS = {f.name for f in fields(Entry)}
# A sample longer than this (a day) is no time a function took: a corrupt or forged file.
MAX_SAMPLE_NS = 86_400e9


_ENTRY_TYPES = declared(Entry)
_WINDOW_TYPES = declared(WindowSummary)
_EVENT_TYPES = {
    "name": "str",
    "cat": "str",
    "start": "int",
    "end": "int",
    "args": "Dict[str, Any]",
    "rank": "Optional[int]",
}
_CHILD_TYPES = {"label": "str", "type": "str", "calls": "float", "mean_ms": "float"}


def _record(value: Any, types: Dict[str, str], where: str) -> Dict[str, Any]:
    """A record of a list (a window, an event, a child): an object whose fields hold their types, all present."""
    if not isinstance(value, dict) or any(
        name not in value
        for name in types
        if not types[name].startswith("Optional")
        and name not in ("args", "parts", "layers", "complete", "folder", "step_error_ms")
    ):
        raise ProfileError("%s: not a record with %s" % (where, ", ".join(sorted(types))[:120]))
    check_fields(types, value, where)
    return value


def _event(e: Any, k: int) -> TimelineEvent:
    """A timeline event, its fields of their types (read as ``_record`` reads a record, at a fraction of its cost:
    a result holds up to ``checks.LIMITS`` of them)."""
    if type(e) is dict:
        name, cat, start, end, args, rank = (e.get(f) for f in ("name", "cat", "start", "end", "args", "rank"))
        if (
            type(name) is str
            and type(cat) is str
            and type(start) is int
            and type(end) is int
            and abs(start) <= WHOLE_LIMIT
            and abs(end) <= WHOLE_LIMIT
            and (args is None or type(args) is dict)
            and (rank is None or (type(rank) is int and abs(rank) <= WHOLE_LIMIT))
        ):
            return TimelineEvent(name, cat, start, end, dict(args or {}), rank)
    return TimelineEvent.from_dict(_record(e, _EVENT_TYPES, "timeline event %d" % (k + 1)))


_SECTION_TYPES = declared(Section)
_PROFILE_TYPES = declared(Profile)


def _entry_from_dict(e: Dict[str, Any], where: str = "an entry") -> Entry:
    if not isinstance(e, dict) or not isinstance(e.get("label"), str) or not isinstance(e.get("phase"), str):
        raise ProfileError("%s: an entry without a label and a phase" % where)
    fields_ = {k: v for k, v in e.items() if k in _ENTRY_FIELDS}
    where = "%s, entry %r" % (where, e["label"][:80])
    check_fields(_ENTRY_TYPES, fields_, where, skip=("samples_ns", "taken_ns", "waited_ns"))
    fields_["children"] = [
        Child.from_json(_record(child, _CHILD_TYPES, "%s, child %d" % (where, k + 1)))
        for k, child in enumerate(fields_.get("children", []))
    ]
    calls = e.get("calls_per_sample", 1)
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
        raise ProfileError("%s: calls_per_sample must be a whole number of 1 or more, not %r" % (where, calls))
    if "samples_total_ns" in e:
        fields_["samples_ns"] = [t / calls for t in _samples(e["samples_total_ns"], where, "samples_total_ns")]
    elif "samples_ns" in e:
        fields_["samples_ns"] = _samples(e["samples_ns"], where, "samples_ns")
    if not fields_.get("samples_ns"):
        raise ProfileError("%s: samples_ns holds no sample (an entry is of at least one)" % where)
    for name in ("round_sizes", "dropped_rounds"):
        value = fields_.get(name, [])
        if not isinstance(value, list) or not all(isinstance(x, int) and x >= 0 for x in value):
            raise ProfileError("%s: %s must be a list of whole numbers of 0 or more" % (where, name))
    if fields_.get("round_sizes") and sum(fields_["round_sizes"]) != len(fields_["samples_ns"]):
        raise ProfileError(
            "%s: round_sizes count %d samples, the entry holds %d"
            % (where, sum(fields_["round_sizes"]), len(fields_["samples_ns"]))
        )
    disturbed = fields_.get("disturbed", [])
    if not isinstance(disturbed, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(fields_["samples_ns"]) for i in disturbed
    ):
        raise ProfileError("%s: disturbed must list the indexes of samples it holds" % where)
    taken = fields_.get("taken_ns", [])
    if (
        not isinstance(taken, list)
        or len(taken) > len(disturbed)
        or not all(
            t is None
            or (
                isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and 0 <= t <= MAX_SAMPLE_NS
            )
            for t in taken
        )
    ):
        raise ProfileError("%s: taken_ns must give each disturbed sample the time taken of it (ns, or null)" % where)
    rate = fields_.get("switch_rate", 0.0)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate < 0:
        raise ProfileError("%s: switch_rate must be a rate of 0 or more, not %r" % (where, rate))
    kept = fields_.get("kept_cost_ns", 0.0)
    if isinstance(kept, bool) or not isinstance(kept, (int, float)) or not 0 <= kept <= MAX_SAMPLE_NS:
        raise ProfileError("%s: kept_cost_ns must be a time of 0 or more, not %r" % (where, kept))
    if "waited_ns" in fields_:
        fields_["waited_ns"] = _samples(fields_["waited_ns"], where, "waited_ns")
    try:
        return Entry(**fields_)
    except TypeError as error:
        raise ProfileError("%s: %s" % (where, error))


def _typed(kind: Type[R], d: Any, where: str, name: str) -> R:
    """A section's typed record (``nnprofile.base.records``) as the file holds it, or one clear error."""
    if not isinstance(d, dict):
        raise ProfileError("%s: %s must be an object" % (where, name))
    try:
        return kind.from_json(d)
    except (TypeError, ValueError, KeyError) as e:
        raise ProfileError("%s: %s holds a field of the wrong kind (%s)" % (where, name, e))


def _notes(data: Any) -> List[Note]:
    """The profile's notes as the file holds them, or one clear error naming the note."""
    if not isinstance(data, list):
        raise ProfileError("the result: notes must be a list")
    out = []
    for k, n in enumerate(data):
        try:
            out.append(Note.from_json(n))
        except ValueError as e:
            raise ProfileError("the result: note %d: %s" % (k + 1, e))
    return out


def _interference(d: Any, where: str) -> Optional[Interference]:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ProfileError("%s: interference must be an object" % where)
    try:
        found = Interference.from_dict(d)
    except (TypeError, ValueError) as e:
        raise ProfileError("%s: interference holds what is no count or time (%s)" % (where, e))
    if (
        found.timed_ns < 0
        or (found.waited_ns is not None and found.waited_ns < 0)
        or found.switches < 0
        or not 0 <= found.disturbed <= max(found.samples, 0)
    ):
        raise ProfileError(
            "%s: interference holds negative times or counts, or more samples interrupted than taken" % where
        )
    return found


def _samples(values: Any, where: str, name: str) -> List[float]:
    """Samples as a result may hold them: finite numbers of 0 or more, below a day; else the field is named."""
    if not isinstance(values, list):
        raise ProfileError("%s: %s must be a list of numbers" % (where, name))
    out = []
    for x in values:
        # (an int is compared before it is made a float: 10**400 is no float)
        if (
            isinstance(x, bool)
            or not isinstance(x, (int, float))
            or not 0 <= x <= MAX_SAMPLE_NS
            or not math.isfinite(x)
        ):
            raise ProfileError(
                "%s: %s holds %s, not a time in nanoseconds (finite, 0 or more, under a day)"
                % (where, name, repr(x)[:40])
            )
        out.append(float(x))
    return out


def _bounds(data: Dict[str, Any]) -> None:
    """Every list of the result within its limit (``checks.LIMITS``), counted before anything is read from them."""
    sections = data.get("sections", [])
    bounded("sections", len(sections))
    entries = [e for s in sections if isinstance(s, dict) for e in _listed(s.get("entries"))]
    bounded("entries", len(entries))
    bounded(
        "samples",
        sum(len(_listed(e.get("samples_total_ns", e.get("samples_ns")))) for e in entries if isinstance(e, dict)),
    )
    for what, key in (("timeline events", "timeline"), ("windows", "windows"), ("notes", "notes")):
        bounded(what, len(_listed(data.get(key))))


def _listed(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def from_dict(data: Dict[str, Any]) -> Profile:
    if data.get("format") != FORMAT:
        raise ProfileError("not an nnprofile result (format %r)" % data.get("format"))
    _bounds(data)
    data = upgrade(copy.deepcopy(data)) if data.get("version") != VERSION else data  # (an upgrade changes it)
    if not isinstance(data.get("header"), dict):
        raise ProfileError("the result has no header (what was profiled, where, how): not a result nnprofile wrote")
    if not isinstance(data.get("sections", []), list):
        raise ProfileError("the result's sections are not a list")
    check_fields(_PROFILE_TYPES, data, "the result")
    sections = []
    for k, s in enumerate(data.get("sections", [])):
        if not isinstance(s, dict) or not all(isinstance(s.get(f), str) for f in ("kind", "name", "network")):
            raise ProfileError("section %d: without its kind, name and network" % (k + 1))
        where = "section %r" % s["name"][:80]
        check_fields(_SECTION_TYPES, s, where)
        entries = [_entry_from_dict(e, where) for e in s.get("entries", [])]
        sections.append(
            Section(
                kind=s["kind"],
                name=s["name"],
                network=s["network"],
                entries=entries,
                complete=s.get("complete", False),
                speed_levels=list(s.get("speed_levels", [])),
                memory=_typed(StepMemory, s.get("memory", {}), where, "memory"),
                reference_ns=list(s.get("reference_ns", [])),
                sampling=_typed(Sampling, s.get("sampling", {}), where, "sampling"),
                info=_typed(SectionInfo, s.get("info", {}), where, "info"),
                interference=_interference(s.get("interference"), where),
            )
        )
    return Profile(
        header=header_from_dict(dict(data.get("header", {}))),
        notes=_notes(data.get("notes", [])),
        sections=sections,
        complete=data.get("complete", False),
        failure=data.get("failure"),
        timeline=[_event(e, k) for k, e in enumerate(data.get("timeline", []))],
        ranks=_typed(RanksView, data.get("ranks", {}), "the result", "ranks"),
        windows=[
            WindowSummary.from_dict(_record(w, _WINDOW_TYPES, "window %d" % (k + 1)))
            for k, w in enumerate(data.get("windows", []))
        ],
        files=[str(f) for f in data.get("files", []) if isinstance(f, str)],
    )


def save(profile: Profile, outdir: str, body: Optional[str] = None) -> str:
    """Write OUTDIR/result.json whole (never a half-written result), remembered with the files it lists (the next
    write into the folder reads them from memory: ``outdir.listed``); ``body``: its sections and timeline, made
    once by ``body_text`` for a record written again with only its head changed."""
    path = write_whole(os.path.join(outdir, FILENAME), dumps(profile, body))
    remember(path, profile.files)
    return path


def load(path: str) -> Profile:
    """Load OUTDIR/result.json, or the file itself."""
    if os.path.isdir(path):
        path = os.path.join(path, FILENAME)
    check_regular(path, "result file")
    try:
        if os.path.getsize(path) > MAX_RECORD_BYTES:
            raise ProfileError(
                "%s: larger than a result file can be (%d MB), not read" % (path, MAX_RECORD_BYTES >> 20)
            )
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ProfileError("%s: no such result (profile into that folder first)" % path)
    except RecursionError:
        raise ProfileError("%s: not a result file (nested deeper than any result)" % path)
    except MemoryError:
        raise ProfileError("%s: not a result file (too large to read)" % path)
    except (OSError, ValueError) as e:
        raise ProfileError("%s: not a readable result file (%s)" % (path, str(e)[:200]))
    try:
        profile = from_dict(data)
        profile.location = os.path.dirname(os.path.abspath(path))
        return profile
    except ProfileError as e:
        raise ProfileError("%s: %s" % (path, e))
    except RecursionError:
        raise ProfileError("%s: not a result file (nested deeper than any result)" % path)
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError) as e:
        raise ProfileError("%s: damaged result file (%s: %s)" % (path, type(e).__name__, str(e)[:200]))
