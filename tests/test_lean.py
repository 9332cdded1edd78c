"""The step and its passes from the block of steps run without the hooks (``nnprofile.assembly.lean``), on a stored
recording (tests/events/lean.json.gz: train_validate.py, 8 kept steps with a validation every 5, then the block):
what the hooks add to the kept steps' functions does not move the step, what the program takes without them does."""

import copy
from types import SimpleNamespace
import os

import pytest

from conftest import ROOT
from nnprofile.assembly import capture_file as events
from nnprofile.assembly.assemble import assemble
from nnprofile.assembly.events import Call
from nnprofile.assembly.passes import group_passes
from nnprofile.render import notes

EVENTS = os.path.join(ROOT, "tests", "events")


def _capture():
    return events.load(os.path.join(EVENTS, "lean.json.gz"))


def _shifted(capture, delay, where):
    """The capture with ``delay`` ns added inside every function call ``where(call)`` picks, everything after it moved
    on by as much: calls that took longer, as larger hooks would make them (or a slower program, unhooked)."""
    capture = copy.deepcopy(capture)
    grown = sorted(e.end_ns for e in capture.events if isinstance(e, Call) and where(e))

    def moved(t):
        # each grown call moves what ends at or after its own end
        import bisect

        return t + delay * bisect.bisect_right(grown, t)

    _remap(capture, moved)
    return capture


def _remap(capture, at):
    """Every time in ``capture`` taken to ``at(time)``, in place."""
    for e in capture.events:
        for name in ("start_ns", "end_ns", "entered_ns", "at_ns"):
            if getattr(e, name, None) is not None:
                setattr(e, name, at(getattr(e, name)))
    capture.excluded = [(at(x), at(y)) for x, y in capture.excluded]
    capture.waits = [(at(t), x, y) for t, x, y in capture.waits]
    capture.pass_calls = [(at(x), at(y), ph, site) for x, y, ph, site in capture.pass_calls]
    capture.stopped_ns = at(capture.stopped_ns)


def _figures(capture):
    a = assemble(capture, capture.costs, "train_validate.py")
    [step] = a.sections[-1].entries_of("step")
    loss = next(s for s in a.sections if s.name == "loss")
    [forward] = loss.entries_of("forward_all")
    [lean] = [n for n in a.notes if n.kind == "lean_step"]
    return a, step, forward, lean


def _in_steps(a, capture, numbers):
    """Whether a call falls in one of the steps numbered ``numbers`` (from 1)."""
    from nnprofile.assembly.assemble import replay
    from nnprofile.assembly.passes import group_passes
    from nnprofile.assembly.steps import bounds

    loop = replay(capture.events, group_passes(capture.events, capture.sites))
    spans = bounds(loop, loop.rule(), capture.started_ns, capture.stopped_ns)
    return lambda e: any(spans[n - 1][0] <= e.start_ns < spans[n - 1][1] for n in numbers)


def test_the_block_without_hooks_sets_the_step_and_says_so():
    a, step, forward, lean = _figures(_capture())
    assert a.plain_steps[0] == a.kept_steps[-1] + 1  # the block follows the kept steps
    assert len(lean.figures["plain_steps"]) >= 3 and lean.figures["typical"] >= 3
    assert 0 < lean.figures["factors"]["loss forward"] <= 1.5
    text = notes.text(lean)
    assert "without the function hooks" in text and "loss forward" in text


def test_what_the_hooks_add_to_the_kept_steps_functions_does_not_move_the_step():
    """100 us more in every function of the kept steps' ordinary steps (none with the validation): an estimate of the
    hooks' cost would read them longer; the plain steps' figures stand, and the step and loss's passes with them."""
    capture = _capture()
    a, step, forward, _ = _figures(capture)
    vpred = next(g for g in a.graphs if g.name == "vpred")
    ordinary = [n for n in a.kept_steps if not vpred.passes[n - 1]]  # (the validation runs every 5 iterations)
    assert 3 <= len(ordinary) < len(a.kept_steps)
    in_steps = _in_steps(a, capture, ordinary)
    in_pass = {id(c) for p in group_passes(capture.events, capture.sites) for c in p.calls}
    inflated = _shifted(capture, 100_000, lambda e: id(e) in in_pass and in_steps(e))
    b, step2, forward2, _ = _figures(inflated)
    rounds = [a.kept_steps.index(n) for n in ordinary]

    def mean(entry):
        values = entry.values()
        return sum(values[r] for r in rounds) / len(rounds)

    functions = sum(1 for e in capture.events if id(e) in in_pass and in_steps(e))
    added = 100_000 * functions / len(ordinary)  # ns a step
    assert added > 0.2 * mean(step)  # what was added is no small part of the step
    assert mean(step2) == pytest.approx(mean(step), rel=0.02)
    assert forward2.stats.mean == pytest.approx(forward.stats.mean, rel=0.05)


def test_what_the_program_takes_longer_without_the_hooks_moves_the_step_by_as_much():
    """50 us more in each plain step where its passes run (between zero_grad and weight_decay): the kept steps' figure
    moves by as much."""
    capture = _capture()
    a, step, _, lean = _figures(capture)
    plain = lean.figures["plain_steps"]
    decays = [
        e
        for e in capture.events
        if type(e).__name__ == "SolverCall" and e.method == "weight_decay" and _in_steps(a, capture, a.plain_steps)(e)
    ]
    assert len(decays) >= len(plain)
    slower = copy.deepcopy(capture)
    moved = sorted(u.start_ns for u in decays)

    def at(t):
        import bisect

        return t + 50_000 * bisect.bisect_right(moved, t)

    _remap(slower, at)
    _, step2, _, lean2 = _figures(slower)
    assert lean2.figures["step_ms"] == pytest.approx(lean.figures["step_ms"] + 0.05, abs=0.002)
    vpred = next(g for g in a.graphs if g.name == "vpred")
    rounds = [k for k, n in enumerate(a.kept_steps) if not vpred.passes[n - 1]]
    moved_by = [step2.values()[r] - step.values()[r] for r in rounds]
    assert sum(moved_by) / len(moved_by) == pytest.approx(50_000, rel=0.05)


def test_a_pass_the_program_times_longer_without_the_hooks_moves_that_pass_by_as_much():
    """50 us more inside each forward pass the plain steps' own code timed (``Capture.pass_calls``): loss's
    forward_all moves by as much (it is the program's calls' own time, not a share of a gap), and the step with it."""
    capture = _capture()
    a, step, forward, lean = _figures(capture)
    assert "forward" in lean.figures["timed"]
    first_plain = min(lean.figures["plain_steps"])
    spans = _spans(capture)
    start = spans[first_plain - 2][0]  # (the block from the step before the first used)
    inside = [(s, e) for s, e, ph, _ in capture.pass_calls if ph == "forward" and s >= start]
    assert len(inside) >= len(lean.figures["plain_steps"])
    ends = sorted(e for _, e in inside)
    slower = copy.deepcopy(capture)

    def at(t):
        import bisect

        return t + 50_000 * bisect.bisect_right(ends, t)  # a call's own end moves with it, its start does not

    _remap(slower, at)
    _, step2, forward2, lean2 = _figures(slower)
    assert forward2.stats.mean == pytest.approx(forward.stats.mean + 50_000, rel=0.03)
    assert lean2.figures["step_ms"] == pytest.approx(lean.figures["step_ms"] + 0.05, abs=0.002)
    # every kept step moves with its forward passes, those with a validation (another shape: estimated) too
    vpred = next(g for g in a.graphs if g.name == "vpred")
    other = [r for r, n in enumerate(a.kept_steps) if vpred.passes[n - 1]]
    assert other
    for r in other:  # (the gaps' scales move a little too, as in every step)
        moved = forward2.values()[r] - forward.values()[r]
        assert moved > 0 and 0.9 * moved <= step2.values()[r] - step.values()[r] <= 1.2 * moved


def _spans(capture):
    from nnprofile.assembly.assemble import replay
    from nnprofile.assembly.steps import bounds

    loop = replay(capture.events, group_passes(capture.events, capture.sites))
    return bounds(loop, loop.rule(), capture.started_ns, capture.stopped_ns)


def test_where_too_few_steps_ran_without_the_hooks_the_estimate_stands_and_is_said():
    """A recording whose program ended before the block (tests/events/gan.json.gz: 5 kept steps, none after): the
    figures are the estimate, and the note says by how much it took off a step."""
    capture = events.load(os.path.join(EVENTS, "gan.json.gz"))
    a = assemble(capture, capture.costs, "gan.py")
    assert not [n for n in a.notes if n.kind == "lean_step"]
    [said] = [n for n in a.notes if n.kind == "hooks_estimated"]
    assert said.figures["plain_steps"] == len(a.plain_steps) < said.figures["needed"]
    assert said.figures["off_ms"] > 0  # the hooks' cost as estimated, taken off
    assert "as estimated (" in notes.text(said) and "without them" in notes.text(said)


def test_waits_read_longer_than_a_plain_call_never_make_a_figure_negative():
    """Readings that say the thread waited longer inside each plain update than the update took (interpolated wait
    readings can): the call counts as nothing, never as less, and every sample stays a time."""
    capture = _capture()
    a, _, _, lean = _figures(capture)
    inside = _in_steps(a, capture, lean.figures["plain_steps"])
    updates = [e for e in capture.events if type(e).__name__ == "SolverCall" and e.method == "update" and inside(e)]
    assert updates
    readings, waited = [], 0
    for u in sorted(updates, key=lambda e: e.start_ns):
        readings.append((u.start_ns, waited, 0))
        waited += 10 * (u.end_ns - u.start_ns)
        readings.append((u.end_ns, waited, 0))
    capture.waits = readings
    b = assemble(capture, capture.costs, "train_validate.py")
    samples = [x for s in b.sections for e in s.entries for x in e.samples_ns]
    assert samples and min(samples) >= 0


SAMPLED = """\
import numpy as np, nnabla as nn, nnabla.function as NF, nnabla.functions as F, nnabla.parametric_functions as PF
import nnabla.solvers as S
x = nn.Variable((8, 4)); loss = F.mean(PF.affine(x, 3))
s = S.Sgd(); s.set_parameters(nn.get_parameters())
a = nn.NdArray.from_numpy_array(np.random.rand(200, 50).astype(np.float32))
made = []
for i in range(45):
    x.d = np.random.randn(8, 4); loss.forward(); s.zero_grad(); loss.backward(); s.update()
    for k in range(40):
        b = F.sum(a ** 2, axis=1)
    made.append(type(NF.PowScalar(nn.get_current_context(), 2.0, False)).__name__)
print(" ".join(made))
"""


@pytest.mark.slow
def test_the_steps_without_the_hooks_are_neither_sampled_nor_proxied(tmp_path):
    """The steps run without the hooks stand for the program alone: no sample is taken in them (the sampler's signal
    costs more than its handler's time) and NNabla's own function objects are made (a proxy costs each call)."""
    from conftest import run_cli

    (tmp_path / "train.py").write_text(SAMPLED)
    out = tmp_path / "out"
    # (20 steps kept: the sampler's samples in them, on a loaded machine too)
    args = ("run", "-q", "--active", "20", "--save-events", "-o", str(out), str(tmp_path / "train.py"))
    run = run_cli(*args, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    made = run.stdout.split()
    capture = events.load(str(out / "events.json.gz"))
    a = assemble(capture, capture.costs, "train.py")
    assert a.plain_steps and a.kept_steps
    # (step k ends at its update: the object made after it is the k-th printed)
    assert {made[k - 1] for k in a.kept_steps[:-1]} == {"TimedFunction"}
    assert "TimedFunction" not in {made[k - 1] for k in a.plain_steps[:-1]}
    kept, plain = _in_steps(a, capture, a.kept_steps), _in_steps(a, capture, a.plain_steps)
    assert not [t for t, _ in capture.samples if plain(SimpleNamespace(start_ns=t))]
    if capture.sampled:  # (where this machine lets the sampler run)
        assert [t for t, _ in capture.samples if kept(SimpleNamespace(start_ns=t))]


def test_the_first_plain_step_is_left_out_only_where_three_others_are_there():
    """The first step without the hooks carries what they left in the caches: left out, unless a short program ran
    only 3 such steps (its first then stands, as the figures need 3); no other is left out for the step before it."""
    from nnprofile.assembly.lean import MIN_STEPS, _steps

    assert MIN_STEPS == 3
    per_step, cut, passes = [[] for _ in range(9)], [[(0, 1)] for _ in range(9)], [[] for _ in range(9)]
    kept = [0, 1, 2, 3, 4]
    typical, lean, _ = _steps(per_step, passes, cut, kept, [5, 6, 7, 8], lambda j: 1.0)
    assert typical == kept and lean == [6, 7, 8]
    assert _steps(per_step, passes, cut, kept, [5, 6, 7], lambda j: 1.0)[1] == [5, 6, 7]
    assert _steps(per_step, passes, cut, kept, [5, 6], lambda j: 1.0) is None
    # the step after a validation (step 7: the hooks on past the loop) stays: its cold caches are the program's own
    per_step, cut, passes = [[] for _ in range(10)], [[(0, 1)] for _ in range(10)], [[] for _ in range(10)]
    assert _steps(per_step, passes, cut, kept, [5, 6, 8, 9], lambda j: 1.0)[1] == [6, 8, 9]


EPOCHS = """\
import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.monitor import Monitor, MonitorSeries
from nnabla.utils.data_iterator import data_iterator_simple

data = data_iterator_simple(lambda i: (np.full(4, i % 7, dtype=np.float32),), 32, 8, shuffle=False)
x = nn.Variable((8, 4))
loss = F.mean(PF.affine(x, 2, name="fc") ** 2)
solver = S.Sgd(0.01)
solver.set_parameters(nn.get_parameters())
series = MonitorSeries("loss", Monitor("mon"), interval=1)


def epoch(n):
    for i in range(n):
        x.d = data.next()[0]
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()


def validate(e):
    series.add(e, float(loss.d))  # past the loop: the hooks go back on
    loss.forward()


for e in range(16):
    epoch(4)
    validate(e)
"""


def test_back_in_the_loop_after_work_between_epochs_the_hooks_are_off_again(tmp_path):
    """A validation between epochs is past the loop, where the hooks go back on in the steps without them (what a
    program does after its last step is recorded); the next epoch's first step is the program's own again, run
    without them (after a validation it is often the slowest: the instrument counts it, so must the plain steps)."""
    from conftest import run_cli

    (tmp_path / "train.py").write_text(EPOCHS)
    out = tmp_path / "out"
    run = run_cli("run", "-q", "--save-events", "-o", str(out), str(tmp_path / "train.py"), cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    capture = events.load(str(out / "events.json.gz"))
    a = assemble(capture, capture.costs, "train.py")
    assert len(a.plain_steps) >= 10
    states = _hook_states(capture)[max(a.kept_steps) :]  # (the steps after the kept ones)
    assert "mixed" in states  # (the validations, with the hooks on past the loop)
    assert "hooked" not in states, states


def _hook_states(capture):
    from nnprofile.assembly import hookfit, steps as step_rule
    from nnprofile.assembly.assemble import find_steps
    from nnprofile.assembly.events import end_of, start_of
    from nnprofile.assembly.tree import children, top_level, with_children

    top, kids = top_level(capture.events), children(capture.events)
    last = max([end_of(e) for e in top] + [capture.started_ns])
    bounds = find_steps(capture, top, group_passes(top, capture.sites), last)[0]
    return hookfit.hook_states([with_children(s, kids) for s in step_rule.split(top, bounds, start_of)])


@pytest.mark.slow
def test_a_validation_in_the_loop_among_the_steps_without_the_hooks_is_recorded(tmp_path):
    """A validation every 8 iterations, in the loop's body: those at iterations 24 and 32 fall among the steps
    without the hooks after the 20 kept ones. Its first pass puts the hooks back on (``passtimes``): its passes are
    recorded, and its steps are neither kept nor without the hooks; the steps around them stay without them."""
    from conftest import run_cli

    out = tmp_path / "out"
    script = os.path.join(ROOT, "tests", "scripts", "train_validate.py")
    args = ("--iterations", "40", "--val-interval", "8", "--val-iter", "2")
    run = run_cli("run", "-q", "--active", "20", "--save-events", "-o", str(out), script, *args, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    capture = events.load(str(out / "events.json.gz"))
    a = assemble(capture, capture.costs, "train_validate.py")
    assert a.kept_steps == list(range(2, 22))
    assert {23, 24, 26, 32, 34} <= set(a.plain_steps) and not {25, 33} & set(a.plain_steps)
    states = _hook_states(capture)
    assert states[24] == states[32] == "mixed"  # (steps 25 and 33, numbered from 1)
    vpred = [g for g in a.graphs if any(g.passes[i] for i in range(1, 21)) and not g.passes[2]]
    assert len(vpred) == 1 and [len(vpred[0].passes[i]) for i in (24, 32)] == [2, 2]  # its 2 batches each time


AFTER = (
    EPOCHS.replace("for e in range(16):", "for e in range(2):").replace("epoch(4)", "epoch(8)")
    + """
y = nn.Variable((1, 4))
test = F.mean(PF.affine(F.tanh(PF.affine(y, 6, name="t1")), 3, name="t2"))
for k in range(5):
    y.d = data.next()[0][:1]
    test.forward()
"""
)


def test_a_test_after_the_loop_that_cuts_the_steps_without_the_hooks_short_is_recorded_whole(tmp_path):
    """Two epochs of 8 steps, 5 kept: the steps without the hooks are cut short by the loop's end, after a validation
    between the epochs had the hooks back on. The first function of the test after the loop ends the last step
    there; the hooks stay on through it (once, they were switched off for a next step and on again inside that
    pass, and the test read as two graphs, one pass too many: lstm-lm's 46 of 45)."""
    from conftest import run_cli

    (tmp_path / "train.py").write_text(AFTER)
    out = tmp_path / "out"
    run = run_cli("run", "-q", "--active", "5", "-o", str(out), str(tmp_path / "train.py"), cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    from nnprofile import load

    profile = load(str(out))
    assert profile.header.kept_steps == [2, 3, 4, 5, 6] and profile.header.plain_steps
    tests = [s for s in profile.sections if s.kind == "graph" and s.name != "loss"]
    assert [(s.info.get("passes"), s.info.get("outside")) for s in tests] == [({"forward": 5}, "after the last step")]
    assert {e.layer_type for e in tests[0].entries if e.phase == "forward_function"} == {"Affine", "Tanh", "Mean"}


def test_what_a_kept_step_of_another_shape_takes_beyond_its_passes_is_scaled_as_the_typical_steps_rest():
    """1 ms more of the program's own work in each kept step with a validation, right after its validation's pass (no
    pass, no call of the program's): that step's figure moves by the typical steps' rest factor times 1 ms, as their
    own rest moved from the hooked steps to the plain ones (MAML's validation step read 1.33 times its own)."""
    capture = _capture()
    a, step, _, lean = _figures(capture)
    factor = lean.figures["rest"]
    assert 0.0 < factor < 0.98  # (the hooks slow the program's own work around its passes)
    vpred = next(g for g in a.graphs if g.name == "vpred")
    other = [r for r, n in enumerate(a.kept_steps) if vpred.passes[n - 1]]
    assert other and len(other) < len(a.kept_steps)
    after = sorted(max(c.end_ns for p in vpred.passes[a.kept_steps[r] - 1] for c in p.calls) for r in other)
    slower = copy.deepcopy(capture)

    def at(t):
        import bisect

        return t + 1_000_000 * bisect.bisect_left(after, t)  # (what ends there stays, what follows moves)

    _remap(slower, at)
    _, step2, _, lean2 = _figures(slower)
    assert lean2.figures["rest"] == pytest.approx(factor, rel=1e-6)  # (the typical steps are as they were)
    for r in other:
        assert step2.values()[r] - step.values()[r] == pytest.approx(factor * 1_000_000, rel=0.02)
    typical = [r for r in range(len(a.kept_steps)) if r not in other]
    assert all(step2.values()[r] == pytest.approx(step.values()[r], rel=1e-6) for r in typical)
