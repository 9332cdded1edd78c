"""Distributed training: each rank records into OUTDIR/rank-K/, communication is timed, and the ranks
merge into one view that names the straggler, with its evidence, and who waits for it.

The rules are tested on hand-made rank results (exact figures); then for real, with ``mpirun -n 2``
over tests/scripts/data_parallel.py on the CPU, with tests/mpi_comm's communicator (NNabla's CPU
build has none) put in place of nnabla.communicators' factories.
"""

import copy
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import pytest

import nnprofile
import trace_check
from conftest import ROOT, require, run_cli
from nnprofile.analysis import analyze
from nnprofile.analysis.ranks import STRAGGLER_FACTOR, analyze_ranks
from nnprofile.render.advice import ratio_interval, words
from nnprofile.render.ranks import summary_lines
from nnprofile.recording import launcher
from nnprofile.merging.ranks import Found, align_clocks, collect, merge
from nnprofile.result import Entry, Profile, Section, file as result_file

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
MPI_COMM = os.path.join(ROOT, "tests", "mpi_comm")
MS = 1_000_000


# -- which rank: the launchers' environments ------------------------------------------------------


def test_the_rank_and_world_come_from_the_launcher_that_started_the_process():
    w = launcher.world(
        {
            "OMPI_COMM_WORLD_RANK": "1",
            "OMPI_COMM_WORLD_SIZE": "4",
            "OMPI_COMM_WORLD_LOCAL_RANK": "1",
            "OMPI_MCA_ess_base_jobid": "77",
        }
    )
    assert (w.rank, w.size, w.launcher, w.launch, w.local_rank) == (1, 4, "Open MPI", "77", 1)
    assert launcher.world({"PMI_RANK": "2", "PMI_SIZE": "3"}).launcher == "PMI"  # MPICH, Intel MPI (Hydra)
    assert launcher.world({"MV2_COMM_WORLD_RANK": "0", "MV2_COMM_WORLD_SIZE": "2"}).launcher == "MVAPICH"
    slurm = launcher.world({"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_STEP_ID": "0", "SLURM_JOB_ID": "9"})
    assert (slurm.rank, slurm.size, slurm.launch) == (3, 8, "9.0")
    # A batch script of Slurm (no step) runs one process; no launcher at all; a rank out of its world.
    assert launcher.world({"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}) is None
    assert launcher.world({}) is None
    assert launcher.world({"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"}) is None


# -- the analysis, on hand-made ranks --------------------------------------------------------------


def _ranks_data(steps, per_rank, method="the ranks ran on one host (h) and share its monotonic clock"):
    """``per_rank``: rank -> dict of part -> list of ms per step (and "enter": ms per step)."""
    rows = []
    for rank, parts in per_rank.items():
        stored = {
            p: [x * MS for x in parts.get(p, [0.0] * len(steps))]
            for p in ("input", "forward", "backward", "update", "monitor", "communication")
        }
        step = [
            sum(stored[p][i] for p in stored) + parts.get("other", [0.0] * len(steps))[i] * MS
            for i in range(len(steps))
        ]
        enter = parts.get("enter")
        rows.append(
            {
                "rank": rank,
                "host": "h",
                "complete": True,
                "failure": None,
                "step_ns": step,
                "parts_ns": stored,
                "collective": {"name": "all_reduce", "enter_ns": [x * MS for x in enter], "exit_ns": [0] * len(steps)}
                if enter
                else None,
            }
        )
    return {
        "size": len(per_rank),
        "launcher": "Open MPI",
        "missing": [],
        "stale": [],
        "clock": {"method": method, "offsets_ns": [0] * len(per_rank)},
        "steps": steps,
        "ranks": rows,
    }


def test_a_rank_waits_in_collectives_for_the_time_the_slowest_spends_beyond_it():
    # Rank 1 reads its data 30 ms longer; rank 0 waits that long inside all_reduce (1 ms is the transfer).
    steps = [2, 3, 4, 5]
    data = _ranks_data(
        steps,
        {
            0: {
                "input": [1, 1, 1, 1],
                "forward": [5, 5, 5, 5],
                "backward": [8, 8, 8, 8],
                "update": [1, 1, 1, 1],
                "communication": [31, 32, 30, 31],
                "other": [1, 1, 1, 1],
                "enter": [15, 55, 95, 135],
            },
            1: {
                "input": [31, 32, 30, 31],
                "forward": [5, 5, 5, 5],
                "backward": [8, 8, 8, 8],
                "update": [1, 1, 1, 1],
                "communication": [1, 1, 1, 1],
                "other": [1, 1, 1, 1],
                "enter": [45, 86, 125, 166],
            },
        },
    )
    r = analyze_ranks(Profile(ranks=data))
    zero, one = r.rank(0), r.rank(1)
    assert zero.wait_ms == pytest.approx(30.0) and one.wait_ms == 0.0
    assert zero.busy_ms == pytest.approx(zero.step_ms - 30.0)
    assert one.busy_ms - zero.busy_ms == pytest.approx(zero.wait_ms)
    for rank in r.ranks:  # the parts add up to the step
        assert sum(rank.parts.values()) == pytest.approx(rank.step_ms)
    assert [s.slowest for s in r.steps] == [1, 1, 1, 1] and [s.last_in for s in r.steps] == [1, 1, 1, 1]
    s = r.straggler
    assert s.rank == 1 and s.named and s.part == "input" and s.low > 1 + STRAGGLER_FACTOR
    assert (s.last_in, s.last_in_steps) == (4, 4)
    assert s.part_ms == pytest.approx(31.0) and s.others_part_ms == pytest.approx(1.0)
    rules = [a.rule for a in r.advice]
    assert rules[0] == "straggler" and "input_bound_rank" in rules and "communication" in rules
    assert "Rank 1 is the straggler" in words(r.advice[0]).text


def test_no_straggler_is_named_within_ten_percent_or_without_an_interval():
    even = _ranks_data(
        [1, 2, 3, 4],
        {
            0: {"forward": [10, 11, 10, 11], "communication": [1.5, 1.0, 1.2, 1.1]},
            1: {"forward": [10.5, 10.6, 10.4, 10.9], "communication": [1.0, 1.4, 1.0, 1.0]},
            2: {"forward": [10.2, 10.8, 10.1, 11.2], "communication": [1.3, 1.1, 1.1, 1.0]},
        },
    )
    r = analyze_ranks(Profile(ranks=even))
    assert r.straggler is not None and not r.straggler.named
    assert not any(a.rule == "straggler" for a in r.advice)
    one_step = _ranks_data([1], {0: {"forward": [10]}, 1: {"forward": [30]}})
    s = analyze_ranks(Profile(ranks=one_step)).straggler
    assert s.rank == 1 and s.low is None and not s.named  # 3x, but one step gives no interval
    assert "no interval" in ratio_interval(s.low, s.high, s.steps)
    assert analyze_ranks(Profile()) is None


# -- merging rank results --------------------------------------------------------------------------


def _rank_profile(rank, size, host="h", origin=0, comm_ms=(1.0, 1.0), input_ms=(0.5, 0.5), shift=0, launch="L"):
    """A rank's result: two kept steps (2 and 3) of 10 ms, each with input, a pass and an all_reduce."""
    layer = Entry(
        "forward_function (conv : Convolution)",
        "forward_function",
        [0.4 * MS + rank * 1000, 0.4 * MS],
        layer="conv",
        layer_id=0,
        layer_type="Convolution",
        round_sizes=[1, 1],
    )
    graph = Section(
        "graph",
        "loss",
        "",
        [layer, Entry("forward_all", "forward_all", [1.0 * MS, 1.0 * MS], round_sizes=[1, 1])],
        complete=True,
    )
    script = Section(
        "script",
        "train.py",
        "",
        [
            Entry("load_dataset (data)", "load_dataset", [x * MS for x in input_ms], round_sizes=[1, 1]),
            Entry("all_reduce (MPICommunicator)", "communication", [x * MS for x in comm_ms], round_sizes=[1, 1]),
            Entry("step", "step", [10.0 * MS, 10.0 * MS], round_sizes=[1, 1]),
        ],
        complete=True,
    )
    timeline = []
    for i, step in enumerate((2, 3)):
        start = i * 10 * MS + shift
        timeline.append(
            {"name": "step %d" % step, "cat": "step", "start": start, "end": start + 10 * MS, "args": {"step": step}}
        )
        timeline.append(
            {
                "name": "all_reduce",
                "cat": "communication",
                "start": start + int((8 - comm_ms[i]) * MS),
                "end": start + 8 * MS,
                "args": {"bytes": 64},
            }
        )
        timeline.append(
            {
                "name": "conv",
                "cat": "forward",
                "start": start + 1 * MS,
                "end": start + 2 * MS,
                "args": {"class": "Convolution"},
            }
        )
    header = {
        "kind": "program",
        "project": "train.py",
        "rank": rank,
        "world_size": size,
        "launcher": "Open MPI",
        "launch": launch,
        "host": host,
        "clock_origin_ns": origin,
        "skipped_steps": 1,
        "started_unix": 1000.0,
    }
    return Profile(header=header, sections=[graph, script], complete=True, timeline=timeline)


def test_merging_pools_every_ranks_calls_and_keeps_each_ranks_mean():
    found = Found({0: _rank_profile(0, 2), 1: _rank_profile(1, 2)}, 2, launcher="Open MPI", launch="L")
    merged = merge(found)
    conv = merged.sections[0].entries[0]
    assert len(conv.samples_ns) == 4 and conv.round_sizes == [1, 1, 1, 1]
    assert conv.rank_means == [pytest.approx(0.4), pytest.approx(0.4005)]
    assert conv.rank_cv is not None and conv.rank_cv > 0
    assert merged.complete and merged.failure is None
    assert merged.ranks["steps"] == [2, 3] and [r["rank"] for r in merged.ranks["ranks"]] == [0, 1]
    # Layers stay in each rank's own trace; the merged timeline has each rank's steps and calls.
    assert {e.rank for e in merged.timeline} == {0, 1}
    assert not any("class" in e.args for e in merged.timeline)
    # It is a result like any other: saved, loaded, rendered, with a process per rank in the trace.
    again = result_file.from_dict(json.loads(result_file.dumps(merged)))
    assert again.ranks.to_json() == json.loads(json.dumps(merged.ranks.to_json()))
    assert again.sections[0].entries[0].rank_means == conv.rank_means
    from nnprofile.render import render

    files = render(again)
    assert "ranks.csv" in files and "rank_steps.csv" in files
    trace = json.loads(gzip.decompress(files["trace.json.gz"]))
    assert {e["pid"] for e in trace["traceEvents"] if e["ph"] == "X"} == {1, 2}
    assert "Ranks: 2 of 2 merged (Open MPI)" in files["profile.log"]


def test_calls_outside_the_kept_steps_are_in_no_rank_step():
    """A barrier after the loop (its rank's wait for the others at the end) is a section of calls outside the kept
    steps: its rounds are the stretches before and after them, never the first steps."""
    profiles = {}
    for rank in (0, 1):
        p = _rank_profile(rank, 2)
        barrier = Entry("barrier (MPICommunicator)", "communication", [400.0 * MS], round_sizes=[0, 1])
        p.sections.insert(
            1,
            Section(
                "outside",
                "train.py",
                "",
                [barrier],
                complete=True,
                info={"outside": "before the first kept step and after the last"},
            ),
        )
        profiles[rank] = p
    merged = merge(Found(profiles, 2, launcher="Open MPI", launch="L"))
    for row in merged.ranks["ranks"]:
        assert row["parts_ns"]["communication"] == [1.0 * MS, 1.0 * MS]
        assert row["step_ns"] == [10.0 * MS, 10.0 * MS]
    assert analyze_ranks(merged).rank(0).wait_ms == 0


def test_a_missing_rank_is_named_and_the_merge_is_incomplete():
    merged = merge(Found({0: _rank_profile(0, 3), 2: _rank_profile(2, 3)}, 3, missing=[1], launcher="Open MPI"))
    assert not merged.complete and merged.failure == "no result from rank 1 of 3"
    assert merged.ranks["missing"] == [1]
    assert "no result from rank 1" in "\n".join(summary_lines(analyze(merged).ranks))


def test_collect_waits_for_the_missing_ranks_and_leaves_out_another_launchs_result(tmp_path):
    for rank in (0, 1):
        os.makedirs(tmp_path / ("rank-%d" % rank))
    result_file.save(_rank_profile(0, 2, launch="new"), str(tmp_path / "rank-0"))
    result_file.save(_rank_profile(1, 2, launch="old"), str(tmp_path / "rank-1"))  # an earlier launch's
    now = [0.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds
        if len(slept) == 5:  # rank 1 of this launch arrives while rank 0 waits
            result_file.save(_rank_profile(1, 2, launch="new"), str(tmp_path / "rank-1"))
            t = time.time() + 5  # a newer modification time than the old file's
            os.utime(tmp_path / "rank-1" / "result.json", (t, t))

    found = collect(str(tmp_path), wait=60, clock=lambda: now[0], sleep=sleep)
    assert sorted(found.profiles) == [0, 1] and not found.missing and len(slept) == 5
    # Without time to wait, the stale result is named and left out.
    result_file.save(_rank_profile(1, 2, launch="old"), str(tmp_path / "rank-1"))
    t = time.time() + 10
    os.utime(tmp_path / "rank-1" / "result.json", (t, t))
    found = collect(str(tmp_path), wait=0)
    assert found.missing == [1] and found.stale == [1]


def test_clocks_of_one_host_align_by_their_origins_and_across_hosts_at_a_collective():
    known = 7_000_000_123  # rank 1's clock reads this much later than rank 0's for one instant
    same = [_rank_profile(0, 2, origin=50 * MS), _rank_profile(1, 2, origin=50 * MS + known)]
    offsets, method = align_clocks(same, ["h", "h"], [2, 3])
    assert offsets == [0, known] and method.kind == "clock_one_host" and "one host" in method
    # Across hosts: rank 1's events sit 3 ms later on its own timeline than the same instants on rank
    # 0's; aligning at the end of the first collective takes exactly that off.
    apart = [_rank_profile(0, 2, host="a"), _rank_profile(1, 2, host="b", shift=3 * MS)]
    offsets, method = align_clocks(apart, ["a", "b"], [2, 3])
    assert offsets[0] - offsets[1] == 3 * MS and method.figures == {"collective": "all_reduce", "step": 2, "hosts": 2}
    assert "aligned at the end of the first all_reduce of step 2" in method
    lonely = copy.deepcopy(apart)
    lonely[1].timeline = [e for e in lonely[1].timeline if e.cat != "communication"]
    offsets, method = align_clocks(lonely, ["a", "b"], [2, 3])
    assert offsets == [0, 0] and method.kind == "clock_not_aligned" and str(method).startswith("not aligned")
    # The merge states the method, and every rank's events land on the aligned clock.
    merged = merge(Found({0: apart[0], 1: apart[1]}, 2))
    ends = {
        e.rank: e.end
        for e in merged.timeline
        if e.cat == "communication" and e.name == "all_reduce" and e.start < 10 * MS + 3 * MS
    }
    assert ends[0] == ends[1]


# -- a rank of a launcher, in one process ---------------------------------------------------------


def _train(steps=6):
    import numpy as np
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    x = nn.Variable((4, 3))
    with nn.parameter_scope("fc"):
        loss = F.mean(PF.affine(x, 2))
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    for _ in range(steps):
        x.d = np.random.rand(4, 3)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()


@pytest.mark.slow
def test_a_rank_writes_into_its_own_folder_and_rank_0_merges_what_is_there(tmp_path, capsys):
    rec = nnprofile.Recording(outdir=tmp_path, skip_first=1, active=3, world=launcher.World(1, 2, "Open MPI", "L"))
    with rec:
        _train()
    assert rec.written_to == str(tmp_path / "rank-1") and rec.merged is None
    assert os.path.exists(tmp_path / "rank-1" / "result.json") and not os.path.exists(tmp_path / "result.json")
    header = nnprofile.load(tmp_path / "rank-1").header
    assert (header.rank, header.world_size, header.launch) == (1, 2, "L")
    zero = nnprofile.Recording(
        outdir=tmp_path, skip_first=1, active=3, world=launcher.World(0, 2, "Open MPI", "L"), merge_wait=0
    )
    with zero:
        _train()
    assert zero.merged is not None and zero.merged.complete
    assert nnprofile.load(tmp_path).ranks["ranks"][1]["rank"] == 1


class _FakeCommunicator:
    """A communicator of rank 1 in a world of 2, reducing nothing: what a program's comm tells."""

    def __init__(self, ctx=None):
        self.rank, self.size, self.local_rank = 0, 1, 0

    def init(self):
        self.rank, self.size = 1, 2

    def all_reduce(self, data, division=False, inplace=False, group="world"):
        pass

    def bcast(self, data, src, inplace=False, group="world"):
        pass

    def barrier(self):
        pass


@pytest.mark.slow
def test_without_a_launcher_the_programs_communicator_tells_the_rank(tmp_path, monkeypatch):
    import nnabla.communicator as bound
    import nnabla.communicators as communicators

    for module in (communicators, bound):
        for name in ("MultiProcessDataParallelCommunicator", "MultiProcessCommunicator", "Comm", "Dist"):
            monkeypatch.setattr(module, name, _FakeCommunicator, raising=False)
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(var, raising=False)
    import nnabla.communicators as C

    with nnprofile.record(outdir=tmp_path, skip_first=0, active=3) as rec:
        comm = C.MultiProcessDataParallelCommunicator(None)
        comm.init()
        _train(4)
        comm.barrier()
    assert isinstance(comm, _FakeCommunicator)  # the proxy passes for what it wraps
    assert rec.run_world().launcher == "communicator" and rec.written_to == str(tmp_path / "rank-1")
    script = next(s for s in rec.profile.sections if s.kind == "script")
    assert "barrier (_FakeCommunicator)" not in [e.label for e in script.entries]  # after the last step
    assert rec.profile.header.world_size == 2


# -- for real: mpirun -n 2 ---------------------------------------------------------------------------


def _mpirun_available():
    if shutil.which("mpirun") is None:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _mpirun(outdir, *script_args, ranks=2, options=(), timeout=300):
    require(_mpirun_available(), "mpirun (Debian's openmpi-bin) with mpi4py")
    env = dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        PYTHONPATH=MPI_COMM,
    )
    cmd = [
        "mpirun",
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        "nnprofile",
        "run",
        "-o",
        str(outdir),
        *options,
        os.path.join(SCRIPTS, "data_parallel.py"),
        *script_args,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def straggler(tmp_path_factory):
    """Rank 1 reads each batch 30 ms later (no prefetch thread hides it): a straggler."""
    out = tmp_path_factory.mktemp("dp") / "out"
    log = tmp_path_factory.mktemp("dp") / "comm"
    proc = _mpirun(
        out,
        "--iterations",
        "28",
        "--slow-rank",
        "1",
        "--slow-ms",
        "30",
        "--comm-log",
        str(log),
        options=("--active", "20"),
    )
    return out, log, proc


@pytest.mark.slow
@pytest.mark.serial
def test_under_mpirun_each_rank_writes_its_own_result_and_rank_0_prints_the_merge(straggler):
    out, _, proc = straggler
    assert proc.returncode == 0, proc.stderr[-2000:]
    for rank in (0, 1):
        p = nnprofile.load(out / ("rank-%d" % rank))
        assert p.header.rank == rank and p.header.world_size == 2 and p.complete
    assert proc.stdout.count("Profile Completed.") == 1  # only rank 0 prints: the merged view
    assert "Ranks: 2 of 2 merged (Open MPI)" in proc.stdout
    merged = nnprofile.load(out)
    assert merged.header.ranks_merged == [0, 1] and merged.complete
    for name in ("profile.log", "ranks.csv", "rank_steps.csv", "profile.xlsx", "report.html", "trace.json.gz"):
        assert os.path.exists(out / name)
    trace = trace_check.load(str(out / "trace.json.gz"))
    complete = trace_check.check(trace)  # the format, and every rank's events nested on its own track
    assert {e["pid"] for e in complete} == {1, 2}
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert names[0].startswith("rank 0") and names[1].startswith("rank 1")


@pytest.mark.slow  # (mpirun, and figures of two ranks' steps that a loaded machine moves)
@pytest.mark.serial
def test_the_merge_names_the_straggler_its_input_and_what_rank_0_waits(straggler):
    out, log, proc = straggler
    r = analyze(nnprofile.load(out)).ranks
    s = r.straggler
    assert s.rank == 1 and s.named and s.part == "input", s
    assert s.last_in == s.last_in_steps == 20  # it entered every all_reduce last (of the 20 kept steps)
    zero, one = r.rank(0), r.rank(1)
    # Rank 0 waits inside all_reduce for the difference of the two ranks' busy time, within 20 %.
    assert zero.wait_ms == pytest.approx(one.busy_ms - zero.busy_ms, rel=0.20)
    # ... which is what the program's own clock has rank 0 wait: how much longer its all_reduce took than rank
    # 1's. Rank 1's data source sleeps 30 ms a batch; on a busy machine its thread then waits for a CPU too, so the
    # wait is not 30 ms but what the program timed (rank 0's wait read 37 to 41 ms at a load of 2 in 5 of 12 runs).
    ranks = [nnprofile.load(out / ("rank-%d" % k)) for k in (0, 1)]

    def mean_ms(kind, k):
        kept = _kept(log, kind, ranks[k])
        return sum(kept) / len(kept) / 1e6

    assert mean_ms("reads.", 1) >= 30.0
    waited = mean_ms("", 0) - mean_ms("", 1)
    assert zero.wait_ms == pytest.approx(waited, rel=0.20)
    own = [next(e for e in p.sections[-1].entries if e.label.startswith("all_reduce")) for p in ranks]
    assert own[0].mean_ms - own[1].mean_ms == pytest.approx(waited, rel=0.20)
    assert "Straggler: rank 1" in (out / "profile.log").read_text()
    assert r.advice[0].rule == "straggler"


def _kept(log, kind, rank):
    """What the program timed itself (ns) in each step the rank's profile ``rank`` kept: around its all_reduce
    (``kind`` "") or its read of a batch ("reads.")."""
    return _timed(log, kind, rank, rank.header.kept_steps)


def _timed(log, kind, rank, steps):
    """What the program timed itself (ns) in each of ``steps`` (numbered from 1), as ``_kept`` reads it."""
    with open("%s.%s%d" % (log, kind, rank.header.rank)) as f:
        timed = json.load(f)  # every iteration's
    return [timed[step - 1] for step in steps]  # step k is iteration k - 1


@pytest.mark.slow
@pytest.mark.serial
def test_the_communication_entries_are_the_time_the_program_measures_around_its_calls(straggler):
    out, log, proc = straggler
    for rank in (0, 1):
        p = nnprofile.load(out / ("rank-%d" % rank))
        entry = next(e for e in p.sections[-1].entries if e.label.startswith("all_reduce"))
        kept = _kept(log, "", p)  # ns around each all_reduce the rank kept
        assert len(kept) == len(entry.samples_ns)
        # Call by call, the kept steps' calls follow the program's: their figures are the calls as timed in the
        # hooked steps, set to what the steps without the hooks take (one factor for them all), so each over the
        # program's own is one ratio. A pause between its clock and the proxy's (a garbage collection; the rank
        # descheduled while the other rank's MPI polls both cores: 2 to 4 ms against calls of 1 ms, seen in 2 of 10
        # calls) is in its figure and not in ours, so not every call need agree; most must, within 5%.
        ratios = [a / b for a, b in zip(entry.samples_ns, kept)]
        middle = statistics.median(ratios)
        agree = [abs(r - middle) <= 0.05 * middle for r in ratios]
        assert sum(agree) >= 0.7 * len(agree), list(zip(entry.samples_ns, kept))
        # The figure: what the program measures around the calls in the steps run without the hooks. Ours lies inside
        # its window (5% and 20 us above at most: its clock readings and the proxy's call lie in its window and not
        # in ours), and a pause lifts its figure, never ours: ours is no less than its quickest call less as much.
        [lean] = [n for n in p.notes if n.kind == "lean_step"]
        plain = _timed(log, "", p, lean.figures["plain_steps"])
        assert statistics.mean(entry.samples_ns) <= 1.05 * statistics.mean(plain) + 20_000, (entry.samples_ns, plain)
        assert statistics.mean(entry.samples_ns) >= 0.95 * min(plain) - 20_000, (entry.samples_ns, plain)
        assert entry.bytes_read == 4 * (16 * 9 + 16 + 16 * 8 * 8 * 10 + 10)  # the gradients: conv and fc


@pytest.mark.slow
@pytest.mark.serial
def test_report_and_check_take_the_merged_view(straggler, tmp_path):
    out, _, _ = straggler
    again = run_cli("report", str(out), "-o", str(tmp_path), "-q")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "profile.log").read_text() == (out / "profile.log").read_text()
    assert (tmp_path / "ranks.csv").read_text() == (out / "ranks.csv").read_text()
    gate = run_cli("check", str(out), str(out))
    assert gate.returncode == 0, gate.stdout + gate.stderr


@pytest.mark.slow
def test_when_a_rank_dies_the_others_results_stay_and_the_merge_names_it(tmp_path):
    out = tmp_path / "out"
    proc = _mpirun(out, "--iterations", "40", "--die-rank", "1", "--die-at", "8")
    assert proc.returncode != 0
    assert not os.path.exists(out / "rank-1" / "result.json")
    zero = nnprofile.load(out / "rank-0")  # written on the launcher's SIGTERM, while blocked in all_reduce
    assert not zero.complete and "SIGTERM" in zero.failure
    assert len(next(s for s in zero.sections if s.kind == "script").entries_of("step")[0].samples_ns) >= 5
    merged = run_cli("merge", str(out))
    assert merged.returncode == 1 and "no result from rank 1 of 2" in merged.stderr
    assert "Traceback" not in merged.stderr
    assert "no result from rank 1" in (out / "profile.log").read_text()
    assert nnprofile.load(out).ranks["missing"] == [1]


@pytest.mark.slow
def test_merge_says_in_one_line_what_is_wrong(tmp_path):
    nothing = run_cli("merge", str(tmp_path))
    assert nothing.returncode == 2 and nothing.stderr.count("\n") == 1 and "rank-K" in nothing.stderr
    missing = run_cli("merge", str(tmp_path / "absent"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr


@pytest.mark.slow
def test_on_demand_under_mpirun_every_rank_or_one_named_rank(tmp_path):
    """nnprofile capture of mpirun's PID: mpirun passes the signal on, every rank records a window; with
    --rank 1, rank 1 alone records its next."""
    require(_mpirun_available(), "mpirun (Debian's openmpi-bin) with mpi4py")
    out = tmp_path / "out"
    env = dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        PYTHONPATH=MPI_COMM,
    )
    proc = subprocess.Popen(
        [
            "mpirun",
            "-n",
            "2",
            sys.executable,
            "-m",
            "nnprofile",
            "run",
            "-q",
            "--on-demand",
            "--active",
            "5",
            "-o",
            str(out),
            os.path.join(SCRIPTS, "data_parallel.py"),
            "--iterations",
            "6000",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def wait_for(*paths):
            deadline = time.time() + 120
            while not all(os.path.exists(p) for p in paths):
                assert proc.poll() is None, proc.communicate()
                assert time.time() < deadline, paths
                time.sleep(0.05)

        wait_for(out / "rank-0" / "on-demand.json", out / "rank-1" / "on-demand.json")
        asked = run_cli("capture", str(proc.pid))
        assert asked.returncode == 0 and "(every rank)" in asked.stdout, asked.stderr
        wait_for(out / "rank-0" / "window-1" / "result.json", out / "rank-1" / "window-1" / "result.json")
        asked = run_cli("capture", str(proc.pid), "--rank", "1")
        assert asked.returncode == 0 and "rank-1/window-2" in asked.stdout, asked.stderr
        wait_for(out / "rank-1" / "window-2" / "result.json")
        assert not (out / "rank-0" / "window-2").exists()
    finally:
        stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    assert stderr.count("written to") == 3


@pytest.mark.slow
def test_a_rank_still_running_is_merged_as_far_as_it_has_written_and_said(tmp_path):
    """``nnprofile merge`` while rank 1 still holds its folder (it writes there yet): merged, and said on stderr."""
    from nnprofile.base.outdir import Lock

    for rank in (0, 1):
        os.makedirs(tmp_path / ("rank-%d" % rank))
        result_file.save(_rank_profile(rank, 2, launch="one"), str(tmp_path / ("rank-%d" % rank)))
    lock = Lock(str(tmp_path / "rank-1")).acquire()
    try:
        proc = run_cli("merge", "-q", str(tmp_path))
    finally:
        lock.release()
    assert proc.returncode == 0, proc.stderr
    assert "nnprofile: warning: rank 1 still running: merged as far as it has written" in proc.stderr
    assert "warning" not in run_cli("merge", "-q", str(tmp_path)).stderr
