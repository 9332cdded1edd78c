"""result.json: the round trip, old files, and `nnprofile report` reproducing a run exactly."""

import json
import re
import os

import pytest

from conftest import GOLDEN, LENET, run_cli
from nnprofile.result import file as result_file
from nnprofile.base.errors import ProfileError
from nnprofile.result import Entry, Profile, Section
from nnprofile.result.header import MergedHeader, ProgramHeader, ProjectHeader

OUTPUTS = ("profile.log", "profile.csv", "profile_detail.csv", "summary.csv", "profile.xlsx")


def test_round_trip_keeps_every_field(tmp_path):
    e = Entry(
        label="forward_function (A : Affine)",
        phase="forward_function",
        samples_ns=[1.5, 2.5, 3.0],
        layer="A",
        layer_type="Affine",
        impl_class="Affine",
        in_place=True,
        calls_per_sample=4,
        overhead_ns=0.25,
        output_shape="8x10",
        params=90,
        flops=1000,
        bytes_read=10,
        bytes_written=20,
        dtype="float16",
    )
    p = Profile(
        header={"context": "cpu:half", "date": "2026-11-22T10:00:00+00:00"},
        notes=["n"],
        sections=[Section(kind="optimizer", name="O", network="Main", entries=[e], complete=True)],
        complete=False,
        failure="interrupted by Ctrl-C",
    )
    result_file.save(p, str(tmp_path))
    q = result_file.load(str(tmp_path))
    assert q == p
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["format"] == "nnprofile-result" and data["version"] == result_file.VERSION
    stats = data["sections"][0]["entries"][0]["stats_ns"]
    assert stats["n"] == 3 and stats["median"] == 2.25  # samples minus the 0.25 ns overhead


def test_a_version_1_file_keeps_loading():
    """A file written by the first release (checked in): it must load forever."""
    profile = result_file.load(os.path.join(GOLDEN, "result_v1.json"))
    assert profile.sections[0].entries[0].label == "load_dataset"
    assert profile.sections[0].entries[0].mean_ms > 0


def test_a_version_1_file_gets_layer_ids_by_name():
    profile = result_file.load(os.path.join(GOLDEN, "result_v1.json"))
    train = profile.sections[0]
    forward = {e.layer: e.layer_id for e in train.entries_of("forward_function")}
    backward = {e.layer: e.layer_id for e in train.entries_of("backward_function")}
    assert forward and all(backward[name] == forward[name] for name in backward)
    assert len(set(forward.values())) == len(forward)
    assert all(e.round_sizes == [] and e.complete for e in train.entries)


def test_a_version_2_file_keeps_loading():
    """Written by the release that sampled in rounds (checked in): it must load forever."""
    profile = result_file.load(os.path.join(GOLDEN, "result_v2.json"))
    train = profile.sections[0]
    assert train.complete and len(train.speed_levels) == 2
    conv = train.entries_of("forward_function")[0]
    assert conv.layer_id == 0 and conv.round_sizes == [1, 1] and conv.stats.rounds == 2
    assert [e.layer_id for e in train.entries_of("backward_function")][-1] == 0
    assert conv.output_bytes and conv.parameter_bytes is not None
    assert train.memory["peak_estimated"] > 0 and len(train.reference_ns) == 2


def test_a_version_3_file_keeps_loading():
    """Compact (one line per entry, whole-nanosecond totals), with what the budget allowed (checked in)."""
    path = os.path.join(GOLDEN, "result_v3.json")
    profile = result_file.load(path)
    train = profile.sections[0]
    assert train.sampling["lean"] and train.sampling["layer_every"] >= 2 and train.sampling["stopped"]
    raw = json.loads(open(path).read())["sections"][0]["entries"]
    assert all("samples_total_ns" in e and "samples_ns" not in e for e in raw)
    for e, r in zip(train.entries, raw):  # per call: the totals over the calls of each sample, exactly
        assert e.samples_ns == [t / e.calls_per_sample for t in r["samples_total_ns"]]
    layer = train.entries_of("forward_function")[5]
    assert 0 in layer.round_sizes  # its samples in the layer rounds only
    assert "_RecurrentInput[" in layer.layer


def test_a_version_4_file_keeps_loading():
    """A recorded program (a GAN, checked in): a section per graph, one for its step, layers' sources."""
    profile = result_file.load(os.path.join(GOLDEN, "result_v4.json"))
    assert [(s.kind, s.name) for s in profile.sections] == [
        ("graph", "loss_gen"),
        ("graph", "loss_dis"),
        ("script", "gan.py"),
    ]
    gen, dis, program = profile.sections
    assert gen.info["trained_by"] == ["Adam: gen"] and dis.info["trained_by"] == ["Adam: dis"]
    assert all(
        e.source and e.source.split(":")[0].endswith("gan.py")
        for e in gen.entries_of("forward_function")
        if e.layer_type not in ("Constant",)
    )
    assert "update (Adam: dis)" in [e.label for e in program.entries]


def test_a_version_5_file_keeps_loading():
    """A merged view of two ranks under mpirun, rank 1 a straggler (checked in): its ranks, each rank's
    mean per entry, a timeline with the rank of every event."""
    from nnprofile.analysis import analyze

    profile = result_file.load(os.path.join(GOLDEN, "result_v5.json"))
    assert profile.ranks["size"] == 2 and [r["rank"] for r in profile.ranks["ranks"]] == [0, 1]
    assert all(len(e.rank_means) == 2 for s in profile.sections for e in s.entries)
    assert {e.rank for e in profile.timeline} == {0, 1}
    ranks = analyze(profile).ranks
    assert ranks.straggler.rank == 1 and ranks.straggler.named and ranks.straggler.part == "input"


def test_a_result_of_one_process_has_no_ranks():
    for version in range(1, 5):
        assert result_file.load(os.path.join(GOLDEN, "result_v%d.json" % version)).ranks.to_json() == {}


def test_a_version_6_file_keeps_loading():
    """A project's profile with a typed header (checked in): every field by its name, none left over."""
    path = os.path.join(GOLDEN, "result_v6.json")
    profile = result_file.load(path)
    h = profile.header
    assert isinstance(h, ProjectHeader) and h.kind == "project" and not h.extra
    assert (h.project, h.data, h.batch_size, h.repeat) == ("tests/projects/shared_types.nntxt", "synthetic", 32, 1)
    assert h.implementation_classes == ["Affine", "CategoricalCrossEntropy", "ReLU", "Softmax", "Tanh"]
    raw = json.loads(open(path).read())["header"]
    assert raw["kind"] == "project" and set(raw) <= {name for name, _ in h.items()} | {"kind"}  # later fields: defaults
    assert profile.sections[0].entries[0].label == "load_dataset"


def test_every_earlier_header_is_read_as_the_kind_it_is():
    """Version 6 typed the header; earlier files are sorted by what they hold: a project's profile, a
    recorded program (version 4 and 5 said "script"), a merged view of ranks."""
    kinds = {v: result_file.load(os.path.join(GOLDEN, "result_v%d.json" % v)).header for v in range(1, 6)}
    assert [type(h) for h in kinds.values()] == [ProjectHeader] * 3 + [ProgramHeader, MergedHeader]
    assert kinds[1].requested_context == "cudnn:float" and kinds[1].timing_overhead_ns == 481.0
    assert str(kinds[4].steps).startswith("solver updates") and kinds[4].active_steps == 3
    assert kinds[5].ranks_merged == [0, 1] and kinds[5].world_size == 2 and kinds[5].hosts == ["vm"]
    assert all(not h.extra for h in kinds.values())  # every field an earlier version wrote has its name


def test_samples_that_are_not_whole_totals_are_kept_as_they_are(tmp_path):
    exact = Entry(label="a", phase="forward_all", samples_ns=[1000 / 3, 2000 / 3], calls_per_sample=3)
    odd = Entry(label="b", phase="update", samples_ns=[0.1, 0.25])
    result_file.save(Profile(sections=[Section("optimizer", "O", "N", [exact, odd], complete=True)]), str(tmp_path))
    raw = json.loads((tmp_path / "result.json").read_text())["sections"][0]["entries"]
    assert raw[0]["samples_total_ns"] == [1000, 2000] and raw[1]["samples_ns"] == [0.1, 0.25]
    again = result_file.load(str(tmp_path)).sections[0].entries
    assert again[0].samples_ns == exact.samples_ns and again[1].samples_ns == odd.samples_ns


def test_every_version_has_a_checked_in_file():
    for version in range(1, result_file.VERSION + 1):
        assert os.path.isfile(os.path.join(GOLDEN, "result_v%d.json" % version)), version


def test_missing_fields_take_their_defaults():
    data = {
        "format": "nnprofile-result",
        "version": 1,
        "header": {},
        "sections": [
            {
                "kind": "executor",
                "name": "E",
                "network": "R",
                "entries": [{"label": "forward_all", "phase": "forward_all", "samples_ns": [1000]}],
            }
        ],
    }
    p = result_file.from_dict(data)
    assert p.sections[0].entries[0].calls_per_sample == 1
    assert p.header == ProjectHeader() and p.header.kind == "project"  # a header's fields missing: defaults


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d: d.pop("header"), "no header"),
        (lambda d: d["sections"][0]["entries"][0].update(samples_ns=[float("nan")]), "samples_ns holds nan"),
        (lambda d: d["sections"][0]["entries"][0].update(samples_ns=[-5.0]), "samples_ns holds -5.0"),
        (lambda d: d["sections"][0]["entries"][0].update(samples_ns=[1e30]), "under a day"),
        (lambda d: d["sections"][0]["entries"][0].update(samples_total_ns=["x"]), "samples_total_ns holds 'x'"),
        (lambda d: d["sections"][0]["entries"][0].update(calls_per_sample=0), "calls_per_sample"),
        (lambda d: d["sections"][0]["entries"][0].update(round_sizes=[5]), "round_sizes count 5 samples"),
        (lambda d: d["sections"][0]["entries"][0].pop("label"), "without a label"),
    ],
)
def test_a_result_with_values_no_run_can_give_is_refused_naming_the_field(change, says):
    data = {
        "format": "nnprofile-result",
        "version": 8,
        "header": {"kind": "project"},
        "sections": [
            {
                "kind": "executor",
                "name": "E",
                "network": "R",
                "entries": [{"label": "forward_all", "phase": "forward_all", "samples_ns": [1000.0]}],
            }
        ],
    }
    change(data)
    with pytest.raises(ProfileError, match=re.escape(says)):
        result_file.from_dict(json.loads(json.dumps(data)))


def test_bad_result_files_are_clear_errors(tmp_path):
    with pytest.raises(ProfileError, match="no such result"):
        result_file.load(str(tmp_path))
    (tmp_path / "result.json").write_text("{not json")
    with pytest.raises(ProfileError, match="not a readable result"):
        result_file.load(str(tmp_path))
    (tmp_path / "result.json").write_text(json.dumps({"format": "nnprofile-result", "version": 99}))
    with pytest.raises(ProfileError, match="newer"):
        result_file.load(str(tmp_path))
    (tmp_path / "result.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(ProfileError, match="not an nnprofile result"):
        result_file.load(str(tmp_path))


@pytest.mark.slow
def test_report_reproduces_the_files_of_a_run_exactly(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_cli(LENET, "--runs", "2", "-o", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    again = tmp_path / "again"
    proc = run_cli("report", str(run_dir), "-o", str(again), "-q")
    assert proc.returncode == 0, proc.stderr
    for name in OUTPUTS:
        assert (run_dir / name).read_bytes() == (again / name).read_bytes(), name
    # in place, from the run's own folder: the same bytes again
    before = {n: (run_dir / n).read_bytes() for n in OUTPUTS}
    proc = run_cli("report", str(run_dir))
    assert proc.returncode == 0
    log, _, written = proc.stdout.rstrip("\n").rpartition("\n")
    assert log + "\n" == before["profile.log"].decode() and written.startswith("Written to %s: " % run_dir)
    assert {n: (run_dir / n).read_bytes() for n in OUTPUTS} == before


@pytest.mark.slow
def test_report_of_a_missing_result_is_one_line(tmp_path):
    proc = run_cli("report", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no such result" in proc.stderr


def test_a_version_7_file_keeps_loading(tmp_path):
    """A recorded program's profile (checked in: lstm_lm.py, 24 steps): the steps run without the hooks, the
    hooks' cost fitted to the program, what each graph is for, the eager work; and it renders every output."""
    from nnprofile.render import write_all

    profile = result_file.load(os.path.join(GOLDEN, "result_v7.json"))
    h = profile.header
    assert isinstance(h, ProgramHeader) and h.kind == "program" and not h.extra
    assert h.kept_steps == list(range(2, 22)) and h.plain_steps == [22, 23] and h.drift_threshold == 0.25
    assert {"signatures", "forward_scale", "backward_scale"} <= set(h.hooks_in_program)
    assert [(s.name, s.info.get("role")) for s in profile.sections[:-1]] == [
        ("loss", "trained"),
        ("vloss", "evaluation"),
    ]
    eager = [e.label for e in profile.sections[-1].entries_of("eager")]
    assert eager[:2] == ["eager (PowScalar at lstm_lm.py:75)", "eager (Sum at lstm_lm.py:75)"]
    written = write_all(profile, str(tmp_path))
    assert {os.path.basename(p) for p in written} >= {"profile.log", "report.html", "profile.xlsx", "result.json"}
    assert "Hooks in this program: the gaps between the functions" in (tmp_path / "profile.log").read_text()


def test_a_version_8_file_keeps_loading(tmp_path):
    """A long training's view (checked in: long_train.py, two windows): each window in a few figures, the
    schedule, the last window's sections; it renders every output, windows.csv among them."""
    from nnprofile.render import write_all

    profile = result_file.load(os.path.join(GOLDEN, "result_v8.json"))
    h = profile.header
    assert isinstance(h, ProgramHeader) and not h.extra and h.window == 0
    assert str(h.schedule) == "wait 2, warmup 1, active 3, repeat 2 (2 windows)"
    assert [(w.window, w.first_step, w.last_step, w.folder) for w in profile.windows] == [
        (1, 4, 6, "window-1"),
        (2, 30, 32, "window-2"),
    ]
    assert [p for p, _ in profile.windows[0].parts][:2] == ["input (data)", "forward (loss)"]
    written = write_all(profile, str(tmp_path))
    assert "windows.csv" in {os.path.basename(p) for p in written}
    assert "Windows: 2 recorded" in (tmp_path / "profile.log").read_text()


def test_a_version_9_file_keeps_loading():
    """A recorded program with calls inside calls (checked in): children, a graph that writes parameters, the files
    its run wrote, the whole run's steps, what the machine reaches."""
    path = os.path.join(GOLDEN, "result_v9.json")
    profile = result_file.load(path)
    assert any(e.children for s in profile.sections for e in s.entries)
    assert {s.info.get("role") for s in profile.sections[:-1]} >= {"trained", "updates"}
    assert "result.json" in profile.files and "profile.log" in profile.files
    assert profile.header.run_steps == 3 and profile.header.machine_rates.get("gflops", 0) > 0


def test_a_version_10_file_keeps_loading(tmp_path):
    """A recorded program measured beside three processes that kept both cores busy (checked in): what other work
    took of its kept steps, the samples it held up with the time it took of each (taken off), the steps with their
    waits taken off."""
    from nnprofile.render import write_all

    profile = result_file.load(os.path.join(GOLDEN, "result_v10.json"))
    found = profile.interference()
    assert found.measured and 0.1 < found.share < 0.9 and found.switches > 0
    held = [e for s in profile.sections for e in s.entries if e.disturbed]
    assert held and found.disturbed == sum(len(e.disturbed) for e in held)
    for e in held:
        assert len(e.taken_ns) == len(e.disturbed) and e.stats.disturbed == len(e.disturbed)
        if e.phase in ("load_dataset", "monitor_loss"):  # a wait held up: the time taken not known, left out
            assert set(e.taken_ns) == {None} and e.stats.n == len(e.samples_ns) - len(e.disturbed)
        else:  # a computation held up: counted less the time taken of it
            assert all(t is not None and 0 < t < e.samples_ns[i] for t, i in zip(e.taken_ns, e.disturbed))
            assert e.stats.n == len(e.samples_ns)
            left = [v - (e.taken_ns[e.disturbed.index(i)] if i in e.disturbed else 0) for i, v in enumerate(e.values())]
            assert e.stats.max == max(left)
    assert "load_dataset" in {e.phase for e in held}
    step = profile.sections[-1].entries_of("step")[0]
    assert len(step.waited_ns) == len(step.samples_ns) and any(step.waited_ns)
    write_all(profile, str(tmp_path))
    assert "Interference: other processes took" in (tmp_path / "profile.log").read_text()


def test_a_sections_details_read_typed_and_write_back_as_every_version_wrote_them():
    """Each checked-in file's section info loads into its typed fields (a graph's trainers, the program's own lines
    as sampled) and is written back as read, key for key; a field a later version adds is kept as read; a field of
    the wrong kind is one clear error naming the section."""
    import json
    from nnprofile.base.errors import ProfileError
    from nnprofile.result.details import SampledLine, SectionInfo

    for name in sorted(os.listdir(GOLDEN)):
        if not name.startswith("result_v"):
            continue
        with open(os.path.join(GOLDEN, name), encoding="utf-8") as f:
            raw = json.load(f)
        profile = result_file.load(os.path.join(GOLDEN, name))
        for section, written in zip(profile.sections, raw["sections"]):
            assert section.info.to_json() == written.get("info", {}), (name, section.name)
            assert section.memory.to_json() == written.get("memory", {}), (name, section.name)
            assert list(section.memory.to_json()) == list(written.get("memory", {}))  # in the order written
            assert section.sampling.to_json() == written.get("sampling", {}), (name, section.name)
        assert profile.ranks.to_json() == raw.get("ranks", {}), name
    v10 = result_file.load(os.path.join(GOLDEN, "result_v10.json"))
    graphs = [s for s in v10.sections if s.kind == "graph"]
    assert graphs and all(isinstance(s.info.trained_by, list) and s.info.role for s in graphs)
    from nnprofile.result.details import LoadBurst

    step = SectionInfo(
        own_samples=40,
        own_lines=[SampledLine("train.py:57", "main", "x.d = rows", 30)],
        own_clock=("cpu", 0.25),
        load_dataset_burst=LoadBurst(0.5, 100, 3),
    )
    written = step.to_json()
    assert written["own_lines"] == [["train.py:57", "main", "x.d = rows", 30]] and written["own_clock"] == ["cpu", 0.25]
    assert SectionInfo.from_json(json.loads(json.dumps(written))) == step
    later = SectionInfo.from_json({"role": "trained", "what_v99_says": [1, 2]})
    assert later.role == "trained" and later.to_json() == {"role": "trained", "what_v99_says": [1, 2]}
    assert later["role"] == "trained" and later.get("graph") is None and "role" in later  # read as the old dict
    data = json.loads(result_file.dumps(v10))
    data["sections"][0]["info"]["trained_by"] = "Adam"
    with pytest.raises(ProfileError, match="info holds a field of the wrong kind .*trained_by"):
        result_file.from_dict(data)


def test_a_record_read_by_name_reads_as_its_json_does():
    """A typed record read by name (``record["x"]``, ``.get``, ``in``) gives what its JSON holds, field by field
    (without making the whole JSON each time): sparse and dense records, empty or not, and names it keeps as read."""
    from nnprofile.base.buffers import StepMemory
    from nnprofile.result.details import SectionInfo

    records = [SectionInfo(), SectionInfo(graph="g", passes={"forward": 3}), StepMemory(), StepMemory(batch_size=8)]
    records.append(SectionInfo.from_json({"graph": "h", "mystery": [1, 2]}))
    for record in records:
        data = record.to_json()
        for name in set(data) | {"graph", "batch_size", "mystery", "nothing"}:
            assert (name in record) == (name in data), (record, name)
            assert record.get(name, "absent") == (data[name] if data.get(name) is not None else "absent")


def test_a_version_14_file_keeps_where_the_program_waited():
    profile = result_file.load(os.path.join(GOLDEN, "result_v14.json"))
    [line] = [l for l in profile.sections[-1].info.own_lines if l.waited_ms]
    assert line.text == "time.sleep(0.004)" and line.waited_ms > 0
    [solver] = profile.sections[-1].info.solvers
    assert solver.type == "Sgd" and solver.module == "nnabla.solver"  # its class's module (since 14)
    assert result_file.load(os.path.join(GOLDEN, "result_v13.json")).sections[-1].info.solvers[0].module == ""
