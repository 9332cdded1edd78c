"""A profile's notes are data (a kind and its figures) that one module of the renderers says in words: every kind
nnprofile makes has its words, the notes of earlier versions (words) keep theirs, and a forged note is one clear
error, never a renderer's crash."""

import glob
import json
import os
import re

import pytest

import nnprofile
from conftest import ROOT
from nnprofile.base.errors import ProfileError
from nnprofile.render import log, notes
from nnprofile.analysis import analyze
from nnprofile.result import Profile, file as result_file
from nnprofile.result.notes import Note

GOLDEN = os.path.join(ROOT, "tests", "golden")
MADE = re.compile(r"""Note\(\s*["']([a-z_]+)["']\s*[,)]""")
RULE = re.compile(r"""Rule\(\s*["']([a-z_]+)["']""")  # a step rule: its header note is "steps_" and its kind


def _kinds_made():
    """Every kind of note the package's source makes (``Note("kind", ...)``, and a program header's ``steps`` for
    each kind of step rule, ``Rule("kind", ...)``)."""
    kinds = set()
    for path in glob.glob(os.path.join(ROOT, "nnprofile", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        kinds |= set(MADE.findall(source)) | {"steps_" + k for k in RULE.findall(source)}
    return kinds


def test_every_kind_nnprofile_makes_is_said_and_every_said_kind_is_made():
    made = _kinds_made()
    assert len(made) > 20  # the rule reads the source: it finds them
    assert made - set(notes.SAY) == set()
    assert set(notes.SAY) - made == {"text"} | notes.RETIRED  # words of earlier versions, or a user's
    assert not notes.RETIRED & made


def test_a_version_11_file_holds_its_notes_as_kinds_and_figures_said_as_the_run_said_them():
    """The checked-in file of a run in two windows that ran on after them: its notes as the writer wrote them,
    each read typed, written back as read, and said in the log in the run's words."""
    path = os.path.join(GOLDEN, "result_v11.json")
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    profile = result_file.load(path)
    assert [n.kind for n in profile.notes] == [n["kind"] for n in raw["notes"]]
    assert json.loads(result_file.dumps(profile))["notes"] == raw["notes"]
    [end] = [n for n in profile.notes if n.kind == "after_windows"]
    assert end.figures["window"] == 2 and end.figures["failure"] is None and end.figures["status"] is None
    text = "\n".join(log.files(profile, analyze(profile))["profile.log"].splitlines())
    assert (
        "Note: after step %d (the end of window 2) the program ran %d more steps unrecorded"
        % (end.figures["last_step"], end.figures["more_steps"])
    ) in text
    assert "it ended normally" in text and "Note: input (load_dataset) is the time the program waited" in text
    h = profile.header
    assert (h.sampling.kind, h.steps.kind, h.schedule.kind) == ("sampling_steps", "steps_iterations", "schedule")
    assert h.sampling.figures["whole_run"] and h.sampling.figures["recorded"] == h.run_steps
    written = json.loads(result_file.dumps(profile))["header"]
    assert written.pop("own_cost") == {}  # (version 13's: an earlier run said nothing of its own work)
    assert written == raw["header"]
    assert "Steps: one step per iteration of the program's loop at train_validate.py:" in text
    assert "Schedule: wait 0, warmup 1, active 3, repeat 2 (2 windows)" in text
    assert (
        "window 2: steps %d to %d of %d (the whole run) recorded (warmup 1, active 3)"
        % (
            h.kept_steps[0],
            h.kept_steps[-1],
            h.run_steps,
        )
        in text
    )


@pytest.mark.parametrize("version", range(1, 11))
def test_the_notes_of_earlier_versions_keep_their_words(version):
    path = os.path.join(GOLDEN, "result_v%d.json" % version)
    with open(path, encoding="utf-8") as f:
        words = json.load(f).get("notes", [])
    profile = result_file.load(path)
    assert {n.kind for n in profile.notes} <= {"text"}
    assert notes.texts(profile.notes) == words and [str(n) for n in profile.notes] == words
    again = result_file.from_dict(json.loads(result_file.dumps(profile)))
    assert notes.texts(again.notes) == words


def test_a_note_says_what_it_holds_and_a_users_words_are_a_note(tmp_path):
    shrunk = Note("skip_shrunk", {"steps": 1, "skip_first": 3, "skip": 0})
    assert str(shrunk) == (
        "the program ran 1 step, fewer than --skip-first 3 and one active step: the skip was shrunk to 0"
    )
    assert "fewer than --skip-first" in shrunk and "more than" not in shrunk
    profile = Profile(notes=["my own words", shrunk])
    assert profile.notes[0] == Note("text", {"text": "my own words"})
    result_file.save(profile, str(tmp_path))
    assert nnprofile.load(str(tmp_path)).notes == profile.notes


def test_a_kind_this_version_does_not_say_or_cannot_read_is_said_as_its_figures():
    assert notes.text(Note("said_by_v99", {"share": 0.25})) == "said_by_v99: share 0.25"
    assert notes.text(Note("skip_shrunk", {"steps": "many"})) == "skip_shrunk: steps many"  # a figure missing
    assert notes.text(Note("own_work", {"own_ms": 1.0, "step_ms": 0})) == "own_work: own_ms 1.0, step_ms 0"


@pytest.mark.parametrize(
    "forged, says",
    [
        ("words", "notes holds 'words'"),
        ([{"figures": {}}], "note 1: a note is an object with its kind"),
        ([{"kind": "text", "figures": {"text": "a"}}, 5], "note 2: a note is an object with its kind"),
        ([{"kind": "x", "figures": {"share": float("nan")}}], "note 1: note 'x': its figures are not"),
        ([{"kind": "x", "figures": {"steps": 10**400}}], "note 1: note 'x': its figures are not"),
        ([{"kind": "x", "figures": [1, 2]}], "note 1: note 'x': its figures are not"),
    ],
)
def test_a_forged_note_is_one_error_naming_it(forged, says):
    data = json.loads(result_file.dumps(Profile()))
    data["notes"] = forged
    with pytest.raises(ProfileError, match=re.escape(says)):
        result_file.from_dict(data)


def test_the_faults_of_a_version_3_events_file_read_back_as_where_and_how_often():
    from nnprofile.assembly import capture_file as events

    said = "could not be recorded at the function pre-hook (KeyError) (3 times); the program's calls there went on"
    assert events._fault(said) == ("the function pre-hook (KeyError)", 3)
    assert events._fault(["the solver's update (ValueError)", 1]) == ("the solver's update (ValueError)", 1)
    assert events._fault("words of no fault") == ("words of no fault", 1)
    note = Note("fault", {"where": "the function pre-hook (KeyError)", "times": 3})
    assert str(note) == said + " unrecorded"


def test_how_the_steps_were_found_is_said_from_the_rules_figures():
    """A program header's ``steps``: the rule's figures (``rule_figures``), said by render/rules.py in the words the
    log's ``Steps:`` line has always had."""
    from nnprofile.assembly.steps import Rule, rule_figures

    def name(what):
        return {"graph": "g%s", "iterator": "it%s", "solver": "Solver %s"}[what[0]] % (what[1],)

    def said(rule):
        figures = json.loads(json.dumps(rule_figures(rule, 7, name)))  # as result.json holds them
        return notes.text(Note("steps_" + rule.kind, figures))

    fed = Rule(
        "updates", 2, [(0, frozenset({1}), frozenset({0})), (1, frozenset({2, 3}), frozenset({1}))], "structure", 1
    )
    assert said(fed) == (
        "solver updates: one step per 2 updates of 2 solvers (the loop's repeating pattern: Solver 0 after the "
        "backward of 'g1' fed by 'it0'; Solver 1 after the backward of 'g2' and 'g3' fed by 'it1') (the first 1 "
        "update, before the pattern began, is before the first step)"
    )
    unseen = Rule("updates", 2, [(0, frozenset(), frozenset()), None], "graphs", 3)
    assert said(unseen) == (
        "solver updates: one step per 2 updates of one solver (the loop's repeating pattern: Solver 0 with no "
        "backward before it; an update the hooks did not see) (the first 3 updates, before the pattern began, are "
        "before the first step)"
    )
    assert said(Rule("passes", 3, [], offset=3)) == (
        "passes without a solver: one step per 3 passes (the first 3 passes, before the pattern began, are before "
        "the first step)"
    )
    assert said(Rule("marks")) == "marked by nnprofile.step(): 7"
    loop = Rule("iterations", where="train.py:40", before=1, idle=4)
    figures = dict(rule_figures(loop, 7), updates=[["Adam: critic", 1.0], ["Adam: actor", 0.5]])
    assert notes.text(Note("steps_iterations", figures)) == (
        "one step per iteration of the program's loop at train.py:40 (updates a step: Adam: critic 1, Adam: actor "
        "0.5); the 1 iteration before its first update is before the first step; 4 iterations in runs of the loop "
        "without an update (a validation through the same loop) are no step"
    )


def test_how_a_run_was_sampled_and_scheduled_is_said_from_its_figures():
    """A header's ``sampling`` and ``schedule``: figures in result.json, said in the words the log's Timing and
    Schedule lines have always had; a merged view says how it pooled them after the first run's or rank's."""
    from nnprofile.measure.timing import Sampling
    from nnprofile.recording.profiling import schedule_note
    from nnprofile.base.schedule import Schedule

    def said(note):
        return notes.text(Note.from_json(json.loads(json.dumps(note.to_json()))))  # as result.json holds it

    rounds = Sampling().header_note()
    assert said(rounds) == (
        "1 warm-up, then rounds over all entries (at least 5) until every entry's relative standard error is below "
        "2% and the machine's speed holds within 10%, or 1.5 s per section (or 0.25 s by one entry) are spent; each "
        "figure (the time of one call) is the mean of its round means, leaving out rounds the machine ran slow in"
    )
    assert said(Sampling(runs=50, warmup=3).header_note()).startswith(
        "3 warm-up + 50 rounds of one timed run per entry; each figure"
    )
    assert said(schedule_note(Schedule(wait=2, warmup=1, active=5, repeat=0))) == (
        "wait 2, warmup 1, active 5, repeat 0 (until the program ends)"
    )
    assert said(schedule_note(Schedule(warmup=1, active=5, on_demand=True, signal="USR2"))) == (
        "on demand (SIGUSR2 or nnprofile capture PID): each time, warmup 1 and active 5 steps"
    )
    steps = {"windowed": True, "window": 2, "kept": [12, 13, 14], "recorded": 30, "skip": 1, "active": 3}
    steps.update(whole_run=True, plain=list(range(15, 23)))
    assert said(Note("sampling_steps", steps)) == (
        "window 2: steps 12 to 14 of 30 (the whole run) recorded (warmup 1, active 3); steps 15, 16, 17, 18, 19, "
        "20, ... ran without the hooks, the program as it runs alone (a Note says what they set); each figure (the "
        "time of one call) is the mean over "
        "those steps (the Drift line says which steps, if any, it leaves out)"
    )
    pooled = Note("sampling_pooled", {"of": rounds.to_json(), "runs": 3})
    assert said(pooled) == said(rounds) + "; in 3 fresh processes, rounds pooled"
    ranks = Note("sampling_pooled", {"of": Note.text("steps 2 to 4").to_json(), "ranks": [0, 1, 2, 3]})
    assert said(ranks) == "steps 2 to 4; pooled over ranks 0 to 3, each rank's steps a round"


def test_how_a_sections_entries_were_sampled_is_said_from_its_figures():
    """A project's section keeps its plan as figures (lean rounds, the round its shares were planned from, the
    partial layer rounds), said by render/sampling.py; an earlier result's words stand as they were."""
    from nnprofile.render.sampling import plan_words
    from nnprofile.result.details import Sampling

    lean = Sampling(lean=True, layer_every=3, shared_from=4, partial_rounds=2, partial_short_of=3)
    assert plan_words(Sampling.from_json(json.loads(json.dumps(lean.to_json())))) == (
        "lean rounds: one sample of each layer entry in every 3rd round; the whole-step entries every round; from "
        "round 4 on, the layer entries' shares of the rounds by the spread each had shown, those at the target "
        "done; then 2 partial layer rounds: the layer entries short of 3 rounds, the heaviest first, as many as "
        "the rest of the budget allowed"
    )
    assert plan_words(Sampling(lean=False, layer_every=1)) == "every entry every round"
    assert plan_words(Sampling(plan="as version 10 said it", lean=True, layer_every=2)) == "as version 10 said it"
    assert plan_words(Sampling()) == ""  # a program's section: no rounds
    assert "shared_from" not in Sampling(lean=False, layer_every=1).to_json()  # only where set


def test_how_the_ranks_clocks_were_aligned_is_a_note_and_whether_they_were_is_a_fact():
    from nnprofile.result.ranks import RanksView

    apart = RanksView(clock={"method": Note("clock_not_aligned", {"hosts": 2}).to_json()})
    assert not apart.clock_aligned and notes.text(apart.clock_method).startswith("not aligned: the ranks ran on 2")
    one = RanksView(clock={"method": Note("clock_one_host", {"host": "vm"}).to_json()})
    assert one.clock_aligned and str(one.clock_method) == "the ranks ran on one host (vm) and share its monotonic clock"
    older = RanksView(clock={"method": "not aligned: the ranks ran on 3 hosts"})  # version 5 to 10: words
    assert not older.clock_aligned and older.clock_method.kind == "text"
    data = json.loads(result_file.dumps(Profile()))
    data["ranks"] = {"clock": {"method": {"figures": {}}}}
    with pytest.raises(ProfileError, match="ranks holds a field of the wrong kind"):
        result_file.from_dict(data)


def test_the_end_note_says_which_steps_after_the_first_window_ran_without_the_hooks():
    """The first window's kept steps end (steps 2 to 21), then 20 steps run without the hooks: the note says the
    step the recording ended at and why it is past the window's."""
    figures = {"window": 1, "last_step": 41, "more_steps": 109, "tail_s": 0.0, "failure": None, "status": None}
    said = notes.text(Note("after_windows", dict(figures, measured_steps=20)))
    assert said.startswith(
        "after step 41 (window 1 and the 20 steps after it without the hooks) the program ran 109 more steps unrecorded"
    )
    earlier = notes.text(Note("after_windows", figures))  # (a file written before these were counted)
    assert earlier.startswith("after step 41 (the end of window 1) the program ran 109 more steps unrecorded")
