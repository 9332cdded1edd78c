"""The time budget holds whatever a section's size: the plan, lean rounds, and what the log says of them.

Fake clocks only: every figure here is exact, none depends on the machine's speed.
"""

import math
import sys

import pytest

import nnprofile
from conftest import FakeClock, ROOT
from nnprofile.analysis import analyze, charted_layers
from nnprofile.render.step import chart_note
from nnprofile.render.sampling import plan_words
from nnprofile.analysis.breakdown import LayerTime, base_layers, base_name
from nnprofile.measure.plans import MIN_LAYER_ROUNDS, make_plan
from nnprofile.measure.items import Action, Probe
from nnprofile.measure.rounds import RoundRunner
from nnprofile.measure.sequence import simple
from nnprofile.measure.timing import Sampling, Timer
from nnprofile.render import log
from nnprofile.result import Entry, Profile, Section

sys.path.insert(0, ROOT + "/tests")
from nntxt_writer import lstm_autoencoder  # noqa: E402


def test_a_section_that_fits_is_sampled_as_always():
    plan = make_plan(whole_ns=10e6, layer_normal_ns=5e6, layer_lean_ns=2e6, remaining_ns=1e9, min_rounds=5)
    assert (plan.lean, plan.layer_every, plan.predicted_round_ns) == (False, 1, 15e6)


def test_a_section_too_large_gives_its_layers_rounds_of_their_own():
    # Normal rounds cost 300 ms: five do not fit in 1 s. Lean layer rounds cost 200 ms: three of
    # them (600 ms) leave 400 ms, ten rounds of the 40 ms whole-step entries.
    plan = make_plan(whole_ns=40e6, layer_normal_ns=260e6, layer_lean_ns=200e6, remaining_ns=1e9, min_rounds=5)
    assert plan.lean and plan.layer_every == 10 // MIN_LAYER_ROUNDS
    assert [r for r in range(10) if plan.layer_round(r)] == [0, 3, 6, 9]
    # Not even three lean rounds fit: every round holds the layers, as many as fit.
    plan = make_plan(whole_ns=40e6, layer_normal_ns=2600e6, layer_lean_ns=2000e6, remaining_ns=1e9, min_rounds=5)
    assert plan.lean and plan.layer_every == 1


class Costly:
    """Work that takes a fixed fake time."""

    def __init__(self, clock, ns):
        self.clock, self.ns = clock, ns

    def __call__(self):
        self.clock.advance(self.ns)


def _section(layers, layer_ns, whole_ns, max_seconds, min_rounds=5):
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=1, max_seconds=max_seconds, min_rounds=min_rounds), clock=clock)
    refresh = Action(Costly(clock, whole_ns), layer=True)
    items = [Probe(simple("load_dataset", "load_dataset"), Costly(clock, 1_000_000)), refresh]
    items += [
        Probe(simple("forward_function (L%d : Affine)" % i, "forward_function"), Costly(clock, layer_ns), layer=True)
        for i in range(layers)
    ]
    items += [Probe(simple("forward_all", "forward_all"), Costly(clock, whole_ns))]
    section = Section(kind="optimizer", name="O", network="N")
    RoundRunner(timer, reference=False).run(section, items)
    return section


def test_the_budget_holds_for_a_large_section_and_every_entry_gets_its_samples():
    # 2,000 layer entries of 50 us (with a re-warm and 3 samples: 0.4 s a round) and passes of 20 ms,
    # in a 1.5 s budget: five normal rounds would take 2.1 s; lean layer rounds take 0.22 s.
    section = _section(layers=2000, layer_ns=50_000, whole_ns=20_000_000, max_seconds=1.5)
    s = section.sampling
    assert s["lean"] and s["stopped"] in ("budget", "target")  # constant fake times reach the target
    assert s["seconds"] <= 1.5  # the fake clock: exact
    layers = [e for e in section.entries if e.phase == "forward_function"]
    whole = section.entries_of("forward_all")[0]
    assert len(layers) == 2000
    # The plan gives the layer entries MIN_LAYER_ROUNDS rounds; constant fake times meet the target
    # with two.
    assert all(sum(1 for n in e.round_sizes if n) >= 2 for e in layers)
    assert sum(1 for n in whole.round_sizes if n) > sum(1 for n in layers[0].round_sizes if n)
    # Lean: one sample a round, but for the heaviest entries while that adds at most a tenth.
    lean = [e for e in layers if all(n <= 1 for n in e.round_sizes)]
    assert 0.85 * len(layers) <= len(lean) < len(layers)


def test_when_a_layer_round_no_longer_fits_the_heaviest_short_layers_take_what_the_whole_step_leaves():
    # 400 lean layer entries of 1.2 ms, every fifth 2 ms (0.54 s a layer round), and 20 ms whole-step
    # entries, in 1.5 s: the warm-up and one layer round fit, a second full one does not (a slow
    # spell has the same effect). The layers short of their rounds take what is left, the heaviest
    # first.
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=1, max_seconds=1.5, min_rounds=5), clock=clock)
    items = [
        Probe(simple("load_dataset", "load_dataset"), Costly(clock, 1_000_000)),
        Action(Costly(clock, 20_000_000), layer=True),
    ]
    items += [
        Probe(
            simple("forward_function (L%d : Affine)" % i, "forward_function"),
            Costly(clock, 2_000_000 if i % 5 == 0 else 1_200_000),
            layer=True,
        )
        for i in range(400)
    ]
    items += [Probe(simple("forward_all", "forward_all"), Costly(clock, 20_000_000))]
    section = Section(kind="optimizer", name="O", network="N")
    RoundRunner(timer, reference=False).run(section, items)
    s = section.sampling
    assert s["seconds"] <= 1.5 and s["stopped"] == "budget"  # the fake clock: exact
    assert s.partial_rounds >= 1 and s.partial_short_of == MIN_LAYER_ROUNDS  # (one, and one in the tenth kept back)
    assert "partial layer round" in plan_words(s)
    layers = [e for e in section.entries if e.phase == "forward_function"]
    rounds = [sum(1 for n in e.round_sizes if n) for e in layers]
    heavy = [r for i, r in enumerate(rounds) if i % 5 == 0]
    light = [r for i, r in enumerate(rounds) if i % 5]
    assert set(heavy) == {2}  # every heavy layer got its second round
    assert set(light) == {1, 2} and 0 < light.count(2) < len(light)  # then light ones, as the budget allowed
    # A layer entry with one round has no error at all: its second round comes before the whole-step
    # entries' further rounds, and those are in every round, partial ones too.
    whole = section.entries_of("forward_all")[0]
    assert sum(1 for n in whole.round_sizes if n) == s["rounds"] >= 2
    # The warm-up and the first round took 1.17 s; of the 0.33 s left, the partial round planned to
    # use at most 90% (its cost is a prediction), and the whole-step rounds took what it left.
    assert 1.5e9 - s["seconds"] * 1e9 < 0.1 * 0.33e9 + 21e6


class Spell(Costly):
    """Work that takes twice its time once the fake clock passes ``after_ns``: a slow spell."""

    def __init__(self, clock, ns, after_ns):
        super().__init__(clock, ns)
        self.after_ns = after_ns

    def __call__(self):
        self.clock.advance(self.ns * (2 if self.clock.now_ns() > self.after_ns else 1))


def test_a_slow_spell_in_a_partial_round_stops_it_at_its_deadline_and_the_budget_holds():
    # As above, but everything runs twice as slow from 1.18 s on: the partial round's predictions are
    # short by half, and its deadline, not its plan, ends it.
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=1, max_seconds=1.5, min_rounds=5), clock=clock)
    items = [
        Action(Spell(clock, 20_000_000, 1_180_000_000), layer=True),
        Action(Spell(clock, 20_000_000, 1_180_000_000), layer=True, lean_only=True),
    ]
    items[1:1] = [
        Probe(
            simple("forward_function (L%d : Affine)" % i, "forward_function"),
            Spell(clock, 1_200_000, 1_180_000_000),
            layer=True,
        )
        for i in range(400)
    ]
    items += [Probe(simple("forward_all", "forward_all"), Spell(clock, 20_000_000, 1_180_000_000))]
    items[-2].costs_as = items[-1]  # the settling pass costs what a whole pass does (as in sequence.py)
    section = Section(kind="optimizer", name="O", network="N")
    RoundRunner(timer, reference=False).run(section, items)
    s = section.sampling
    assert s.partial_rounds >= 1 and "partial layer round" in plan_words(s)
    # The fake clock: exact. Without the round's own speed check, 1.75 s.
    assert s["seconds"] <= 1.5
    layers = [e for e in section.entries if e.phase == "forward_function"]
    assert any(sum(1 for n in e.round_sizes if n) == 2 for e in layers)


def test_the_partial_round_is_said_in_the_log():
    clock = FakeClock(steps=(0,))
    timer = Timer(Sampling(warmup=1, max_seconds=1.5, min_rounds=5), clock=clock)
    items = [Action(Costly(clock, 20_000_000), layer=True)]
    items += [
        Probe(simple("forward_function (L%d : Affine)" % i, "forward_function"), Costly(clock, 1_200_000), layer=True)
        for i in range(400)
    ]
    items += [Probe(simple("forward_all", "forward_all"), Costly(clock, 20_000_000))]
    section = Section(kind="optimizer", name="O", network="N")
    RoundRunner(timer, reference=False).run(section, items)
    profile = Profile(header={"target_rse": 0.02}, sections=[section])
    [line] = [
        line for line in log.section_footer(profile, analyze(profile).of(section)) if line.startswith("Sampling:")
    ]
    assert "partial layer round" in line and "rounds with samples per entry: 1 to 3" in line


def test_a_budget_too_small_for_one_round_still_gives_every_entry_a_sample():
    section = _section(layers=500, layer_ns=5_000_000, whole_ns=20_000_000, max_seconds=0.5)
    assert section.sampling["rounds"] == 1
    assert all(e.samples_ns for e in section.entries)
    a = analyze(Profile(header={"target_rse": 0.02}, sections=[section]))
    assert len(a.of(section).precision.thin) == len(section.entries)  # no relative error for any
    lines = log.section_footer(Profile(header={"target_rse": 0.02}), a.of(section))
    [thin] = [line for line in lines if line.startswith("Too few samples")]
    assert "502 of 502 entries, the first: load_dataset" in thin
    assert not [line for line in lines if line.startswith("Missed the")]  # not "missed": unknown


def test_an_entry_with_one_round_has_no_relative_error_anywhere(tmp_path):
    one = Entry(label="forward_all", phase="forward_all", samples_ns=[1000.0, 1100.0], round_sizes=[2, 0, 0])
    two = Entry(label="update (Adam)", phase="update", samples_ns=[1000.0, 1100.0], round_sizes=[1, 1])
    assert not one.stats.rse_known and two.stats.rse_known
    section = Section(kind="executor", name="E", network="N", complete=True, entries=[one, two])
    profile = Profile(header={"target_rse": 0.02}, sections=[section], complete=True)
    frame = profile.to_dataframe()
    assert math.isnan(frame.loc[0, "rse"]) and frame.loc[1, "rse"] == pytest.approx(two.stats.rse)
    from nnprofile.render import write_all

    write_all(profile, str(tmp_path))
    import csv

    with open(tmp_path / "profile_detail.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["rse"] == "" and rows[1]["rse"] != ""
    data = nnprofile.load(tmp_path)
    assert not data.sections[0].entries[0].stats.rse_known


def test_unrolled_copies_sum_into_their_base_layer():
    assert base_name("Affine_2_RecurrentInput[3]") == "Affine_2"
    assert base_name("Concatenate_RecurrentInput[0]") == "Concatenate"
    assert base_name("conv1/conv[2]") == "conv1/conv"
    assert base_name("ReLU_2") == "ReLU_2" and base_name("my_layer") == "my_layer"
    layers = [LayerTime("Affine_RecurrentInput[%d]" % i, "Affine", 1.0, 2.0, 10) for i in range(4)]
    layers.append(LayerTime("Softmax", "Softmax", 0.5, 0.5, None))
    [affine, softmax] = base_layers(layers)
    assert (affine.layer, affine.copies, affine.forward_ms, affine.backward_ms, affine.flops) == (
        "Affine",
        4,
        4.0,
        8.0,
        40,
    )
    assert (softmax.layer, softmax.copies) == ("Softmax", 1)


def test_a_chart_of_many_layers_shows_base_layers_then_the_slowest():
    def entries(names):
        out = []
        for i, name in enumerate(names):
            out.append(
                Entry(
                    label="forward_function (%s : Affine)" % name,
                    phase="forward_function",
                    samples_ns=[1000.0 * (i + 1)],
                    layer=name,
                    layer_id=i,
                    layer_type="Affine",
                )
            )
        return out

    unrolled = [name for t in range(31) for name in ("Affine_RecurrentInput[%d]" % t, "Tanh_RecurrentInput[%d]" % t)]
    a = analyze(Profile(sections=[Section("executor", "E", "N", entries(unrolled), complete=True)])).sections[0]
    shown, note = charted_layers(a)
    assert [l.layer for l in shown] == ["Affine", "Tanh"] and "unrolled copies" in chart_note(note)
    flat = ["L%d" % i for i in range(100)]
    a = analyze(Profile(sections=[Section("executor", "E", "N", entries(flat), complete=True)])).sections[0]
    shown, note = charted_layers(a, limit=10)
    assert [l.layer for l in shown] == ["L%d" % i for i in range(90, 100)]  # the slowest, in forward order
    assert chart_note(note) == "the 10 slowest of 100 layers"


@pytest.mark.slow
def test_an_unrolled_lstm_profiles_within_its_budget_naming_its_copies():
    """About 800 functions when unrolled over 53 steps: lean rounds, every entry sampled."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = folder + "/lstm.nntxt"
        with open(path, "w") as f:
            f.write(lstm_autoencoder(steps=53))
        profile = nnprofile.profile(path, synthetic=True)
    train, infer = profile.sections
    forward = train.entries_of("forward_function")
    assert 780 <= len(forward) <= 820 and len(train.entries) > 2300
    assert "forward_function (Affine_2_RecurrentInput[52] : Affine)" in [e.label for e in forward]
    # Lean rounds where the budget is short for full ones (how short depends on the machine's speed at the time):
    # either way, every entry is sampled within the budget.
    assert all(e.samples_ns for e in train.entries)
    assert train.sampling["budget_seconds"] == 1.5
    a = analyze(profile).of(train)
    assert a.step is not None and all(l.copies in (1, 53) for l in a.step.top_layers)
    assert any(l.copies == 53 for l in a.step.top_layers)
    assert len(infer.entries_of("forward_function")) == len(forward) - 1  # no SquaredError
