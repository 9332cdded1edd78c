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
MADE = re.compile(r"""Note\(\s*["']([a-z_]+)["']""")


def _kinds_made():
    """Every kind of note the package's source makes (``Note("kind", ...)``)."""
    kinds = set()
    for path in glob.glob(os.path.join(ROOT, "nnprofile", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            kinds |= set(MADE.findall(f.read()))
    return kinds


def test_every_kind_nnprofile_makes_is_said_and_every_said_kind_is_made():
    made = _kinds_made()
    assert len(made) > 20  # the rule reads the source: it finds them
    assert made - set(notes.SAY) == set()
    assert set(notes.SAY) - made == {"text"}  # words of earlier versions, or a user's


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
        "Note: after window 2 (its last step %d) the program ran %d more steps unrecorded"
        % (end.figures["last_step"], end.figures["more_steps"])
    ) in text
    assert "it ended normally" in text and "Note: input (load_dataset) is the time the program waited" in text


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
    from nnprofile.assembly import events

    said = "could not be recorded at the function pre-hook (KeyError) (3 times); the program's calls there went on"
    assert events._fault(said) == ("the function pre-hook (KeyError)", 3)
    assert events._fault(["the solver's update (ValueError)", 1]) == ("the solver's update (ValueError)", 1)
    assert events._fault("words of no fault") == ("words of no fault", 1)
    note = Note("fault", {"where": "the function pre-hook (KeyError)", "times": 3})
    assert str(note) == said + " unrecorded"
