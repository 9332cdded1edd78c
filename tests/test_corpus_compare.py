"""How the corpus tests compare what a program printed under nnprofile with what it prints alone
(tests/corpus.py): the comparison must still fail where nnprofile changes, loses or adds a line; and how a
session's runs are summed."""

from types import SimpleNamespace

from corpus import TRUTH, SECONDS, differences, own_text, summary

LOG = "2026-11-25 21:15:03,356 [nnabla][INFO]: "


def test_a_line_no_run_alone_printed_is_found_and_one_every_run_printed_must_be_there():
    alone = [LOG + "iter=4 {Validation perplexity}=1455.4\nloaded\n", LOG + "iter=4 {Validation perplexity}=629.8\n"]
    assert differences(alone, LOG + "iter=4 {Validation perplexity}=877.6\n", counted=False) == []
    found = differences(alone, "[nnabla][WARNING]: not in any run\n", counted=False)
    assert found == [
        "only alone (1): ### #:#:#,# [nnabla][INFO]: iter=# {Validation perplexity}=#",
        "only profiled (1): [nnabla][WARNING]: not in any run",
    ]


def test_counted_lines_lie_between_the_fewest_and_the_most_the_runs_alone_printed():
    alone = ["step 1\nstep 2\nDownloading\n", "step 1\nstep 2\n"]
    assert differences(alone, "step 3\nstep 4\n", counted=True) == []
    assert differences(alone, "step 1\n", counted=True) == ["only alone (1): step #"]
    assert differences(alone, "step 1\nstep 2\nstep 3\n", counted=True) == ["only profiled (1): step #"]
    assert differences(alone, "step 1\nstep 2\nDownloading\nDownloading\n", counted=True) == [
        "only profiled (1): Downloading"
    ]


def test_a_line_is_the_programs_own_where_its_words_are_in_its_source():
    source = ['        logger.info("Decreased learning rate to {:05f}".format(lr))\n']
    assert own_text("### #:#:#,# [nnabla][INFO]: Decreased learning rate to #", source)
    assert not own_text("[nnabla][WARNING]: Cannot find the function to hook", source)
    assert not own_text("### #:#:#,# [nnabla][INFO]: rate #", ["rate"])  # one word says nothing


def test_a_session_sums_each_programs_two_runs_once():
    def report(nodeid, *props):
        return SimpleNamespace(nodeid=nodeid, user_properties=list(props))

    reports = [
        report("t.py::test[a]", (SECONDS, (2.0, 3.0))),
        report("t.py::test[a]", (SECONDS, (2.0, 3.0))),  # the same test's teardown report: counted once
        report("t.py::test[b]", ("other", 1), (SECONDS, (6.0, 10.0))),  # over 1.3 x 6 + 2 s
        report("t.py::test[c]"),
        "a warning",
    ]
    assert summary(reports).splitlines() == [
        "corpus: 2 programs took 8 s alone and 13 s under nnprofile (1.62x), each pair in turns; 1 within 1.3x + 2 s "
        "of their own",
        "corpus: nnprofile added most to b (6.0 s to 10.0 s), a (2.0 s to 3.0 s)",
    ]
    assert summary([report("c")]) is None
    reports[0].user_properties.append((TRUTH, {"step": 1.03, "forward": 0.98}))
    reports[2].user_properties.append((TRUTH, {"step": 1.2, "spread": 0.25}))  # off, within the program's own noise
    assert summary(reports).splitlines()[-1] == (
        "corpus: nnprofile's step against the program alone (tests/truth): 1 of 2 within 5%, 1 within the program's "
        "own 95% interval; furthest: b 1.20x (alone +-25%), a 1.03x forward 0.98x"
    )


def test_over_the_programs_each_ratio_is_a_geometric_mean_with_its_interval():
    """Steps 0.5x, 1x, 2x: a geometric mean of 1; log-ratios -0.693, 0, 0.693 (sd 0.693, t 4.303 for 2 degrees of
    freedom): the interval exp(+-1.722) = [0.18, 5.59]. A figure fewer than 3 programs have is left out."""
    from corpus import over_programs

    ratios = {"a": {"step": 0.5, "forward": 0.9}, "b": {"step": 1.0}, "c": {"step": 2.0, "forward": 1.1}}
    assert over_programs(ratios) == "; over the programs, geometric means step 1.00x [0.18, 5.59]"
    assert over_programs({"a": {"step": 1.0}}) == ""


def test_the_instruments_spread_is_the_95_percent_half_width_of_the_programs_mean_step():
    """Steps of 10, 12, 8, 10 ms (sd 1.633, n 4, t 3.18): the mean 10 ms, give or take 2.60 ms; fewer than 3 steps
    have no spread; steps numbered from 1, step k ends at the k-th update."""
    from truth import Truth

    ends = [0, 10, 22, 30, 40]  # the updates' ends (ms): steps 2..5 took 10, 12, 8, 10
    t = Truth([int(x * 1e6) for x in ends], 0.0)
    assert abs(t.spread(2, 5) - 3.18 * 1.63299 / 2 / 10) < 1e-4
    assert t.spread(2, 3) is None and t.spread(2, 9) is None


def test_a_phases_spread_is_over_its_passes_a_step():
    """Forward passes of 2, 3, 1, 2 ms in steps 2..5 (sd 0.8165, n 4): the mean 2 ms, give or take 3.18 x 0.408 ms;
    a pass ending in step 1 is none of theirs, nor is a backward pass."""
    from truth import Pass, Truth

    ends = [0, 10, 22, 30, 40]
    spans = [(-3, 0), (5, 7), (11, 13), (15, 16), (23, 24), (31, 33)]
    passes = [Pass("t.py:1:forward", "forward", int(a * 1e6), int(b * 1e6)) for a, b in spans]
    passes.append(Pass("t.py:2:backward", "backward", int(12e6), int(20e6)))
    t = Truth([int(x * 1e6) for x in ends], 0.0, passes)
    assert abs(t.spread(2, 5, "forward") - 3.18 * 0.816497 / 2 / 2) < 1e-4


def test_a_figure_is_held_to_the_program_alone_within_the_spread_between_processes_and_the_instruments():
    """With 35 % between processes and the instrument's 10 %: 1.4x and 1/1.4x hold, 1.5x and 1/1.5x do not."""
    from corpus import BETWEEN, held

    assert BETWEEN == 0.35
    assert held("step", 1.4, 0.1) == held("step", 1 / 1.4, 0.1) == ""
    assert held("step", 1.5, 0.1) == (
        "step: 1.50x the program alone, outside 1/1.45 to 1.45x (35% between processes + the instrument's 10%)"
    )
    assert held("step", 1 / 1.4, None).startswith("step: 0.71x the program alone, outside 1/1.35 to 1.35x")
