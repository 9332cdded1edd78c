"""Several profiles of the same program or project made one: the one pooling rule, and ``--repeat``.

An entry's samples are every source's calls and its rounds every source's rounds, source after
source, each sample less its own source's timing overhead; the machine's usual speed is then
taken over all the pooled rounds and the rounds (of any source) that ran slower than it are left
out, as within one run (``nnprofile.result.drift``); a recorded program's runs keep every step,
as one run does. Each entry keeps every source's own mean: ``run_means`` for fresh processes
(``--repeat``), ``rank_means`` for the ranks of a distributed run (``nnprofile.merging.ranks``).

``--repeat N``: a whole run can land on a slow machine, and nothing inside that run can tell;
across N fresh processes (``nnprofile.merging.fresh``, as pyperf spawns workers) it shows.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Callable, Dict, List, Optional, Sequence

from ..base.errors import ProfileError
from ..base.options import ProfileOptions
from ..result import Entry, Profile, Section
from ..result.drift import drift_over
from ..result.header import ProgramHeader, ProjectHeader
from ..result.notes import Note
from .fresh import profile_in_fresh_process


def _rounds(section: Optional[Section]) -> int:
    if section is None:
        return 0
    return max((len(e.round_sizes) or 1 for e in section.entries), default=0)


def pool_sections(same: Sequence[Optional[Section]], threshold: float, means: str, keep_rare: bool = False) -> Section:
    """One section of the same section of several sources (None where a source lacks it); ``means``:
    which field keeps each source's own mean, "run_means" (present sources only) or "rank_means" (None
    where absent); ``keep_rare``: no round left out (runs of a recorded program, as each run keeps its steps)."""
    present = [s for s in same if s is not None]
    if not present:
        raise ProfileError("no section to pool")
    base = present[0]
    labels: List[str] = [e.label for e in base.entries]
    for s in present[1:]:
        labels += [e.label for e in s.entries if e.label not in labels]
    by_label: List[Dict[str, Entry]] = [{e.label: e for e in s.entries} if s is not None else {} for s in same]
    rounds = [_rounds(s) for s in same]
    pooled = []
    for label in labels:
        first = next(t[label] for t in by_label if label in t)
        samples: List[float] = []
        sizes: List[int] = []
        own_means: List[Optional[float]] = []
        for table, n in zip(by_label, rounds):
            e = table.get(label)
            if e is None:
                sizes += [0] * n
                own_means.append(None)
                continue
            own = e.round_sizes or [len(e.samples_ns)]
            samples += [max(0.0, x - e.overhead_ns) for x in e.samples_ns] if e.overhead_ns else list(e.samples_ns)
            sizes += own + [0] * (n - len(own))
            own_means.append(e.mean_ms)
        kept = (
            {"run_means": [m for m in own_means if m is not None]}
            if means == "run_means"
            else {"rank_means": own_means}
        )
        pooled.append(
            dataclasses.replace(
                first,
                samples_ns=samples,
                round_sizes=sizes,
                dropped_rounds=[],
                overhead_ns=0.0,
                complete=all(t[label].complete for t in by_label if label in t),
                **kept,
            )
        )
    section = dataclasses.replace(
        base,
        entries=pooled,
        complete=all(s.complete for s in present) and len(present) == len(same),
        memory=copy.deepcopy(base.memory),
        reference_ns=[x for s in present for x in s.reference_ns],
    )
    drift_over([section], sum(rounds), threshold, keep_rare=keep_rare)
    return section


def pool_profiles(profiles: Sequence[Profile], threshold: float, means: str, keep_rare: bool = False) -> List[Section]:
    """Every section of the first profile (then those only later ones hold), pooled over the profiles."""
    keys: List[tuple] = []
    for p in profiles:
        keys += [(s.kind, s.name) for s in p.sections if (s.kind, s.name) not in keys]
    by_key = [{(s.kind, s.name): s for s in p.sections} for p in profiles]
    return [pool_sections([t.get(k) for t in by_key], threshold, means, keep_rare) for k in keys]


def left_out(profiles: Sequence[Profile], pooled: Sequence[Section], source: str, numbers: Sequence[int]) -> List[Note]:
    """The sources (``source`` "run" or "rank", and each one's number) every one of whose rounds the pooled
    drift left out: they ran slower than the others throughout, and the pooled figures are the others' (said, not
    hidden)."""
    out = []
    for section in pooled:
        if not section.entries:
            continue
        dropped = set(section.entries[0].dropped_rounds)
        start = 0
        slow = []
        for p, number in zip(profiles, numbers):
            same = next((s for s in p.sections if (s.kind, s.name) == (section.kind, section.name)), None)
            n = _rounds(same)
            if n and all(r in dropped for r in range(start, start + n)):
                slow.append(number)
            start += n
        if slow:
            out.append(Note("left_out", {"section": section.title, "source": source, "numbers": slow}))
    return out


def merge_runs(profiles: Sequence[Profile], threshold: float) -> Profile:
    """One profile from several runs of the same (``--repeat``)."""
    if not profiles:
        raise ProfileError("no runs to merge")
    first = profiles[0]
    pooled = Note("sampling_pooled", {"of": first.header.sampling.to_json(), "runs": len(profiles)})
    header = dataclasses.replace(first.header, sampling=pooled)
    if isinstance(header, ProjectHeader):
        header.repeat = len(profiles)
    # A recorded program's runs keep every step, as each run does: its pooled mean is then the mean of the runs'
    # own means, whose spread the gate reads as the run-to-run part (steps left out of the pool alone once made a
    # pooled 2.4 us forward of two runs whose own means read 6.3 and 5.8 us, and the spread theirs: 6 %).
    sections = pool_profiles(profiles, threshold, "run_means", keep_rare=isinstance(header, ProgramHeader))
    notes = list(first.notes) + left_out(profiles, sections, "run", range(1, len(profiles) + 1))
    return Profile(
        header=header,
        notes=notes,
        sections=sections,
        timeline=list(first.timeline),
        complete=all(p.complete for p in profiles),
        failure=next((p.failure for p in profiles if p.failure), None),
    )


def repeat_profiles(
    files: Sequence[str],
    options: ProfileOptions,
    outdir: str,
    progress: Callable[[str], None] = lambda line: None,
    on_run: Optional[Callable[[int, int], None]] = None,
) -> Profile:
    """Profile ``options.repeat`` times, each a fresh process writing into OUTDIR/runs/<n>/ (``on_run(done,
    total)`` as each starts), and pool the runs."""
    repeat = options.repeat
    profiles = []
    for i in range(1, repeat + 1):
        run_dir = os.path.join(outdir, "runs", str(i))
        progress("Run %d of %d in a fresh process (%s) ..." % (i, repeat, run_dir))
        if on_run is not None:
            on_run(i - 1, repeat)
        profiles.append(profile_in_fresh_process(files, run_dir, options.argv(), "run %d of %d" % (i, repeat)))
    return merge_runs(profiles, options.drift_threshold)
