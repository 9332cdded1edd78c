"""The ranks' results (``OUTDIR/rank-K/result.json``) merged into one view.

``collect`` finds the ranks' results, waiting a bounded time for those not
there yet, and leaves out a result another launch left in the folder.
``merge`` makes one ``Profile`` of them:

- every section pooled over the ranks (``nnprofile.merging.profiles``, the
  rule ``--repeat`` pools by): an entry's samples are every rank's calls, its
  rounds every rank's steps, rank after rank (the figure is the average
  rank's), the steps any rank ran slow in left out, and ``rank_means`` keeps
  each rank's own mean for the spread across ranks;
- ``ranks``: each rank's step parts per step (input, forward, backward,
  update, monitor, communication, the step), over the steps every rank
  recorded, and the step's longest collective (when each rank entered and
  left it): what ``nnprofile.analysis.ranks`` reads;
- one timeline with every rank's steps, passes and calls (each rank's layers
  stay in its own trace), on aligned clocks: on one host the ranks share the
  monotonic clock, so the recorded clock origins place them; across hosts the
  end of the first collective of the first common step, which every rank
  leaves together, is taken as one instant.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..analysis.breakdown import round_totals
from ..analysis.ranks import STORED_PARTS
from ..base.choices import PART_OF_PHASE, SCRIPT
from ..base.errors import ProfileError
from ..recording.launcher import RANK_DIR
from ..result import Profile, file as result_file
from ..result.header import ProgramHeader, as_merged
from ..result.notes import Note
from ..result.ranks import Collective, RankRow, RanksView
from ..result.checks import first_events
from ..result.timeline import TimelineEvent
from .profiles import left_out, pool_profiles

DEFAULT_WAIT = 60.0  # seconds rank 0 waits at the end for the other ranks' results
POLL_SECONDS = 0.1
_RANK_DIR = re.compile(r"^rank-(\d+)$")


@dataclass
class Found:
    """The ranks' results in a folder."""

    profiles: Dict[int, Profile]
    size: int
    missing: List[int] = field(default_factory=list)
    stale: List[int] = field(default_factory=list)  # a result of another launch: left out
    launcher: str = ""
    launch: Optional[str] = None


# No world has more ranks (the largest MPI jobs have about a million): a rank number or world size beyond it is no
# run's, and nothing is sized by it.
MAX_RANKS = 1 << 20


def rank_folders(outdir: str) -> Dict[int, str]:
    """rank -> OUTDIR/rank-K for every rank folder there; a rank beyond MAX_RANKS is refused, named."""
    out = {}
    try:
        names = os.listdir(outdir)
    except OSError:
        return {}
    for name in names:
        m = _RANK_DIR.match(name)
        if m and os.path.isdir(os.path.join(outdir, name)):
            if len(m.group(1)) > 7 or int(m.group(1)) >= MAX_RANKS:
                raise ProfileError(
                    "%s: rank-%s... is no rank of a run (at most %d ranks)" % (outdir, m.group(1)[:12], MAX_RANKS)
                )
            out[int(m.group(1))] = os.path.join(outdir, name)
    return out


def spans(ranks: List[int], most: int = 8) -> str:
    """Ranks as a short text: runs as ranges ("1 to 99999"), at most ``most`` items, the rest counted."""
    items: List[str] = []
    ordered = sorted(ranks)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        items.append(str(ordered[i]) if i == j else "%d%s%d" % (ordered[i], ", " if j == i + 1 else " to ", ordered[j]))
        i = j + 1
    if len(items) > most:
        return "%s and %d more" % (", ".join(items[:most]), len(items) - most)
    return ", ".join(items)


def collect(
    outdir: str,
    size: Optional[int] = None,
    wait: float = 0.0,
    launch: Optional[str] = None,
    not_before: Optional[float] = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Found:
    """The ranks' results in ``outdir``, waiting up to ``wait`` seconds for the missing ones.

    ``size``: the world's size (else the largest any result states); ``launch``: only results of this
    launch count (else rank 0's, or the newest); ``not_before``: where no launch is known, only results
    of a recording started after this time (seconds since the epoch) count.
    """
    deadline = clock() + wait
    loaded: Dict[str, Tuple[float, Profile]] = {}
    while True:
        present: Dict[int, Profile] = {}
        for rank, folder in sorted(rank_folders(outdir).items()):
            path = os.path.join(folder, result_file.FILENAME)
            try:
                stamp = os.stat(path).st_mtime
            except OSError:
                continue
            cached = loaded.get(path)
            if cached is None or cached[0] != stamp:
                try:
                    loaded[path] = (stamp, result_file.load(path))
                except ProfileError:
                    continue  # being replaced, or damaged: not there yet
            present[rank] = loaded[path][1]
        found = _sort_out(present, size, launch, not_before)
        if not found.missing or clock() >= deadline:
            return found
        sleep(POLL_SECONDS)


def _sort_out(
    present: Dict[int, Profile], size: Optional[int], launch: Optional[str], not_before: Optional[float]
) -> Found:
    if launch is None and present:
        first = present.get(0) or max(present.values(), key=lambda p: _rank(p).started_unix or 0.0)
        launch = _rank(first).launch
    profiles, stale = {}, []
    for rank, p in present.items():
        theirs = _rank(p).launch
        if launch is not None and theirs is not None and theirs != launch:
            stale.append(rank)
        elif launch is None and not_before is not None and (_rank(p).started_unix or 0.0) < not_before:
            stale.append(rank)
        else:
            profiles[rank] = p
    n = size or max([_rank(p).world_size or 0 for p in profiles.values()] + [max(profiles, default=-1) + 1])
    if n > MAX_RANKS:
        raise ProfileError("a world of %d ranks: no run's (at most %d)" % (n, MAX_RANKS))
    launcher = next((_rank(p).launcher for p in profiles.values() if _rank(p).launcher), "")
    return Found(profiles, n, [k for k in range(n) if k not in profiles], sorted(stale), launcher, launch)


def _rank(profile: Profile) -> ProgramHeader:
    """A rank's header (a result that is not a recorded program's states no rank: an empty one)."""
    return profile.header if isinstance(profile.header, ProgramHeader) else ProgramHeader()


def merge(found: Found) -> Profile:
    """One profile of the ranks' results (see the module's text)."""
    if not found.profiles:
        raise ProfileError("no rank's result to merge")
    ranks = sorted(found.profiles)
    profiles = [found.profiles[k] for k in ranks]
    base = _rank(profiles[0])
    for k, p in zip(ranks[1:], profiles[1:]):  # the ranks of one run: one program, one world
        h = _rank(p)
        if h.project != base.project or (h.world_size or 0) != (base.world_size or 0):
            raise ProfileError(
                "rank %d's result is of another run (%s, %s ranks) than rank %d's (%s, %s ranks): "
                "nothing to merge" % (k, h.project, h.world_size, ranks[0], base.project, base.world_size)
            )
    hosts = [_rank(p).host for p in profiles]
    header = as_merged(
        base,
        world_size=found.size,
        ranks_merged=ranks,
        hosts=sorted(set(hosts)),
        sampling=Note("sampling_pooled", {"of": base.sampling.to_json(), "ranks": list(ranks)}),
    )
    notes = _merged_notes(ranks, profiles)
    failure = _failure(found, ranks, profiles)
    sections = pool_profiles(profiles, base.drift_threshold, "rank_means")
    notes += left_out(profiles, sections, "rank", ranks)
    merged = Profile(
        header=header,
        notes=notes,
        sections=sections,
        complete=not found.missing and all(p.complete for p in profiles),
        failure=failure,
    )
    steps = _common_steps(profiles)
    offsets, method = align_clocks(profiles, hosts, steps)
    merged.timeline = _timeline(ranks, profiles, offsets)
    merged.ranks = RanksView(
        size=found.size,
        launcher=found.launcher,
        launch=found.launch,
        missing=found.missing,
        stale=found.stale,
        clock={"method": method.to_json(), "offsets_ns": offsets},
        steps=steps,
        ranks=[_rank_data(k, p, host, steps, offset) for k, p, host, offset in zip(ranks, profiles, hosts, offsets)],
    )
    return merged


def _merged_notes(ranks: Sequence[int], profiles: Sequence[Profile]) -> List[Note]:
    """The ranks' notes, each once, and where each rank's own result is."""
    notes: List[Note] = []
    for p in profiles:
        notes += [n for n in p.notes if n not in notes]
    folders = [RANK_DIR % k for k in (ranks[:1] if len(ranks) == 1 else (ranks[0], ranks[-1]))]
    notes.append(Note("merged_ranks", {"ranks": len(ranks), "folders": folders}))
    return notes


def _failure(found: Found, ranks: Sequence[int], profiles: Sequence[Profile]) -> Optional[str]:
    """What the merged view says went wrong: ranks without a result, else the first rank's failure."""
    if found.missing:
        return "no result from rank%s %s of %d" % (
            "s" if len(found.missing) > 1 else "",
            spans(found.missing),
            found.size,
        )
    return next(("rank %d: %s" % (k, p.failure) for k, p in zip(ranks, profiles) if p.failure), None)


# -- sections --------------------------------------------------------------------------

# -- the ranks' steps --------------------------------------------------------------------


def rank_steps(profile: Profile) -> List[int]:
    """The numbers of the steps a rank kept (its active steps, after those it skipped)."""
    script = next((s for s in profile.sections if s.kind == SCRIPT), None)
    step = script.entries_of("step") if script is not None else []
    if not step:
        return []
    header = _rank(profile)
    if header.kept_steps:
        return list(header.kept_steps)
    return [header.skipped_steps + 1 + i for i in range(len(round_totals(step[0])))]  # (results before version 7)


def _common_steps(profiles: Sequence[Profile]) -> List[int]:
    common: Optional[set] = None
    for p in profiles:
        mine = set(rank_steps(p))
        common = mine if common is None else common & mine
    return sorted(common or ())


def _rank_data(rank: int, profile: Profile, host: str, steps: List[int], offset: int) -> RankRow:
    mine = rank_steps(profile)
    index = [mine.index(s) for s in steps]
    parts: Dict[str, List[float]] = {p: [0.0] * len(steps) for p in STORED_PARTS}
    step_ns = [0.0] * len(steps)
    for s in profile.sections:
        if s.outside_steps:  # (its rounds are the stretches outside the steps, not steps)
            continue
        for e in s.entries:
            part = PART_OF_PHASE.get(e.phase)
            if part is None and e.phase != "step":
                continue
            totals = round_totals(e)
            for j, i in enumerate(index):
                value = totals[i] if i < len(totals) else 0.0
                if part is None:
                    step_ns[j] = value
                else:
                    parts[part][j] += value
    return RankRow(
        rank=rank,
        host=host,
        complete=profile.complete,
        failure=profile.failure,
        step_ns=[round(x, 1) for x in step_ns],
        parts_ns={p: [round(x, 1) for x in v] for p, v in parts.items()},
        collective=_collectives(profile, steps, offset),
    )


def _step_spans(profile: Profile) -> Dict[int, Tuple[int, int]]:
    return {int(e.args.get("step", 0)): (e.start, e.end) for e in profile.timeline if e.cat == "step"}


def _collectives(profile: Profile, steps: List[int], offset: int) -> Optional[Collective]:
    """Each step's longest collective: when the rank entered and left it, on the aligned clock."""
    spans = _step_spans(profile)
    comm = [e for e in profile.timeline if e.cat == "communication"]
    if not comm:
        return None
    enter: List[Optional[int]] = []
    leave: List[Optional[int]] = []
    name = None
    for step in steps:
        span = spans.get(step)
        inside = [e for e in comm if span is not None and span[0] <= e.start and e.end <= span[1]]
        if not inside:
            enter.append(None)
            leave.append(None)
            continue
        longest = max(inside, key=lambda e: e.end - e.start)
        name = name or longest.name
        enter.append(longest.start + offset)
        leave.append(longest.end + offset)
    return Collective(name, enter, leave)


# -- clocks and the timeline --------------------------------------------------------------


def align_clocks(profiles: Sequence[Profile], hosts: Sequence[str], steps: Sequence[int]) -> Tuple[List[int], Note]:
    """What to add to each rank's timeline times to put every rank on one clock, and how it was found."""
    origins = [_rank(p).clock_origin_ns for p in profiles]
    if len(set(hosts)) == 1 and all(o is not None for o in origins):
        known = [int(o or 0) for o in origins]
        least = min(known)
        return (
            [o - least for o in known],
            Note("clock_one_host", {"host": hosts[0] or "unknown"}),
        )
    if steps:
        ends = []
        for p in profiles:
            span = _step_spans(p).get(steps[0])
            first = sorted(
                (
                    e
                    for e in p.timeline
                    if e.cat == "communication" and span is not None and span[0] <= e.start <= span[1]
                ),
                key=lambda e: e.start,
            )
            ends.append((first[0].name, first[0].end) if first else None)
        if all(x is not None for x in ends) and len({x[0] for x in ends if x is not None}) == 1:
            latest = max(x[1] for x in ends if x is not None)
            return (
                [latest - x[1] for x in ends if x is not None],
                Note(
                    "clock_collective",
                    {"collective": ends[0][0] if ends[0] else "", "step": steps[0], "hosts": len(set(hosts))},
                ),
            )
    return [0] * len(profiles), Note("clock_not_aligned", {"hosts": len(set(hosts))})


def _timeline(ranks: Sequence[int], profiles: Sequence[Profile], offsets: Sequence[int]) -> List[TimelineEvent]:
    """Every rank's steps, passes, solver, input and communication events (not its layers), aligned."""
    events = [
        e.shifted(offset, rank)
        for rank, p, offset in zip(ranks, profiles, offsets)
        for e in p.timeline
        if not e.is_call
    ]  # a layer's call: in the rank's own trace
    return first_events(events)
