"""A recording made a profile: the program pipeline's driver, as ``nnprofile.measure.session`` is a project's.

The recorder's events are captured (``capturing``), the hooks' cost of the kinds of call measured where the
program made new ones (``driver``), the capture assembled into sections (``nnprofile.assembly``), and the header
and notes say how the run was recorded. The API (``nnprofile.api.programs.Recording``) calls ``program_profile`` where a
window or the run ends, and writes what it returns.
"""

from __future__ import annotations

import datetime
import platform
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .._version import __version__
from ..assembly.assemble import DRIFT, Assembly, assemble
from ..assembly.events import Capture, Hooks, StepMark
from ..base import machine
from ..base.hookcost import HookCosts
from ..base.schedule import Schedule
from ..result import Profile
from ..result.header import ProgramHeader
from ..result.notes import Note
from .capturing import capture_of


@dataclass
class Run:
    """What a recorded run knows of itself that its profile says: its name and command, how its steps were
    sampled, what could not be recorded, when it started, and its world under a launcher (None: one process)."""

    name: str
    command: str
    schedule: Schedule
    active: int
    skip_first: int
    started_unix: float
    missed: List[Note] = field(default_factory=list)
    world: Optional[Any] = None
    own_cost: Dict[str, float] = field(default_factory=dict)  # nnprofile's own work so far, in s by kind


@dataclass
class Made:
    """A profile and what it was made from: the capture, the hooks' costs as fitted, where its timeline starts."""

    profile: Profile
    capture: Capture
    costs: HookCosts
    origin_ns: int


def program_profile(
    run: Run,
    recorder: Any,
    costs: HookCosts,
    failure: Optional[str],
) -> Made:
    """The profile of what ``recorder`` recorded (its window), ``costs`` the hooks' as measured on entry."""
    capture = capture_of(recorder, costs)
    a, lost = _assembled(capture, costs, run.name)
    header = _header(run, recorder, a, costs)
    if lost is not None:
        failure = failure or lost.figures["error"]
    profile = Profile(
        header=header,
        notes=run_notes(a, list(run.missed), run.skip_first, recorder) + ([lost] if lost is not None else []),
        sections=a.sections,
        complete=failure is None,
        failure=failure,
        timeline=a.timeline,
    )
    return Made(profile, capture, a.costs, a.origin_ns or recorder.window.started_ns)


def _assembled(capture: Capture, costs: HookCosts, name: str) -> Tuple[Assembly, Optional[Note]]:
    """The capture assembled; where nnprofile's own accounting fails on it, an empty assembly and a note that says
    so: the run's header, notes and files are still written (and the events, where asked for), never lost whole."""
    try:
        return assemble(capture, costs, name), None
    except Exception as e:
        error = "nnprofile could not assemble what it recorded (%s: %s)" % (type(e).__name__, str(e)[:200])
        empty = Capture(started_ns=capture.started_ns, stopped_ns=capture.stopped_ns, costs=capture.costs)
        return assemble(empty, costs, name), Note("assembly_failed", {"error": error, "events": len(capture.events)})


def _header(run: Run, recorder: Any, a: Assembly, measured: HookCosts) -> ProgramHeader:
    """How the run was recorded: the steps kept (numbered over the whole run), the hooks' costs, the machine; what
    ran and at which batch, as a project's header says; its rank under a launcher."""
    import nnabla

    costs = a.costs
    offset = recorder.windowing.window_start  # the steps before the window began, counted
    kept, plain = [s + offset for s in a.kept_steps], [s + offset for s in a.plain_steps]
    context = nnabla.get_current_context()
    windowed = run.schedule.windowed or run.schedule.wait
    header = ProgramHeader(
        nnprofile=__version__,
        nnabla=nnabla.__version__,
        project=run.command,
        context=",".join(context.backend) if context.backend else "cpu:float",
        sampling=Note(
            "sampling_steps",
            {
                "windowed": bool(windowed),
                "window": recorder.windowing.window,
                "kept": kept,
                "recorded": offset + a.steps,
                "whole_run": False,
                "skip": a.skip,
                "active": run.active,
                "plain": plain,
            },
        ),
        schedule=schedule_note(run.schedule),
        window=recorder.windowing.window if run.schedule.windowed else 0,
        steps=a.how,
        machine="%s, %s, Python %s" % (platform.node(), platform.machine(), platform.python_version()),
        date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        hook_overhead_ns=round(costs.static_total, 1),
        hook_inside_ns=round(costs.static_inside, 1),
        call_overhead_ns=round(costs.dynamic_total, 1) if "dynamic" in costs.kinds else None,
        call_inside_ns=round(costs.dynamic_inside, 1) if "dynamic" in costs.kinds else None,
        active_steps=a.kept,
        skipped_steps=a.skip,
        chain_hook_overhead_ns=round(measured.static_total, 1),
        kept_steps=kept,
        plain_steps=plain,
        drift_threshold=DRIFT,
        machine_rates=machine.measure(),
        own_cost={k: round(v, 3) for k, v in run.own_cost.items()},
    )
    if a.in_program is not None:
        header.hooks_in_program = {k: round(v, 4) for k, v in a.in_program.items()}
        header.hook_eviction = round(costs.eviction, 4)
    header.implementation_classes = sorted({e.impl_class for s in a.sections for e in s.entries if e.impl_class})
    header.batch_size = next((s.memory.batch_size for s in a.sections if s.memory.batch_size), header.batch_size)
    world = run.world
    if world is not None and world.several:
        header.rank, header.world_size, header.launcher = world.rank, world.size, world.launcher
        header.launch, header.host, header.clock_origin_ns = world.launch, platform.node(), a.origin_ns
        header.started_unix = round(run.started_unix, 3)
    return header


def schedule_note(s: Schedule) -> Note:
    """When the windows were recorded, in torch.profiler's terms (``nnprofile.render.rules`` says it)."""
    if s.on_demand:
        return Note("schedule_on_demand", {"signal": s.signal, "warmup": s.warmup, "active": s.active})
    return Note("schedule", {"wait": s.wait, "warmup": s.warmup, "active": s.active, "repeat": s.repeat})


def _over_the_run(note: Note, offset: int) -> Note:
    """An assembly's note with the steps it names (numbered in its window) numbered over the whole run."""
    if note.kind != "lean_step" or not offset:
        return note
    figures = dict(note.figures, plain_steps=[s + offset for s in note.figures["plain_steps"]])
    return Note(note.kind, figures)


def run_notes(a: Assembly, missed: List[Note], skip_first: int, recorder: Any) -> List[Note]:
    """A recorded run's notes: the assembly's (``a``), what could not be recorded (``missed``), and what the run's
    shape says (fewer steps than set aside, no step found, its work in another thread, nothing recorded). Steps are
    numbered over the whole run, as the header numbers them."""
    offset = recorder.windowing.window_start
    notes = [_over_the_run(n, offset) for n in a.notes] + missed
    if a.skip < skip_first:
        notes.append(Note("skip_shrunk", {"steps": a.steps, "skip_first": skip_first, "skip": a.skip}))
    if a.how.kind == "steps_one":
        notes.append(Note("no_steps_found"))
    if recorder.elsewhere and (not recorder.window.events or a.steps == 0):
        notes.append(Note("other_thread", {"functions": recorder.elsewhere}))
    elif recorder.shared:
        notes.append(Note("hooks_shared", {"functions": recorder.elsewhere}))
    elif not any(not isinstance(e, (Hooks, StepMark)) for e in recorder.window.events):  # (marks alone: no work)
        notes.append(Note("nothing_recorded"))
    return notes
