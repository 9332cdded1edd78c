"""How the corpus tests compare what a program printed under nnprofile with what it prints alone
(tests/corpus.py): the comparison must still fail where nnprofile changes, loses or adds a line."""

from corpus import differences, own_text

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
