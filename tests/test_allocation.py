"""Rounds go where the variance is: the shares of the rounds each layer entry is planned from the spread it has
shown (Neyman allocation), the samples a round by where its spread lies, the rounds' levels kept as rounds end.
Pure functions, and a section on a fake clock: exact."""

import math
import random

import pytest

from conftest import FakeClock
from nnprofile.base.stats import levels_of, speed_levels, summarize_rounds
from nnprofile.measure.allocation import Allocation, Need, RoundLevels, per_round, shares
from nnprofile.measure.items import Action, Probe
from nnprofile.render.sampling import plan_words
from nnprofile.measure.rounds import RoundRunner
from nnprofile.measure.sequence import simple
from nnprofile.measure.timing import Sampling, Timer
from nnprofile.result import Section


def test_an_entry_at_its_target_needs_no_more_rounds_and_a_noisy_one_needs_n_times_its_error_squared():
    sure, noisy = Need(rounds=5, rse=0.01, cost_ns=1e4), Need(rounds=5, rse=0.04, cost_ns=1e4)
    assert sure.more(0.02, 5) == 0
    assert noisy.more(0.02, 5) == pytest.approx(5 * 4 - 5)  # 20 rounds in all for half the error... squared
    assert Need(rounds=3, rse=0.0, cost_ns=1).more(0.02, 5) == 2  # the minimum rounds, whatever the spread
    assert math.isinf(Need(rounds=1, rse=math.inf, cost_ns=1).more(0.02, 5))


def test_the_rounds_to_come_are_what_the_neediest_reachable_entry_needs_and_each_takes_its_share():
    needs = [Need(5, 0.01, 1e5), Need(5, 0.04, 1e5), Need(5, 0.0283, 1e5)]  # 0, 15 and 5 more rounds
    share, reachable = shares(needs, 0.02, 5, remaining_ns=1e9, fixed_ns=1e6, rounds_left=1000)
    assert reachable == [True, True, True]
    assert share[0] == 0 and share[1] == 1.0 and share[2] == pytest.approx(5 / 15, rel=0.02)


def test_an_entry_that_cannot_reach_the_target_takes_every_round_without_holding_the_others():
    # 0.1 s left at 1 ms a round pays for about 90 rounds: the hopeless entry needs 10,000.
    needs = [Need(5, 0.9, 1e5), Need(5, 0.04, 1e5)]
    share, reachable = shares(needs, 0.02, 5, remaining_ns=1e8, fixed_ns=1e6, rounds_left=1000)
    assert reachable == [False, True] and share[0] == 1.0
    assert share[1] == 1.0  # needs 15 of the 15 rounds planned for the reachable entries


def test_the_budget_bounds_the_rounds_and_the_shares_grow_to_fill_them():
    needs = [Need(5, 0.04, 1e6), Need(5, 0.03, 1e6)]  # 15 and 6.25 more rounds, 1 ms each
    share, _ = shares(needs, 0.02, 5, remaining_ns=10e6, fixed_ns=0, rounds_left=1000)
    assert share == [1.0, 1.0]  # ten 1-ms rounds at most: both in every one, neither reaches its target


def test_a_share_is_taken_in_evenly_spread_rounds():
    allocation = Allocation()
    allocation.plan([1, 2], [1 / 3, 1.0])
    taken = [allocation.takes(1) for _ in range(30)]
    assert sum(taken) == 10 and all(allocation.takes(2) for _ in range(5))
    gaps = [j - i for i, j in zip([k for k, t in enumerate(taken) if t], [k for k, t in enumerate(taken) if t][1:])]
    assert set(gaps) == {3}


def test_samples_a_round_follow_where_the_spread_lies():
    rng = random.Random(1)
    # Round means steady, samples noisy within a round, a round's first run dear: several samples a round.
    within = [100 + rng.gauss(0, 10) for _ in range(30)]
    assert per_round(within, [3] * 10, round_ns=400, sample_ns=100, cap=3) == 3
    # Rounds apart, samples alike within each: one sample a round (more rounds do more).
    between = [x for r in range(10) for x in [100 + 20 * (r % 2) + rng.gauss(0, 0.1)] * 3]
    assert per_round(between, [3] * 10, round_ns=400, sample_ns=100, cap=3) == 1
    assert per_round([1.0, 2.0], [1, 1], 1, 1, 3) is None  # too few rounds to tell


def test_levels_kept_as_rounds_end_are_speed_levels_where_every_entry_is_in_every_round():
    rng = random.Random(7)
    slow = {4: 1.4, 9: 1.2}
    base = [50.0, 200.0, 1000.0]
    pairs = [([], []) for _ in base]
    levels = RoundLevels()
    for r in range(12):
        for (samples, sizes), b in zip(pairs, base):
            sizes.append(2)
            samples += [b * slow.get(r, 1.0) * (1 + rng.uniform(-0.01, 0.01)) for _ in range(2)]
        levels.add_round(pairs)
    exact = speed_levels(pairs, 12)
    assert levels.levels() == pytest.approx(exact, rel=0.01)
    assert [r for r, level in enumerate(levels.levels()) if level > 1.1] == [4, 9]
    rse = summarize_rounds(pairs[1][0], pairs[1][1], dropped=[4, 9]).rse
    assert levels.rse(1, [4, 9]) == pytest.approx(rse, rel=1e-9) and levels.rounds_in(1, [4, 9]) == 10


def test_a_round_holding_little_of_the_work_takes_its_level_from_the_reference_workload():
    # Round 2 held only a cheap noisy entry: its own spread says 1.5, the reference says the machine was steady.
    raw, expected = [1.0, 1.0, 1.5, 1.0, 1.3], [100.0, 100.0, 2.0, 100.0, 100.0]
    assert levels_of(raw, expected, reference=[10, 10, 10, 10, 13]) == pytest.approx([1, 1, 1, 1, 1.3])
    assert levels_of(raw, expected)[2] == 1.0  # no reference timed: not judged


class Noisy:
    """Fake work: a fixed time, off by +-``spread`` in alternate rounds (the head action counts them)."""

    def __init__(self, clock, ns, spread, state):
        self.clock, self.ns, self.spread, self.state = clock, ns, spread, state

    def __call__(self):
        sign = 1 if self.state["round"] % 2 else -1
        self.clock.advance(int(self.ns * (1 + sign * self.spread)))


def test_a_section_gives_its_noisy_layer_entries_the_rounds_its_steady_ones_do_not_need():
    clock = FakeClock(steps=(0,))
    state = {"round": 0}
    timer = Timer(Sampling(warmup=0, max_seconds=0.5, min_rounds=5), clock=clock)
    items = [
        Action(lambda: state.update(round=state["round"] + 1)),
        Probe(simple("forward_all", "forward_all"), Noisy(clock, 2_000_000, 0.0, state)),
    ]
    items += [
        Probe(
            simple("forward_function (S%d : Affine)" % i, "forward_function"),
            Noisy(clock, 2_000_000, 0.0, state),
            layer=True,
        )
        for i in range(20)
    ]
    items += [
        Probe(
            simple("forward_function (N%d : Affine)" % i, "forward_function"),
            Noisy(clock, 2_000_000, 0.2, state),
            layer=True,
        )
        for i in range(2)
    ]
    section = Section(kind="optimizer", name="O", network="N")
    RoundRunner(timer, reference=False).run(section, items)
    rounds = {e.label: sum(1 for n in e.round_sizes if n) for e in section.entries}
    steady = [rounds["forward_function (S%d : Affine)" % i] for i in range(20)]
    noisy = [rounds["forward_function (N%d : Affine)" % i] for i in range(2)]
    assert 5 <= min(steady) and max(steady) <= 6  # the minimum (done at the plan after it): their rounds to the noisy
    assert min(noisy) > 3 * max(steady) and rounds["forward_all"] == section.sampling["rounds"]
    assert section.sampling.shared_from == 4 and "shares of the rounds" in plan_words(section.sampling)
