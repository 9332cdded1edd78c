"""The assembly of a recording, stage by stage, on stored events (tests/events/, made by make.py there) and on
events made by hand: no NNabla runs here, as Holistic Trace Analysis tests its analyses on stored traces.

What a stored file holds was recorded from a program of tests/scripts/; what is asserted is what the
program's structure fixes (its steps, graphs, names, passes per step) and figures computed from the
file's own times.
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from nnprofile.assembly import capture_file as events
from nnprofile.assembly.events import Call, start_of
from nnprofile.assembly.assemble import assemble, replay
from nnprofile.assembly.graphs import split_by_graph
from nnprofile.assembly.passes import group_passes
from nnprofile.assembly.steps import bounds, split
from nnprofile.render import notes

EVENTS = os.path.join(ROOT, "tests", "events")


def load(name):
    return events.load(os.path.join(EVENTS, "%s.json.gz" % name))


def test_a_capture_round_trips_through_its_file(tmp_path):
    capture = load("gan")
    path = events.save(capture, str(tmp_path / "again.json.gz"))
    again = events.load(path)
    assert events.to_dict(again) == events.to_dict(capture)
    first, second = assemble(capture, capture.costs, "gan.py"), assemble(again, again.costs, "gan.py")
    assert [[(e.label, e.samples_ns) for e in s.entries] for s in first.sections] == [
        [(e.label, e.samples_ns) for e in s.entries] for s in second.sections
    ]


@pytest.mark.slow
def test_assembling_a_stored_recording_needs_no_nnabla():
    code = (
        "import sys; from nnprofile.assembly import capture_file as events; "
        "from nnprofile.assembly.assemble import assemble; "
        "c = events.load(%r); a = assemble(c, c.costs, 'x'); "
        "print(len(a.sections), 'nnabla' in sys.modules, 'numpy' in sys.modules)"
        % os.path.join(EVENTS, "train_validate.json.gz")
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "False", "False"]


def test_calls_become_passes_and_passes_graphs():
    capture = load("train_validate")
    passes = group_passes(capture.events, capture.sites)
    names = {p.name for p in passes}
    assert names == {"loss", "vpred"}  # what the program called forward and backward on
    # 13 iterations, 1 forward and 1 backward of 'loss' each; validation at 4, 8, 12 (2 batches) and once after
    assert sum(1 for p in passes if p.name == "loss" and p.phase == "forward") == 13
    assert sum(1 for p in passes if p.name == "loss" and p.phase == "backward") == 13
    assert sum(1 for p in passes if p.name == "vpred") == 3 * 2 + 1
    loop = replay(capture.events, passes)
    rule = loop.rule()
    steps = bounds(loop, rule, capture.started_ns, capture.stopped_ns)
    assert (rule.kind, rule.period, rule.by) == ("updates", 1, "structure") and len(steps) == 13
    per_step = split(capture.events, steps, start_of)
    graphs = split_by_graph(per_step, [group_passes(s, capture.sites) for s in per_step], capture)
    assert [g.name for g in graphs] == ["loss", "vpred"]
    assert [sum(1 for p in g.passes[i] if p.phase == "forward") for g in graphs[1:] for i in range(13)] == [
        0,
        0,
        0,
        0,
        2,
        0,
        0,
        0,
        2,
        0,
        0,
        0,
        2,
    ]


def test_the_stored_classifier_assembles_as_it_ran():
    capture = load("train_validate")
    a = assemble(capture, capture.costs, "train_validate.py")
    assert (a.steps, a.skip, a.kept) == (13, 1, 12)
    loss, vpred, program = a.sections
    assert (loss.name, vpred.name) == ("loss", "vpred") and loss.info["trained_by"] == ["Adam"]
    assert vpred.info["forward_per_step"] == 0.5 and vpred.info["backward_per_step"] == 0
    assert [e.layer for e in loss.entries_of("forward_function")][:3] == ["conv1/conv", "ReLU", "MaxPooling"]
    assert [e.label for e in program.entries][:2] == ["load_dataset (data)", "load_dataset (vdata)"]
    # the final evaluation after the loop is in no step, and said
    [after] = [n for n in a.notes if n.kind == "after_the_loop"]
    assert [(g["graph"], g["passes"]) for g in after.figures["graphs"]] == [("vpred", {"forward": 1})]
    assert str(after).startswith("after the last step") and "graph 'vpred' 1 forward pass," in str(after)


def test_two_solvers_and_their_graphs_are_one_step():
    capture = load("gan")
    a = assemble(capture, capture.costs, "gan.py")
    assert (a.steps, a.kept) == (6, 5)
    assert str(a.how).startswith("solver updates: one step per 2 updates of 2 solvers")
    assert "Adam: gen after the backward of 'loss_gen'" in str(a.how)
    assert [(s.name, s.info.get("trained_by")) for s in a.sections[:2]] == [
        ("loss_gen", ["Adam: gen"]),
        ("loss_dis", ["Adam: dis"]),
    ]


def test_a_static_then_a_dynamic_graph_and_their_solvers():
    capture = load("static_then_dynamic")
    a = assemble(capture, capture.costs, "static_then_dynamic.py")
    static, dynamic = a.sections[:2]
    assert (static.name, dynamic.name) == ("loss", "dyn_loss") and dynamic.info["dynamic"]
    assert str(a.how).startswith(
        "solver updates: one step per update (the updates form no repeating pattern"
    )  # one, then the other
    assert "nnprofile.step()" in str(a.how)
    assert static.info["trained_by"][0].startswith("Adam: line ")
    assert static.info["trained_by"] != dynamic.info["trained_by"]
    assert [e.layer for e in dynamic.entries_of("forward_function")][:2] == ["cnn/conv11/conv", "ReLU"]


def test_the_step_parts_come_from_the_stored_times():
    """The program section's figures are the file's own times, less the stated hook costs, exactly."""
    capture = load("mlp_dynamic")
    a = assemble(capture, capture.costs, "mlp_dynamic.py")
    program = a.sections[-1]
    [step] = program.entries_of("step")
    kept = [
        s
        for s in bounds(
            *(lambda loop: (loop, loop.rule()))(replay(capture.events, group_passes(capture.events, capture.sites))),
            capture.started_ns,
            capture.stopped_ns,
        )
    ][a.skip : a.skip + a.kept]
    assert len(step.samples_ns) == len(kept) == a.kept
    for (start, end), sample in zip(kept, step.samples_ns):
        assert sample <= end - start  # the hooks' cost and nnprofile's own work only ever taken off


@pytest.mark.parametrize("name", ["train_validate", "gan", "static_then_dynamic", "mlp_dynamic"])
def test_every_stored_recording_renders(name, tmp_path):
    """Through the whole house: a profile of a stored recording renders every output."""
    from nnprofile.render import write_all
    from nnprofile.result import Profile

    capture = load(name)
    a = assemble(capture, capture.costs, name + ".py")
    written = write_all(
        Profile(
            header={"kind": "program", "steps": a.how},
            notes=a.notes,
            sections=a.sections,
            complete=True,
            timeline=a.timeline,
        ),
        str(tmp_path),
    )
    assert {os.path.basename(p) for p in written} >= {"profile.log", "result.json", "report.html", "trace.json.gz"}


def _slowed(capture, steps, factor):
    """The capture with every function call of the given steps (indexes) taking ``factor`` times as long, as
    a slow spell of the machine over those steps would make them."""
    import copy

    capture = copy.deepcopy(capture)
    rule_loop = replay(capture.events, group_passes(capture.events, capture.sites))
    spans = bounds(rule_loop, rule_loop.rule(), capture.started_ns, capture.stopped_ns)
    for e in capture.events:
        if isinstance(e, Call) and any(spans[i][0] <= e.start_ns < spans[i][1] for i in steps):
            e.end_ns = e.start_ns + int(factor * (e.end_ns - e.start_ns))
    return capture, spans


def test_a_graph_that_ran_only_in_slow_steps_keeps_its_part():
    """Rule 3: the validation's steps ran slow (1.6x); leaving them out would leave the validation no part.
    They are kept, and said to be; every part counts the same steps, and the parts add up to the step."""
    from nnprofile.analysis import analyze_section
    from nnprofile.result.header import ProgramHeader

    capture = load("train_validate")
    passes = group_passes(capture.events, capture.sites)
    loop = replay(capture.events, passes)
    spans = bounds(loop, loop.rule(), capture.started_ns, capture.stopped_ns)
    validation = sorted(
        {i for p in passes if p.name == "vpred" for i, (a, b) in enumerate(spans) if a <= p.start_ns < b}
    )
    assert validation  # the validations at iterations 4, 8 and 12 fall in steps
    slow, _ = _slowed(capture, validation, 1.6)
    a = assemble(slow, slow.costs, "train_validate.py")
    graphs, program = a.sections[:-1], a.sections[-1]
    vpred = next(s for s in graphs if s.name == "vpred")
    header = ProgramHeader(drift_threshold=0.25)
    step = analyze_section(program, header, graphs).step
    parts = dict(step.parts)
    forward_all = vpred.entries_of("forward_all")[0]
    assert parts["forward (vpred)"] > 0
    assert parts["forward (vpred)"] == pytest.approx(forward_all.per_round_ns() / 1e6, abs=1e-6)
    assert sum(ms for _, ms in step.parts) == pytest.approx(step.step_ms, abs=1e-6)
    kept_rounds = [a.kept_steps.index(i + 1) for i in validation if i + 1 in a.kept_steps]
    assert kept_rounds and set(kept_rounds) <= set(vpred.info.get("drift_exempt", []))
    # every entry leaves out the same rounds
    dropped = {tuple(e.dropped_rounds) for s in a.sections for e in s.entries if e.round_sizes}
    assert len(dropped) == 1 and not set(next(iter(dropped))) & set(kept_rounds)


def test_steps_that_ran_slow_are_kept_in_every_part_and_said():
    """A recording keeps every step it ran: two ordinary steps whose functions ran twice as slow stay in every
    part (no entry leaves a round out), and the parts still add up to the step."""
    from nnprofile.analysis import analyze_section
    from nnprofile.result.header import ProgramHeader

    capture = load("train_validate")
    passes = group_passes(capture.events, capture.sites)
    loop = replay(capture.events, passes)
    spans = bounds(loop, loop.rule(), capture.started_ns, capture.stopped_ns)
    validation = {i for p in passes if p.name == "vpred" for i, (a, b) in enumerate(spans) if a <= p.start_ns < b}
    ordinary = [i for i in range(2, len(spans)) if i not in validation][:2]
    slow, _ = _slowed(capture, ordinary, 2.0)
    a = assemble(slow, slow.costs, "train_validate.py")
    assert not any(e.dropped_rounds for s in a.sections for e in s.entries)
    step = analyze_section(a.sections[-1], ProgramHeader(drift_threshold=0.25), a.sections[:-1]).step
    assert sum(ms for _, ms in step.parts) == pytest.approx(step.step_ms, abs=1e-6)
    forward = a.sections[0].entries_of("forward_function")[0]
    rounds = [a.kept_steps.index(i + 1) for i in ordinary]
    assert all(forward.round_totals()[r] > 0 for r in rounds)  # their calls count, slow as they were


def test_the_hooks_cost_is_fitted_to_the_gaps_of_the_passes_together():
    """Three passes of three 10 us functions; the hooks' cost outside a function is measured at 4 us. The
    gaps hold 6, 6 and 9 us per function (a slow spell in the third): the ratio is that of the sums, 7/4,
    so that the passes' functions and the hooks' cost fill them; a pass with a 1 ms stall is left out."""
    from types import SimpleNamespace as NS
    from nnprofile.assembly.hookfit import gap_ratio

    def a_pass(gap_us, stall_us=0.0):
        calls, t = [], 0.0
        for k in range(3):
            calls.append(NS(start_ns=t, end_ns=t + 10e3))
            t += 10e3 + (gap_us * 1e3 if k < 2 else 0) + (stall_us * 1e3 if k == 0 else 0)
        return NS(dynamic=False, calls=calls, start_ns=0.0, end_ns=calls[-1].end_ns)

    cost = lambda call, p: 4e3
    passes = [a_pass(6), a_pass(6), a_pass(9)]
    assert gap_ratio(passes, cost) == pytest.approx(7 / 4)
    assert gap_ratio(passes + [a_pass(6, stall_us=1000)], cost) == pytest.approx(7 / 4)
    assert gap_ratio([NS(dynamic=False, calls=passes[0].calls[:1], start_ns=0, end_ns=10e3)], cost) is None


def test_the_hooks_cost_between_functions_is_never_more_than_the_time_there():
    """Three 10 us functions with 3 us between them, the hooks' cost outside a function estimated at 5 us: the
    estimate is 2 us a gap above the time there, 4 us in all; where the gaps hold 5 us, none. An auto_forward
    pass's functions run apart (the program's own code between them): no gap of theirs is bounded; nnprofile's own
    work in a gap is no time of the hooks', and a pass of one function has no gap to bound."""
    from nnprofile.assembly.events import DYNAMIC, STATIC, Call
    from nnprofile.assembly.hookfit import overshoot
    from nnprofile.assembly.passes import Pass

    def a_pass(gaps_us, kind=STATIC):
        calls, t = [], 0
        for k, gap in enumerate(list(gaps_us) + [0]):
            calls.append(Call(k, t, t + 10_000, None if kind == DYNAMIC else 1, kind))
            t += 10_000 + gap * 1000
        return Pass("forward", calls, site=None if kind == DYNAMIC else 1)

    cost = lambda call, p: 5e3
    assert overshoot(a_pass([3, 3]), cost) == pytest.approx(2e3 * 2)
    assert overshoot(a_pass([5, 5]), cost) == 0.0
    assert overshoot(a_pass([3, 3]), cost, excluded=[(10e3, 12e3)]) == pytest.approx(4e3 + 2e3)
    assert overshoot(a_pass([3, 50, 3], kind=DYNAMIC), cost) == 0.0
    assert overshoot(a_pass([]), cost) == 0.0


def test_a_graph_run_only_outside_the_steps_scales_the_hooks_cost_to_its_own_passes():
    """The steps' passes set a scale of 2 (their gaps hold twice the measured cost); a test after the training runs
    passes whose gaps hold 1.5 times the cost at that scale: its own scale is 3, per phase, within the bounds, and
    only where the phase ran OWN_PASSES passes."""
    from types import SimpleNamespace as NS
    from nnprofile.assembly.hookfit import OWN_PASSES, own_scale
    from nnprofile.base.hookcost import BACKWARD, HookCosts, MAX_SCALE

    def a_pass(gap_ns):
        calls = [NS(start_ns=k * (10e3 + gap_ns), end_ns=k * (10e3 + gap_ns) + 10e3) for k in range(3)]
        return NS(dynamic=False, calls=calls, start_ns=0.0, end_ns=calls[-1].end_ns)

    costs = HookCosts(static_total=5e3, static_inside=1e3, scale=2.0, backward_scale=1.0)
    at_scale = lambda call, p: 2.0 * 4e3  # what the costs given say outside a function
    passes = [a_pass(1.5 * 8e3)] * OWN_PASSES
    own = own_scale(costs, {"forward": passes, "backward": passes[: OWN_PASSES - 1]}, at_scale)
    assert own.scale == pytest.approx(3.0) and own._scale(BACKWARD) == 1.0  # too few backward passes: kept
    assert own_scale(costs, {"forward": passes[:1]}, at_scale) is None
    assert own_scale(costs, {"forward": [a_pass(10 * 8e3)] * OWN_PASSES}, at_scale).scale == MAX_SCALE


def test_nnprofiles_own_work_is_said_where_it_is_a_fifth_of_the_step_or_more():
    """Kept steps of 100 us (as the step entry reads, its own work taken off), each holding 30 us of nnprofile's own
    work, then 10 us: said with the figures (its median over the kept steps, its share of the step's mean, as every
    output shows the step) where it is 20 % or more; once in one step (a window's files written after its kept
    steps, in the last one's bounds) is no step's doing: not said."""
    from nnprofile.assembly.assemble import own_work_note
    from nnprofile.result import Entry, Section

    program = Section(kind="script", name="p", network="", complete=True)
    program.entries.append(Entry(label="step", phase="step", samples_ns=[100e3, 90e3, 110e3]))
    bounds = [(k * 200_000, k * 200_000 + 130_000) for k in range(3)]
    own = [(a + 50_000, a + 65_000) for a, _ in bounds] + [(a + 70_000, a + 85_000) for a, _ in bounds]
    note = own_work_note(program, bounds, sorted(own))
    assert note.kind == "own_work" and note.figures == {"own_ms": pytest.approx(0.030), "step_ms": pytest.approx(0.1)}
    said = notes.text(note)
    assert said.startswith("nnprofile's own work between the program's calls took 0.030 ms of each kept step")
    assert "30% of the step's 0.100 ms" in said and "'other'" in said
    assert own_work_note(program, bounds, [(a + 50_000, a + 60_000) for a, _ in bounds]) is None  # 10 %
    files = (bounds[-1][1] - 90_000, bounds[-1][1] - 10_000)  # 80 us once: a mean of 27 us a step, a median of 0
    assert own_work_note(program, bounds, [files]) is None
    capture = load("gan")  # a GAN's steps of milliseconds: nothing to say
    assert not [n for n in assemble(capture, capture.costs, "gan").notes if n.kind == "own_work"]


def test_a_loop_of_passes_says_how_many_reads_a_step_holds():
    """Two reads before each forward pass; the first step's reads came before the loop was followed (a
    window opens after them); a step under way has read once. A step holding another number: none."""
    from nnprofile.assembly.steps import Loop

    loop = Loop()
    for k in range(5):
        if k:
            loop.input(0)
            loop.input(1)
        loop.pass_started("forward", ("static", "y"), "y", k)
    loop.input(0)
    rule = loop.rule()
    assert (rule.kind, rule.period) == ("passes", 1)
    assert loop.reads_per_step(rule) == 2 and loop.reads_after(rule) == 1
    loop.input(1)
    loop.input(1)
    loop.pass_started("forward", ("static", "y"), "y", 5)
    assert loop.reads_per_step(loop.rule()) == 0


def test_the_rest_of_a_pass_is_named_by_the_figures_the_outputs_show():
    """Passes of 100 us whose functions take 80 us, one of them held up for 2 ms by other work: by its raw time the
    rest (20 us a pass) is under a twentieth of the passes, by the figures every output shows (the 2 ms taken off)
    a fifth of a pass, and is named; where the rest is 2 us a pass, it is not."""
    from nnprofile.assembly.sections import pass_entries
    from nnprofile.base.series import SeriesTable

    def entries(rest_ns):
        whole, engine = SeriesTable(), SeriesTable()
        for k in range(5):
            whole.next_round()
            engine.next_round()
            held = k == 0
            whole.get("forward").add(80e3 + rest_ns + (2e6 if held else 0.0), held, 2e6 if held else None)
            engine.get("forward").add(rest_ns)
        return {e.phase: e for e in pass_entries(whole, engine, {}, dynamic=False)}

    named = entries(20e3)
    assert named["forward_all"].mean_ms == pytest.approx(0.1) and named["engine"].mean_ms == pytest.approx(0.02)
    assert "engine" not in entries(2e3)


def test_the_rest_of_a_pass_is_named_where_the_functions_entries_cover_too_little_of_it():
    """Passes of 100 us whose rest between functions reads 3 us (under a twentieth of the pass), but whose function's
    entry reads 85 us (a busy machine's calls, each corrected for what other work took, against passes corrected as
    a whole): the Coverage line adds up 85 %, so the rest is named; with the function at 97 us, it is not."""
    from nnprofile.assembly.sections import entry_of, pass_entries
    from nnprofile.base.series import SeriesTable

    def entries(function_ns):
        whole, engine, function = SeriesTable(), SeriesTable(), SeriesTable()
        for table, ns in ((whole, 100e3), (engine, 3e3), (function, function_ns)):
            for _ in range(5):
                table.next_round()
                table.get("forward").add(ns)
        layer = entry_of("fc (Affine)", "forward_function", function.series["forward"])
        return {e.phase for e in pass_entries(whole, engine, {}, False, [layer])}

    assert "engine" in entries(85e3) and "engine" not in entries(97e3)
