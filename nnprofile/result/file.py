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
  3. compact, for networks of thousands of entries: each entry on a line of its own, fields at
     their default value left out, and its samples as ``samples_total_ns``, whole nanoseconds per
     sample (each sample times ``calls_per_sample`` calls; the per-call times are these divided by
     it, exactly as measured), where they are whole (else ``samples_ns`` as before). Sections carry
     ``sampling``: what their time budget allowed (rounds, seconds, plan, why sampling stopped).
  4. recorded programs as they are written: a section per graph the program ran (kind ``graph``,
     with ``info``: its name, whether auto_forward made it, the solvers that train it, its forward
     and backward passes per step) and one for the program's step (kind ``script``); entries may
     carry ``source``, where the program created the layer ("train.py:42"). Version 3 files of
     programs (one ``script`` section holding every layer) load as they were.
  5. distributed runs: a merged view of several ranks carries ``ranks`` (the world, each rank's
     step parts per step, how the clocks were aligned; see ``nnprofile.merging.ranks``), its
     entries ``rank_means`` (each rank's mean) and its timeline events their ``rank``; a rank's
     own result states ``rank``, ``world_size``, ``launch``, ``host`` and ``clock_origin_ns`` in
     its header. Earlier files are of one process: empty ``ranks``.
  6. a typed header (``nnprofile.result.header``): its ``kind`` says whose it is, ``project`` (an NNC
     project's profile), ``program`` (a recorded program; version 5 said ``script``) or ``merged``
     (the ranks of a distributed run merged), and each kind names its fields; a field it does not
     name is kept under ``extra``. Earlier headers are sorted by what they hold.
  7. a recorded program's loop as it ran: its header names the steps run without the hooks
     (``plain_steps``, after the kept ones, for what the hooks cost) and the hooks' cost as fitted to
     the program (``hooks_in_program``: the scale per phase read off the gaps of its passes, the
     pairs of steps without and with the hooks); its graphs' sections say what each is for
     (``info["role"]``: trained, backward, feeds, evaluation; ``info["feeds"]``) and which rounds
     are never left out (``info["drift_exempt"]``: steps holding rare work); its step holds the eager
     work (entries of phase ``eager``, functions called on NdArrays, by the program's line).
  8. long trainings in windows: ``windows`` holds each window in a few figures (its steps over the
     whole run, when it ran, its step and parts, its heaviest layers, its folder:
     ``nnprofile.result.windows``); a program's header says the ``schedule`` and which ``window``
     its sections are (0: the only one). Earlier results are one window.
  9. calls inside calls: an entry may list its ``children`` (the calls that ran inside it, each kind
     with its calls per parent call and its mean); a graph that writes parameters has the role
     ``updates`` (``info["writes"]``: the scopes it writes); a program's step may hold ``engine``
     entries, the graph engine's time between a pass's functions; a program's header counts the
     steps the whole run went through (``run_steps``); ``files`` lists the files the run wrote into its
     folder (a later run removes those it does not write again). Earlier results have none of these.
 10. other work on the machine, measured: an entry may list the samples it interrupted (``disturbed``, their
     indexes) with the time it took of each (``taken_ns``: the sample's wall time less the thread's CPU time,
     taken off it in every figure; null where not known: that sample is left out) and the rate it interrupted
     the section's timed work at (``switch_rate``, per ns: the weights of the samples kept where some were left
     out), a step the time it waited for a CPU in each sample (``waited_ns``, taken off), a call too short to
     take the timing's own cost off the cost left in it (``kept_cost_ns``, per call); a section says what other work took of it (``interference``: the measured time, the time waited,
     the switches, the samples interrupted). Earlier results were measured without it: none of these, and their
     figures stand as they were.
"""
from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import MISSING, fields
from typing import Any, Callable, Dict, List, Optional, Type

from ..base.errors import ProfileError
from ..base.outdir import MAX_RECORD_BYTES, write_whole
from .checks import check_fields, declared
from .header import header_from_dict
from ..base.buffers import StepMemory
from ..base.records import R
from .details import Sampling, SectionInfo
from .ranks import RanksView
from .model import Entry, Interference, Profile, Section
from .timeline import TimelineEvent
from .windows import WindowSummary

FILENAME = "result.json"
FORMAT = "nnprofile-result"
VERSION = 10
_ENTRY_FIELDS = {f.name for f in fields(Entry)}
_ENTRY_ORDER = [f.name for f in fields(Entry)]
# Defaults of the entry's fields: a field at its default is left out of the file.
_ENTRY_DEFAULTS: Dict[str, Any] = {}
for _f in fields(Entry):
    if _f.default is not MISSING:
        _ENTRY_DEFAULTS[_f.name] = _f.default
    elif _f.default_factory is not MISSING:
        _ENTRY_DEFAULTS[_f.name] = _f.default_factory()


def _sample_totals(samples: List[float], calls: int) -> Optional[List[int]]:
    """Each sample's whole-nanosecond total over its calls, when that gives the samples back exactly."""
    totals = [int(round(x * calls)) for x in samples]
    if all(t / calls == x for t, x in zip(totals, samples)):
        return totals
    return None


def entry_dict(e: Entry) -> Dict[str, Any]:
    """An entry as the file holds it (version 3): compact, and exact."""
    d: Dict[str, Any] = {}
    for k in _ENTRY_ORDER:  # getattr, not asdict: asdict deep-copies every list of every entry
        v = getattr(e, k)
        if k == "samples_ns":
            continue
        if k in _ENTRY_DEFAULTS and v == _ENTRY_DEFAULTS[k] and k not in ("label", "phase"):
            continue
        d[k] = v
    totals = _sample_totals(e.samples_ns, e.calls_per_sample)
    if totals is not None:
        d["samples_total_ns"] = totals
    else:
        d["samples_ns"] = e.samples_ns
    st = e.stats
    d["stats_ns"] = {"n": st.n, "mean": round(st.mean, 3), "median": round(st.median, 3),
                     "std": round(st.std, 3), "min": round(st.min, 3), "max": round(st.max, 3),
                     "p90": round(st.p90, 3), "rse": round(st.rse, 6) if st.rse_known else None}
    return d


# A sample longer than this (a day) is no time a function took: a corrupt or forged file.
MAX_SAMPLE_NS = 86_400e9


_ENTRY_TYPES = declared(Entry)
_WINDOW_TYPES = declared(WindowSummary)
_EVENT_TYPES = {"name": "str", "cat": "str", "start": "int", "end": "int", "args": "Dict[str, Any]",
                "rank": "Optional[int]"}
_CHILD_TYPES = {"label": "str", "type": "str", "calls": "float", "mean_ms": "float"}


def _record(value: Any, types: Dict[str, str], where: str) -> Dict[str, Any]:
    """A record of a list (a window, an event, a child): an object whose fields hold their types, all present."""
    if not isinstance(value, dict) or any(name not in value for name in types if not types[name].startswith(
            "Optional") and name not in ("args", "parts", "layers", "complete", "folder", "step_error_ms")):
        raise ProfileError("%s: not a record with %s" % (where, ", ".join(sorted(types))[:120]))
    check_fields(types, value, where)
    return value
_SECTION_TYPES = declared(Section)
_PROFILE_TYPES = declared(Profile)


def _entry_from_dict(e: Dict[str, Any], where: str = "an entry") -> Entry:
    if not isinstance(e, dict) or not isinstance(e.get("label"), str) or not isinstance(e.get("phase"), str):
        raise ProfileError("%s: an entry without a label and a phase" % where)
    fields_ = {k: v for k, v in e.items() if k in _ENTRY_FIELDS}
    where = "%s, entry %r" % (where, e["label"][:80])
    check_fields(_ENTRY_TYPES, fields_, where, skip=("samples_ns", "taken_ns", "waited_ns"))
    for k, child in enumerate(fields_.get("children", [])):
        _record(child, _CHILD_TYPES, "%s, child %d" % (where, k + 1))
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
        raise ProfileError("%s: round_sizes count %d samples, the entry holds %d"
                           % (where, sum(fields_["round_sizes"]), len(fields_["samples_ns"])))
    disturbed = fields_.get("disturbed", [])
    if not isinstance(disturbed, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                  and 0 <= i < len(fields_["samples_ns"]) for i in disturbed):
        raise ProfileError("%s: disturbed must list the indexes of samples it holds" % where)
    taken = fields_.get("taken_ns", [])
    if not isinstance(taken, list) or len(taken) > len(disturbed) or not all(
            t is None or (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
                          and 0 <= t <= MAX_SAMPLE_NS) for t in taken):
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


def _interference(d: Any, where: str) -> Optional[Interference]:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ProfileError("%s: interference must be an object" % where)
    try:
        found = Interference.from_dict(d)
    except (TypeError, ValueError) as e:
        raise ProfileError("%s: interference holds what is no count or time (%s)" % (where, e))
    if found.timed_ns < 0 or (found.waited_ns is not None and found.waited_ns < 0) or found.switches < 0 \
            or not 0 <= found.disturbed <= max(found.samples, 0):
        raise ProfileError("%s: interference holds negative times or counts, or more samples interrupted than taken"
                           % where)
    return found


def _samples(values: Any, where: str, name: str) -> List[float]:
    """Samples as a result may hold them: finite numbers of 0 or more, below a day; else the field is named."""
    if not isinstance(values, list):
        raise ProfileError("%s: %s must be a list of numbers" % (where, name))
    out = []
    for x in values:
        # (an int is compared before it is made a float: 10**400 is no float)
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= MAX_SAMPLE_NS or \
                not math.isfinite(x):
            raise ProfileError("%s: %s holds %s, not a time in nanoseconds (finite, 0 or more, under a day)"
                               % (where, name, repr(x)[:40]))
        out.append(float(x))
    return out


def to_dict(profile: Profile) -> Dict[str, Any]:
    sections = []
    for s in profile.sections:
        sections.append({"kind": s.kind, "name": s.name, "network": s.network,
                         "complete": s.complete, "speed_levels": s.speed_levels, "memory": s.memory.to_json(),
                         "reference_ns": s.reference_ns, "sampling": s.sampling.to_json(), "info": s.info.to_json(),
                         "interference": s.interference.to_dict() if s.interference is not None else None,
                         "entries": [entry_dict(e) for e in s.entries]})
    return {"format": FORMAT, "version": VERSION, "header": profile.header.to_dict(), "notes": profile.notes,
            "complete": profile.complete, "failure": profile.failure, "ranks": profile.ranks.to_json(),
            "windows": [w.to_dict() for w in profile.windows], "files": list(profile.files),
            "sections": sections, "timeline": [e.to_dict() for e in profile.timeline]}


def dumps(profile: Profile) -> str:
    """The file's text: readable at the top, one line per entry and per timeline event below."""
    data = to_dict(profile)
    out = ["{"]
    for key in ("format", "version", "header", "notes", "complete", "failure", "files"):
        out.append(" %s: %s," % (json.dumps(key), json.dumps(data[key], indent=1).replace("\n", "\n ")))
    out.append(' "ranks": %s,' % _ranks_text(data["ranks"]))
    out.append(' "windows": [%s],' % ",\n".join(("\n  " if i == 0 else "  ") + json.dumps(w, separators=(",", ":"))
                                                for i, w in enumerate(data["windows"])))
    out.append(' "sections": [')
    for i, section in enumerate(data["sections"]):
        entries = section.pop("entries")
        head = json.dumps(section, separators=(",", ":"))[:-1]
        out.append("  %s,\"entries\":[" % head)
        out.append(",\n".join("   " + json.dumps(e, separators=(",", ":")) for e in entries))
        out.append("  ]}" + ("," if i + 1 < len(data["sections"]) else ""))
    out.append(" ],")
    out.append(' "timeline": [')
    out.append(",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in data["timeline"]))
    out.append(" ]")
    out.append("}")
    return "\n".join(line for line in out if line) + "\n"


def _ranks_text(ranks: Dict[str, Any]) -> str:
    """The ranks block: its top readable, one line per rank."""
    if not ranks:
        return "{}"
    head = {k: v for k, v in ranks.items() if k != "ranks"}
    rows = ",\n   ".join(json.dumps(r, separators=(",", ":")) for r in ranks.get("ranks", []))
    top = json.dumps(head, separators=(",", ":"))[:-1]
    return "%s%s\n  \"ranks\":[\n   %s]}" % (top, "," if head else "", rows)


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


def _v2_to_v3(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 3 changed how entries are written, not what they hold; sections gained ``sampling``."""
    for s in data.get("sections", []):
        s.setdefault("sampling", {})
    return data


def _v3_to_v4(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 4 added graph sections (a kind, and their ``info``) and layers' ``source``."""
    for s in data.get("sections", []):
        s.setdefault("info", {})
    return data


def _v4_to_v5(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 5 added the merged view of ranks; earlier results are of one process."""
    data.setdefault("ranks", {})
    return data


def _v5_to_v6(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 6 typed the header: its ``kind`` is read from what it holds (a recorded program said
    ``script``; a merged view names the ranks it merged)."""
    header = dict(data.get("header") or {})
    if header.get("kind") == "script" or header.get("mode") == "record":
        header["kind"] = "merged" if "ranks_merged" in header else "program"
    else:
        header["kind"] = "project"
    data["header"] = header
    return data


def _v6_to_v7(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 7 gave a recorded program's header the steps run without the hooks (``plain_steps``) and the
    hooks' cost as fitted to the program (``hooks_in_program``: ``forward_scale``, ``backward_scale``, the
    pairs' figures), its graphs' sections what each is for (``info["role"]``, ``info["feeds"]``) and the
    rounds never left out (``info["drift_exempt"]``), and its step the eager work (phase ``eager``). An
    earlier program ran every kept step with the hooks, one after the other: nothing to add."""
    header = dict(data.get("header") or {})
    if header.get("kind") in ("program", "merged"):
        header.setdefault("plain_steps", [])
    data["header"] = header
    return data


def _v7_to_v8(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 8 added the windows of a long training (``windows``) and a program header's schedule and
    window; earlier results are one window, its files the folder's own."""
    data.setdefault("windows", [])
    return data


def _v8_to_v9(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 9 added entries' ``children``, the ``updates`` role and ``engine`` entries, all absent before:
    nothing to change."""
    return data


def _v9_to_v10(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 10 added what other work on the machine took (sections' ``interference``; entries' ``disturbed``,
    ``switch_rate`` and ``waited_ns``): earlier results did not measure it, and say so (no interference)."""
    for s in data.get("sections", []):
        s.setdefault("interference", None)
    return data


UPGRADES: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4,
                                                                   4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7,
                                                                   7: _v7_to_v8, 8: _v8_to_v9, 9: _v9_to_v10}


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
        sections.append(Section(kind=s["kind"], name=s["name"], network=s["network"],
                                entries=entries, complete=s.get("complete", False),
                                speed_levels=list(s.get("speed_levels", [])), memory=_typed(StepMemory, s.get("memory", {}), where, "memory"),
                                reference_ns=list(s.get("reference_ns", [])),
                                sampling=_typed(Sampling, s.get("sampling", {}), where, "sampling"),
                                info=_typed(SectionInfo, s.get("info", {}), where, "info"),
                                interference=_interference(s.get("interference"), where)))
    return Profile(header=header_from_dict(dict(data.get("header", {}))), notes=list(data.get("notes", [])),
                   sections=sections, complete=data.get("complete", False), failure=data.get("failure"),
                   timeline=[TimelineEvent.from_dict(_record(e, _EVENT_TYPES, "timeline event %d" % (k + 1)))
                             for k, e in enumerate(data.get("timeline", []))],
                   ranks=_typed(RanksView, data.get("ranks", {}), "the result", "ranks"),
                   windows=[WindowSummary.from_dict(_record(w, _WINDOW_TYPES, "window %d" % (k + 1)))
                            for k, w in enumerate(data.get("windows", []))],
                   files=[str(f) for f in data.get("files", []) if isinstance(f, str)])


def save(profile: Profile, outdir: str) -> str:
    return write_whole(os.path.join(outdir, FILENAME), dumps(profile))  # never a half-written result


def load(path: str) -> Profile:
    """Load OUTDIR/result.json, or the file itself."""
    if os.path.isdir(path):
        path = os.path.join(path, FILENAME)
    try:
        if os.path.getsize(path) > MAX_RECORD_BYTES:
            raise ProfileError("%s: larger than a result file can be (%d MB), not read" % (path, MAX_RECORD_BYTES >> 20))
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
