"""One pooling of profiles for --repeat and for the ranks of a distributed run: samples and rounds pooled
source after source, and the machine's drift recomputed over the pooled rounds (one rule)."""

from nnprofile.merging.profiles import merge_runs, pool_profiles
from nnprofile.result import Entry, Profile, Section
from nnprofile.result.header import ProgramHeader

MS = 1_000_000


def _profile(rounds_ms, name="O"):
    """A training section whose two entries took these times, one sample per round."""
    a = Entry("forward_all", "forward_all", [x * MS for x in rounds_ms], round_sizes=[1] * len(rounds_ms))
    b = Entry("backward_all", "backward_all", [2 * x * MS for x in rounds_ms], round_sizes=[1] * len(rounds_ms))
    return Profile(
        header={"sampling": "s"}, sections=[Section("optimizer", name, "N", [a, b], complete=True)], complete=True
    )


def test_runs_and_ranks_are_pooled_by_one_rule():
    first, second = _profile([1.0, 1.0, 1.5, 1.0]), _profile([1.0, 1.0, 1.0, 1.0])
    runs = merge_runs([first, second], 0.10).sections
    ranks = pool_profiles([first, second], 0.10, "rank_means")
    for pooled in (runs, ranks):
        [section] = pooled
        assert [len(e.samples_ns) for e in section.entries] == [8, 8]
        assert section.entries[0].round_sizes == [1] * 8
        # the third round of the first source ran 50% slow: left out of every entry alike
        assert all(e.dropped_rounds == [2] for e in section.entries) and len(section.speed_levels) == 8
        assert section.entries[0].mean_ms == 1.0
    assert runs[0].entries[0].run_means == [first.sections[0].entries[0].mean_ms, 1.0]
    assert ranks[0].entries[0].rank_means == [first.sections[0].entries[0].mean_ms, 1.0]


def test_a_rank_merge_recomputes_drift_over_the_pooled_steps():
    """Each rank's own drift is not kept (it was, before one rule served both): the pooled rounds decide. A
    rank slower than the others throughout is left out of the pooled figures, and a note says so."""
    fast = _profile([1.0, 1.0, 1.0, 1.0])
    own = _profile([2.0, 2.0, 2.0, 2.0])
    own.sections[0].entries[0].dropped_rounds = [0]  # what its own measurement left out: not kept
    [section] = pool_profiles([fast, own], 0.10, "rank_means")
    assert section.entries[0].dropped_rounds == [4, 5, 6, 7]  # all of the slow rank's, none of the fast rank's
    assert section.entries[0].mean_ms == 1.0 and section.entries[0].rank_means == [1.0, 2.0]
    merged = merge_runs([fast, own], 0.10)
    left = [n.figures for n in merged.notes if n.kind == "left_out"]
    assert [(f["source"], f["numbers"]) for f in left] == [("run", [2])]


def test_a_recorded_programs_runs_keep_every_step_and_their_means_agree_with_the_pool():
    """As one recorded run keeps every step, pooled runs of a program do: the pooled mean is the runs' own means'
    mean, whose spread (the gate's run-to-run part) is then of the figure it judges. Steps left out of the pool
    alone once read a pooled 2.4 us pass of two runs whose own means were 6.3 and 5.8 us (spread 6 %)."""
    first, second = _profile([1.0, 1.0, 3.0, 1.0]), _profile([2.0, 2.0, 2.0, 2.0])
    for p in (first, second):
        p.header = ProgramHeader(drift_threshold=0.25)
    [section] = merge_runs([first, second], 0.10).sections
    forward = section.entries[0]
    assert forward.dropped_rounds == [] and len(forward.samples_ns) == 8
    assert forward.run_means == [1.5, 2.0] and forward.mean_ms == sum(forward.run_means) / 2
