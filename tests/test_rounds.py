"""Sampling in rounds, on a fake clock: slow spells, drift, order, interruption."""

import pytest

from conftest import FakeClock
from nnprofile.measure.items import Action, Probe
from nnprofile.measure.rounds import RoundRunner
from nnprofile.measure.sequence import simple
from nnprofile.render.words import drift_words
from nnprofile.measure.timing import Sampling, Timer
from nnprofile.result import Section
from nnprofile.base.stats import Drift, speed_levels, summarize_rounds

BASE_NS = {"a": 2_000_000, "b": 5_000_000, "c": 1_200_000}  # long entries: one sample a round


class Machine:
    """A fake clock and work that takes BASE_NS times the machine's slowness in the current round."""

    def __init__(self, slow_rounds=(), factor=1.5):
        self.clock = FakeClock(steps=(0,))
        self.slow_rounds = set(slow_rounds)
        self.factor = factor
        self.round = -1  # the Action at the head of each round moves it on

    def next_round(self):
        self.round += 1

    def work(self, name):
        def run():
            slow = self.factor if self.round in self.slow_rounds else 1.0
            self.clock.advance(int(BASE_NS[name] * slow))

        return run

    def items(self):
        return [Action(self.next_round)] + [Probe(simple(n, "update"), self.work(n)) for n in BASE_NS]


def _run(machine, **sampling):
    timer = Timer(Sampling(warmup=0, **sampling), clock=machine.clock)
    section = Section(kind="optimizer", name="O", network="N")
    seen = []
    drift = RoundRunner(timer, on_entry=lambda s, e: seen.append(e.label)).run(section, machine.items())
    return section, drift, seen


def test_fixed_runs_take_one_sample_per_round():
    section, drift, seen = _run(Machine(), runs=4)
    assert seen == ["a", "b", "c"]  # handed over in order, each once
    for e in section.entries:
        assert e.round_sizes == [1, 1, 1, 1] and e.samples_ns == [BASE_NS[e.label]] * 4
    assert drift.levels == (1.0, 1.0, 1.0, 1.0) and not drift.dropped


def test_a_steady_machine_stops_after_the_minimum_rounds():
    section, drift, _ = _run(Machine(), min_rounds=5, max_seconds=100)
    assert [len(e.round_sizes) for e in section.entries] == [5, 5, 5]
    assert all(e.mean_ms == BASE_NS[e.label] / 1e6 for e in section.entries)


def test_a_slow_spell_in_a_minority_of_rounds_leaves_the_means_as_they_were():
    # Rounds 1 to 3 run 1.5 times slower: they are left out, and sampling goes on until
    # five undisturbed rounds are in.
    section, drift, _ = _run(Machine(slow_rounds=(1, 2, 3)), min_rounds=5, max_seconds=100)
    assert drift.dropped == [1, 2, 3] and not drift.flagged
    assert len(drift.levels) == 8
    for e in section.entries:
        assert e.dropped_rounds == [1, 2, 3]
        assert e.stats.mean == pytest.approx(BASE_NS[e.label], rel=0.05)
        assert e.stats.mean == BASE_NS[e.label]  # exactly, in fact
        assert e.stats.max == 1.5 * BASE_NS[e.label]  # the spell is still in the raw statistics


def test_a_spell_over_most_of_the_run_is_flagged():
    # The budget (12 rounds) runs out inside a spell that covers 9 of them.
    section, drift, _ = _run(Machine(slow_rounds=range(3, 12)), min_rounds=5, max_seconds=100, max_rounds=12)
    assert len(drift.levels) == 12
    assert drift.flagged
    assert "in doubt" in drift_words(drift)
    for e in section.entries:
        # Either within 5% of the undisturbed figure, or flagged: here the usual speed is taken
        # from the lower quartile of the rounds, the three undisturbed ones.
        assert e.stats.mean == pytest.approx(BASE_NS[e.label], rel=0.05) or drift.flagged


def test_the_section_budget_ends_sampling():
    # Each round costs 8.2 ms of fake time; 50 ms of budget allow 7 rounds (min 5).
    machine = Machine(slow_rounds=range(0, 100, 2), factor=1.3)  # never steady
    section, drift, _ = _run(machine, min_rounds=5, max_seconds=0.05)
    assert 5 <= len(drift.levels) <= 8


def test_an_interruption_keeps_every_sample_marked_incomplete():
    machine = Machine()
    items = machine.items()

    def interrupt():
        if machine.round == 2:
            raise KeyboardInterrupt
        machine.clock.advance(1_000_000)

    items.insert(2, Probe(simple("x", "update"), interrupt))  # between a and b
    timer = Timer(Sampling(warmup=0, runs=5), clock=machine.clock)
    section = Section(kind="optimizer", name="O", network="N")
    with pytest.raises(KeyboardInterrupt):
        RoundRunner(timer).run(section, items)
    assert [e.label for e in section.entries] == ["a", "x", "b", "c"]
    assert [len(e.samples_ns) for e in section.entries] == [3, 2, 2, 2]
    assert not any(e.complete for e in section.entries)


def test_round_statistics_by_hand():
    # Rounds of 1, 2 and 1 samples: round means 10, 25, 40; round 2 dropped.
    s = summarize_rounds([10, 20, 30, 40], [1, 2, 1], dropped=[2])
    assert (s.mean, s.rounds) == (17.5, 2)
    assert s.rse == pytest.approx((((10 - 17.5) ** 2 + (25 - 17.5) ** 2) ** 0.5) / 2**0.5 / 17.5)
    assert (s.n, s.min, s.max, s.median) == (4, 10, 40, 25)
    assert summarize_rounds([10, 20], []).mean == 15  # results of version 1: one round


def test_speed_levels_weigh_entries_by_their_time():
    # Two entries over three rounds; round 3 is 50% slower for both.
    levels = speed_levels([([1, 1, 1.5], [1, 1, 1]), ([10, 10, 15], [1, 1, 1])], 3)
    assert levels == [1.0, 1.0, 1.5]
    assert Drift(tuple(levels), 0.1).dropped == [2]
