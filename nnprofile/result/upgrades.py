"""The versions of result.json, and the steps that bring a file of any earlier version to the current one.

Versions:
  1. the first release: header, notes, sections of entries with their samples.
  2. sections carry ``speed_levels`` (the machine's speed per round); entries carry ``layer_id``, the layer's
     identity within its section (forward and backward entries of one function share it), ``round_sizes`` and
     ``dropped_rounds`` (samples are taken in rounds; the reported mean is that of
     the round means, rounds the machine ran slow in left out), ``run_means`` (with
     --repeat, each process's mean), the memory a layer holds (``output_bytes``, ``parameter_bytes``,
     ``gradient_bytes``, ``input_gradient_bytes``) and sections the step's ``memory`` and ``reference_ns`` (a
     fixed workload per round); profiles carry a ``timeline`` (recorded programs and graph mode: events of the
     active steps) and sections may be of kind ``script`` and ``complete`` (False for an entry cut short by a
     failure or Ctrl-C).
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
     take the timing's own cost off the cost left in it (``kept_cost_ns``, per call); a section says what other
     work took of it (``interference``: the measured time, the time waited, the switches, the samples
     interrupted). Earlier results were measured without it: none of these, and their figures stand as they
     were.
 11. notes as data: each note is an object, its ``kind`` and its ``figures`` (``nnprofile.result.notes``), said in
     words by the renderers; so are the header's ``sampling`` (how each figure was sampled) and a program's
     ``steps`` (how its steps were found: kind ``steps_`` and the rule, ``marks``, ``iterations``, ``updates``,
     ``passes``, ``one``, ``none``) and ``schedule``. An earlier note, its words, is a note of kind ``text``. A
     project's section keeps its plan as figures (``sampling``: ``shared_from``, ``partial_rounds``,
     ``partial_short_of`` beside ``lean`` and ``layer_every``), no longer in words (``plan``: an earlier file's);
     a merged view's ``ranks.clock.method`` is a note (``clock_one_host``, ``clock_collective``,
     ``clock_not_aligned``; an earlier file's words are read as a note of kind ``text``).
 12. what a program's parts are: its step's section lists its ``solvers`` (each one's label, class, parameters and
     their scopes, updates per step, the graphs it trains), a graph built under auto_forward says where
     (``built_at``: the program's lines its first build was made from), and a forward-only graph that is no
     evaluation (an acting policy, an inference, a demonstration before training) has the role ``forward``.
     Earlier results have none of these; their forward-only graphs stay evaluations.
 13. a program's header says what nnprofile's own work outside the program's calls took (``own_cost``: seconds
     by kind); earlier results have none.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from ..base.errors import ProfileError
from .notes import Note

VERSION = 14


def _v1_to_v2(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 1 had no layer identity (a layer's name stood for it, as it was unique per section
    then) and took each entry's samples in one burst (one round)."""
    for s in data.get("sections", []):
        ids: Dict[str, int] = {}
        for e in s.get("entries", []):
            if e.get("layer") is not None and e.get("phase") in (
                "setup_function",
                "forward_function",
                "backward_function",
            ):
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


def _v10_to_v11(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 11 made the notes data (``nnprofile.result.notes``: a kind and its figures, said in words by the
    renderers), and so the header's ``sampling`` and a program's ``steps`` and ``schedule``; an earlier one was its
    words, kept as a note of kind "text"."""
    notes = data.get("notes", [])
    if isinstance(notes, list):  # anything else is refused as the file is read
        data["notes"] = [Note.text(n).to_json() if isinstance(n, str) else n for n in notes]
    header = data.get("header")
    for name in ("sampling", "steps", "schedule"):
        if isinstance(header, dict) and isinstance(header.get(name), str):
            header[name] = Note.text(header[name]).to_json()
    return data


def _v11_to_v12(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 11 said no solvers, no place a dynamic graph was built and no role ``forward``: nothing to change."""
    return data


def _v12_to_v13(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 12 did not say what nnprofile's own work took: nothing to change."""
    return data


def _v13_to_v14(data: Dict[str, Any]) -> Dict[str, Any]:
    """Version 13 did not say where the program's own lines waited (a line's fifth item), nor a solver's class's
    module: nothing to change (none said)."""
    return data


UPGRADES: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
    9: _v9_to_v10,
    10: _v10_to_v11,
    11: _v11_to_v12,
    12: _v12_to_v13,
    13: _v13_to_v14,
}


def upgrade(data: Dict[str, Any]) -> Dict[str, Any]:
    """A result of any earlier version, brought to the current one step by step."""
    version = data.get("version", 1)
    if not isinstance(version, int) or version < 1:
        raise ProfileError("unknown result format version %r" % version)
    if version > VERSION:
        raise ProfileError(
            "result format version %s is newer than this nnprofile reads (%d); upgrade nnprofile" % (version, VERSION)
        )
    while version < VERSION:
        data = UPGRADES[version](data)
        version += 1
        data["version"] = version
    return data
