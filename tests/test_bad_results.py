"""A result.json is input like any other: damaged, forged, huge, empty, nested or negative values end in one line
naming the field and exit 2, within a memory bound; never a traceback, never the machine's memory."""

import copy
import json
import os
import resource
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import nnprofile
from conftest import ROOT
from nnprofile.base.errors import ProfileError

GOLDEN = os.path.join(ROOT, "tests", "golden", "result_v10.json")
EXAMPLES = int(os.environ.get("NNPROFILE_FUZZ_EXAMPLES", "60"))
MEMORY_BOUND = 2 << 30  # bytes of address space the command may take: well above a result's, far below the machine


def _golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


def _first_entry(d):
    e = d["sections"][0]["entries"][0]
    for key in ("samples_total_ns", "round_sizes", "disturbed", "taken_ns"):
        e.pop(key, None)
    return e


def _bounded_cli(path, *args):
    """``nnprofile report PATH`` in a process whose address space is bounded."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))

    return subprocess.run(
        [sys.executable, "-m", "nnprofile", "report", str(path), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limit,
        timeout=300,
    )


def _huge(d):
    _first_entry(d)["samples_ns"] = [10**400]


def _empty(d):
    _first_entry(d)["samples_ns"] = []


def _negative(d):
    _first_entry(d)["samples_ns"] = [-5.0]


def _batch(d):
    d["header"]["batch_size"] = -64


def _zero_batch(d):
    d["header"]["batch_size"] = 0


def _exempt(d):  # (found by the arbitrary-JSON test below: it once loaded, and the log failed on it)
    d["sections"][0]["info"]["drift_exempt"] = [None]


@pytest.mark.parametrize(
    "damage, says",
    [
        (_huge, "samples_ns holds 1000000000"),
        (_empty, "samples_ns holds no sample"),
        (_negative, "samples_ns holds -5.0"),
        (_batch, "header.batch_size must be a whole number of 1 or more, not -64"),
        (_zero_batch, "header.batch_size"),
        (_exempt, "drift_exempt holds what is no round number"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(tmp_path, damage, says):
    d = _golden()
    damage(d)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ProfileError, match="section|header"):
        nnprofile.load(str(path))
    proc = _bounded_cli(path, "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and len(proc.stderr) < 600


@pytest.mark.parametrize(
    "text, says",
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than any result"),
        ('{"format": "nnprofile-result", "version": 10, "sections": ' + "[" * 5000 + "]" * 5000 + "}", "result"),
        ("", "not a readable result file"),
    ],
)
def test_a_nested_or_empty_file_is_one_line(tmp_path, text, says):
    path = tmp_path / "result.json"
    path.write_text(text)
    proc = _bounded_cli(path, "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_file_larger_than_any_result_is_not_read(tmp_path, monkeypatch):
    from nnprofile.result import file as result_file

    path = tmp_path / "result.json"
    path.write_text(json.dumps(_golden()))
    monkeypatch.setattr(result_file, "MAX_RECORD_BYTES", 100)
    with pytest.raises(ProfileError, match="larger than a result file can be"):
        result_file.load(str(path))


@pytest.mark.parametrize(
    "what, grow",
    [
        (
            "timeline events",
            lambda d, n: d.__setitem__("timeline", [dict(name="x", cat="step", start=i, end=i) for i in range(n)]),
        ),
        ("notes", lambda d, n: d.__setitem__("notes", ["n"] * n)),
        (
            "entries",
            lambda d, n: d.update(sections=[dict(d["sections"][0], entries=d["sections"][0]["entries"][:1] * n)]),
        ),
        ("sections", lambda d, n: d.__setitem__("sections", d["sections"][:1] * n)),
    ],
)
def test_every_list_a_result_holds_is_bounded_as_it_loads(tmp_path, monkeypatch, what, grow):
    """A list at its limit loads; one more is refused in one error naming what it holds too many of, before any of
    it is read (a forged file of a million events once took a report two minutes and 1.6 GB)."""
    from nnprofile.result import checks

    monkeypatch.setitem(checks.LIMITS, what, 12)
    for n, refused in ((12, False), (13, True)):
        d = _golden()
        grow(d, n)
        path = tmp_path / ("%d.json" % n)
        path.write_text(json.dumps(d))
        if refused:
            with pytest.raises(ProfileError, match="holds 13 %s, more than a result holds \\(12\\)" % what):
                nnprofile.load(str(path))
        else:
            nnprofile.load(str(path))


@pytest.mark.slow
def test_a_forged_file_of_too_many_events_is_refused_in_one_line(tmp_path):
    from nnprofile.result.checks import LIMITS

    d = _golden()
    d["timeline"] = [{"name": "x", "cat": "step", "start": i, "end": i} for i in range(LIMITS["timeline events"] + 1)]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(d))
    proc = _bounded_cli(path, "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and "more than a result holds" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=40,
)


@st.composite
def forged(draw):
    """The golden result with one value somewhere replaced by arbitrary JSON, or arbitrary JSON alone."""
    if draw(st.booleans()):
        return draw(JSON)
    d = copy.deepcopy(GOLDEN_DATA)
    node, path = d, []
    for _ in range(draw(st.integers(1, 6))):
        if isinstance(node, dict) and node:
            key = draw(st.sampled_from(sorted(node)))
        elif isinstance(node, list) and node:
            key = draw(st.integers(0, len(node) - 1))
        else:
            break
        path.append((node, key))
        node = node[key]
    if path:
        parent, key = path[-1]
        parent[key] = draw(JSON)
    return d


GOLDEN_DATA = _golden()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(forged())
def test_arbitrary_json_loads_or_is_refused_in_one_error(tmp_path, data):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    try:
        profile = nnprofile.load(str(path))
    except ProfileError:
        return
    from nnprofile.render import render  # a profile that loads renders

    render(profile, ["log", "csv"])


@pytest.mark.slow
def test_arbitrary_json_through_the_command_line_is_a_report_or_one_line(tmp_path):
    """A few forged files through ``nnprofile report`` in a process of bounded memory."""
    import random

    rng = random.Random(7)
    for i in range(6):
        d = copy.deepcopy(GOLDEN_DATA)
        entry = rng.choice(d["sections"][rng.randrange(len(d["sections"]))]["entries"])
        key = rng.choice(sorted(entry))
        entry[key] = rng.choice([None, -1, 10**30, "x", [], {}, [[[]]], 1e308, True])
        path = tmp_path / ("r%d.json" % i)
        path.write_text(json.dumps(d))
        proc = _bounded_cli(path, "-o", str(tmp_path / ("o%d" % i)))
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, (key, proc.stderr[-2000:])
        if proc.returncode == 2:
            assert len(proc.stderr.strip().splitlines()) == 1


def test_an_nnp_that_unpacks_beyond_a_projects_size_is_refused_unread(tmp_path):
    """A zip bomb: 200 MB of network text in a 200 KB .nnp. NNabla's parser would take ten times that in memory."""
    import zipfile

    bomb = tmp_path / "bomb.nnp"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("network.nntxt", "w", force_zip64=True) as f:
            for _ in range(200):
                f.write(b" " * (1 << 20))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))

    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", str(bomb), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        preexec_fn=limit,
        timeout=300,
    )
    assert proc.returncode == 2 and "unpacks to 200 MB, more than a project's can" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_rank_folder_beyond_any_world_is_one_line(tmp_path):
    import shutil

    (tmp_path / "rank-0").mkdir()
    shutil.copy(GOLDEN, tmp_path / "rank-0" / "result.json")
    (tmp_path / "rank-99999999999999999999").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "merge", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "is no rank of a run" in proc.stderr and len(proc.stderr) < 300, proc.stderr


def test_a_list_of_ranks_is_summarised():
    from nnprofile.merging.ranks import spans

    assert spans(list(range(1, 100000))) == "1 to 99999"
    assert spans([0, 2, 3, 5, 6, 7]) == "0, 2, 3, 5 to 7"
    assert spans(list(range(0, 40, 2))) == "0, 2, 4, 6, 8, 10, 12, 14 and 12 more"
