"""A guest in the user's training: what nnprofile does or fails to do never harms the program, the user's files or
the gate. Each attack as a user meets it: a full disk (injected through the writer; a small tmpfs where root may
mount one), a folder that cannot be written, two runs into one folder, SIGINT twice, SIGTERM and SIGKILL at
seeded points, a dataset named ``..`` beside the user's files, ``capture`` pointed at a stranger, a gate fooled by
a slow context or by unrelated results, and options no run can take.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import nnprofile
from conftest import LENET, ROOT, interruptible, run_cli

LONG = os.path.join(ROOT, "tests", "scripts", "long_train.py")
FAULTS = os.path.join(ROOT, "tests", "faults")
pytestmark = pytest.mark.slow


def _env(**extra):
    return dict(os.environ, PYTHONPATH=os.pathsep.join([FAULTS, ROOT]), **extra)


def _run(*args, env=None, cwd=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "nnprofile", *args],
        capture_output=True,
        text=True,
        env=env or os.environ,
        cwd=str(cwd or ROOT),
        timeout=timeout,
    )


# -- a full disk ---------------------------------------------------------------------------------------------


def test_a_window_that_cannot_be_written_is_said_and_the_training_goes_on(tmp_path):
    out = tmp_path / "out"
    alone = subprocess.run([sys.executable, LONG, "--iterations", "60"], capture_output=True, text=True, cwd=tmp_path)
    proc = _run(
        "run",
        "-q",
        "-o",
        str(out),
        "--wait",
        "4",
        "--warmup",
        "0",
        "--active",
        "4",
        "--repeat",
        "0",
        LONG,
        "--iterations",
        "60",
        env=_env(NNPROFILE_TEST_FULL="window-1"),
        cwd=tmp_path,
    )
    assert proc.returncode == alone.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split(",")[0] == alone.stdout.split(",")[0] == "ran 60 iterations"  # the program's own output
    [said] = [line for line in proc.stderr.splitlines() if "window 1 could not be written" in line]
    assert "No space left on device" in said and "the program goes on" in said and "Traceback" not in proc.stderr
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")] and not os.path.exists(
        out / "window-1" / "result.json"
    )
    second = nnprofile.load(out / "window-2")
    assert any("window 1 could not be written" in n for n in second.notes)  # noted in the next files


def test_a_run_whose_files_cannot_be_written_exits_70_and_never_says_written(tmp_path):
    out = tmp_path / "out"
    first = _run("run", "-q", "-o", str(out), LONG, "--iterations", "30", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = json.loads((out / "result.json").read_text())["header"]["date"]
    proc = _run("run", "-o", str(out), LONG, "--iterations", "30", env=_env(NNPROFILE_TEST_FULL=str(out)), cwd=tmp_path)
    assert proc.returncode == 70, proc.stderr[-2000:]
    assert "Written to" not in proc.stdout
    assert "could not be made" in proc.stderr and "No space left on device" in proc.stderr
    assert json.loads((out / "result.json").read_text())["header"]["date"] == before  # whole, the earlier run's
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]


def test_a_small_tmpfs_fills_and_the_training_goes_on(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("this machine does not let the tests mount a tmpfs")
    try:
        proc = _run(
            "run",
            "-q",
            "-o",
            str(disk / "out"),
            "--wait",
            "2",
            "--warmup",
            "0",
            "--active",
            "3",
            "--repeat",
            "0",
            LONG,
            "--iterations",
            "80",
            cwd=tmp_path,
        )
        assert proc.returncode in (0, 70) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "could not be written" in proc.stderr or proc.returncode == 0
        assert not [f for root, _, files in os.walk(disk) for f in files if f.endswith(".tmp")]
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


# -- folders --------------------------------------------------------------------------------------------------


def test_an_output_folder_that_is_a_file_or_cannot_be_written_is_said_in_one_line(tmp_path):
    a_file = tmp_path / "taken"
    a_file.write_text("the user's")
    proc = run_cli(LENET, "--runs", "1", "--synthetic", "-o", str(a_file))
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "nnprofile: error: output folder %s is a file, not a folder" % a_file
    )
    assert a_file.read_text() == "the user's"
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("no read-only mount here (root writes through file modes)")
    try:
        proc = run_cli(LENET, "--runs", "1", "--synthetic", "-o", str(ro / "out"))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
        assert "cannot create output folder" in proc.stderr or "not writable" in proc.stderr
    finally:
        subprocess.run(["umount", str(ro)], capture_output=True)


def test_a_second_run_into_a_folder_in_use_is_refused_and_the_first_finishes(tmp_path):
    out = tmp_path / "out"
    first = subprocess.Popen(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(out), LONG, "--iterations", "3000"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while not os.path.exists(out / ".nnprofile.lock") and time.time() < deadline:
        time.sleep(0.05)
    second = _run("run", "-q", "-o", str(out), LONG, "--iterations", "5", cwd=tmp_path)
    assert second.returncode == 2
    assert second.stderr.strip().startswith(
        "nnprofile: error: output folder %s is in use by another nnprofile run" % out
    )
    assert "process %d" % first.pid in second.stderr
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert nnprofile.load(out).complete and not os.path.exists(out / ".nnprofile.lock")


def test_a_run_that_writes_nothing_leaves_no_folder(tmp_path):
    out = tmp_path / "never"
    proc = run_cli(str(tmp_path / "missing.nntxt"), "-o", str(out))
    assert proc.returncode == 2 and not out.exists()


def test_files_of_an_earlier_run_are_removed_only_where_that_run_listed_them(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("the user's own")
    windowed = _run(
        "run",
        "-q",
        "-o",
        str(out),
        "--wait",
        "2",
        "--warmup",
        "0",
        "--active",
        "3",
        "--repeat",
        "2",
        LONG,
        "--iterations",
        "30",
        cwd=tmp_path,
    )
    assert windowed.returncode == 0 and (out / "window-1" / "result.json").exists() and (out / "windows.csv").exists()
    single = _run("run", "-q", "-o", str(out), LONG, "--iterations", "30", cwd=tmp_path)
    assert single.returncode == 0
    assert not (out / "window-1").exists() and not (out / "windows.csv").exists()  # that run's, no longer written
    project = run_cli(LENET, "--runs", "1", "--synthetic", "-o", str(out))
    assert project.returncode == 0
    assert not (out / "trace.json.gz").exists()  # the program's trace: a project writes none
    assert (out / "notes.md").read_text() == "the user's own"  # no run listed it: never touched
    assert set(json.loads((out / "result.json").read_text())["files"]) == set(os.listdir(out)) - {"notes.md", "cache"}


def test_a_record_this_process_wrote_is_listed_from_memory_only_while_unchanged(tmp_path):
    from nnprofile.base.outdir import listed, remember

    record = tmp_path / "result.json"
    record.write_text(json.dumps({"format": "nnprofile-result", "files": ["result.json", "a.csv"]}))
    remember(str(record), ["result.json", "a.csv", "b.log"])  # (memory and file differ: which one answers shows)
    assert listed(str(tmp_path)) == ["result.json", "a.csv", "b.log"]
    replaced = tmp_path / "other.json"  # another writer's record, renamed into place as every record is
    replaced.write_text(json.dumps({"format": "nnprofile-result", "files": ["result.json", "c.html"]}))
    os.replace(replaced, record)
    assert listed(str(tmp_path)) == ["result.json", "c.html"]
    record.unlink()
    assert listed(str(tmp_path)) == []


def test_a_dataset_named_dot_dot_touches_nothing_beside_the_folder(tmp_path):
    user = tmp_path / "work"
    user.mkdir()
    for name in ("paper.pdf", "notes.md", "data.csv"):
        (user / name).write_text(name)
    text = open(LENET).read()
    digits = os.path.join(os.path.dirname(LENET), "digits")
    text = text.replace('uri: "digits/', 'uri: "%s/' % digits).replace('name: "Training"', 'name: ".."')
    text = text.replace('dataset: "Training"', 'dataset: ".."')
    project = user / "evil.nntxt"
    project.write_text(text)
    proc = run_cli(str(project), "--runs", "1", "--no-inference", "-o", str(user / "out"))
    assert sorted(os.listdir(user)) == ["data.csv", "evil.nntxt", "notes.md", "out", "paper.pdf"], proc.stderr
    assert all((user / n).read_text() == n for n in ("paper.pdf", "notes.md", "data.csv"))
    assert "Traceback" not in proc.stderr


# -- signals --------------------------------------------------------------------------------------------------


def _start(tmp_path, *options, iterations="100000", script=()):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnprofile",
            "run",
            "-q",
            "-o",
            str(out),
            *options,
            LONG,
            "--iterations",
            iterations,
            *script,
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    return out, proc


def _line_with(proc, text, timeout=120):
    """stderr read up to and with the first line holding ``text`` (what the process says as it gets there)."""
    import selectors

    seen = []
    deadline = time.time() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while time.time() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.time())):
                break
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if text in line:
                return "".join(seen)
    raise AssertionError("%r never said; stderr: %s" % (text, "".join(seen)[-2000:]))


def _wait_for(path, proc, timeout=120):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("seed", [1, 2])
def test_sigterm_in_a_window_writes_it_marked_interrupted(tmp_path, seed):
    out, proc = _start(
        tmp_path,
        "--wait",
        "5",
        "--warmup",
        "0",
        "--active",
        "400",
        "--repeat",
        "0",
        script=("--mark-at", "20", "--mark-file", str(tmp_path / "mark")),
    )
    _wait_for(tmp_path / "mark", proc)  # step 20: inside the long window
    time.sleep(random.Random(seed).uniform(0.0, 0.1))  # a seeded point after it
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err[-2000:]
    assert "interrupted by SIGTERM: writing what was recorded" in err and "Traceback" not in err
    view = nnprofile.load(out)
    assert not view.complete and view.failure == "interrupted by SIGTERM"


def test_ctrl_c_says_at_once_that_it_writes_and_a_second_stops_with_whole_files(tmp_path):
    out, proc = _start(
        tmp_path, "--warmup", "0", "--active", "3000", script=("--mark-at", "50", "--mark-file", str(tmp_path / "mark"))
    )
    _wait_for(tmp_path / "mark", proc)  # steps recorded
    proc.send_signal(signal.SIGINT)
    first = _line_with(proc, "nnprofile: interrupted by Ctrl-C")  # the state the second Ctrl-C is for: writing
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    err = first + rest
    assert proc.returncode == -signal.SIGINT, err[-2000:]  # as the program alone dies
    said = [line for line in err.splitlines() if line.startswith("nnprofile:")]  # (the program's own lines besides)
    assert (
        said[0] == "nnprofile: interrupted by Ctrl-C: writing what was recorded (Ctrl-C again to stop without writing)"
    ), err  # first, whatever the second Ctrl-C interrupted
    assert "AssertionError" not in err and "Traceback" not in err and "nothing was recorded" not in err
    if (out / "result.json").exists():  # written before the second Ctrl-C, or not at all: never half
        nnprofile.load(out)
    if (out / "result.json").exists() and "second Ctrl-C" not in err:
        assert not nnprofile.load(out).complete
    else:  # stopped while writing: said so, never as a failure of nnprofile's own
        assert "a second Ctrl-C stopped it before all its files were written" in err and "--debug" not in err
        assert "nnprofile: error:" not in err  # the user asked for it
    assert not out.exists() or not [f for f in os.listdir(out) if f.endswith(".tmp")]


def test_one_ctrl_c_writes_what_was_recorded_marked_interrupted(tmp_path):
    out, proc = _start(
        tmp_path, "--warmup", "0", "--active", "3000", script=("--mark-at", "50", "--mark-file", str(tmp_path / "mark"))
    )
    _wait_for(tmp_path / "mark", proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGINT and "Traceback" not in err, err[-2000:]
    view = nnprofile.load(out)
    assert not view.complete and view.failure == "interrupted by Ctrl-C"
    assert view.header.kept_steps and min(view.header.kept_steps) == 1 and max(view.header.kept_steps) >= 50


@pytest.mark.parametrize("seed", [3, 4])
def test_sigkill_after_a_window_closed_leaves_that_window_loadable(tmp_path, seed):
    out, proc = _start(tmp_path, "--wait", "3", "--warmup", "0", "--active", "3", "--repeat", "0")
    _wait_for(out / "window-1" / "result.json", proc)
    time.sleep(random.Random(seed).uniform(0.0, 1.0))
    proc.kill()
    proc.communicate(timeout=60)
    assert nnprofile.load(out / "window-1").sections  # whole, whatever the kill interrupted after it
    assert nnprofile.load(out).windows


def test_a_sigterm_in_the_steps_that_measure_the_hooks_writes_the_window_with_its_kept_steps(tmp_path):
    """The default schedule's window is assembled and written once, after the 20 steps without the hooks that follow
    its kept ones (issue 59: one assembly a window): a SIGTERM in those steps writes it, its 5 kept steps whole."""
    at = ("--mark-at", "12", "--mark-file", str(tmp_path / "mark"), "--pause-at", "12", "--pause-file", "never")
    out, proc = _start(tmp_path, "--active", "5", script=at)  # steps 2-6 kept, 7-26 measure the hooks: 12 among them
    _wait_for(tmp_path / "mark", proc)  # (the program waits there)
    assert not (out / "result.json").exists()  # nothing written before the window closes
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err[-2000:]
    profile = nnprofile.load(out)
    assert profile.sections and profile.header.kept_steps == [2, 3, 4, 5, 6], profile.header.kept_steps


def test_capture_signals_no_process_that_did_not_start_listening(tmp_path):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "--on-demand"])
    try:
        proc = run_cli("capture", str(stranger.pid))
        assert proc.returncode == 2 and "no signal sent" in proc.stderr or "no nnprofile run" in proc.stderr
        time.sleep(0.2)
        assert stranger.poll() is None  # alive: nothing was sent to it
    finally:
        stranger.kill()
        stranger.wait()


# -- the gate ---------------------------------------------------------------------------------------------------


def _result(tmp_path, name, scale, machine):
    profile = nnprofile.load(os.path.join(ROOT, "tests", "golden", "result_v8.json"))
    for s in profile.sections:
        s.reference_ns = [1e6 * machine] * 5
        for e in s.entries:
            e.samples_ns = [x * scale for x in e.samples_ns]
    from nnprofile.result import file as result_file

    folder = tmp_path / name
    folder.mkdir()
    result_file.save(profile, str(folder))
    return folder


def test_the_gate_cannot_judge_a_run_whose_machine_ran_beyond_its_slow_spells(tmp_path):
    base = _result(tmp_path, "float", 1.0, 1.0)
    half = _result(tmp_path, "half", 200.0, 289.0)  # everything 200x slower, the reference too (as in half)
    proc = run_cli("check", str(base), str(half))
    assert proc.returncode == 3, proc.stdout  # neither a pass nor a regression: a code of its own, CI may run again
    assert proc.stdout.startswith("nnprofile check: UNRESOLVED")
    assert "cannot be judged" in proc.stdout and "within the machine's own slowdown" not in proc.stdout
    spell = _result(tmp_path, "spell", 1.3, 1.3)  # a slow spell of the machine: excused
    assert run_cli("check", str(base), str(spell)).returncode == 0


def test_the_machines_reference_runs_in_one_fixed_context(tmp_path):
    code = (
        "import nnabla as nn; from nnabla.ext_utils import get_extension_context;"
        "nn.set_default_context(get_extension_context('cpu', type_config='half'));"
        "from nnprofile.measure.machine_watch import Reference; from nnprofile.measure.timing import Timer, Sampling;"
        "r = Reference(Timer(Sampling())); print(r.output.d.dtype)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "float32"


def test_unrelated_results_are_refused_by_check_compare_and_merge(tmp_path):
    lenet = tmp_path / "lenet"
    assert run_cli(LENET, "--runs", "1", "--synthetic", "-o", str(lenet)).returncode == 0
    program = tmp_path / "program"
    assert _run("run", "-q", "-o", str(program), LONG, "--iterations", "25", cwd=tmp_path).returncode == 0
    check = run_cli("check", str(lenet), str(program))
    assert check.returncode == 2 and "share no entry" in check.stderr and "PASS" not in check.stdout
    compare = run_cli("compare", str(lenet), str(program), "-o", str(tmp_path / "cmp"))
    assert compare.returncode == 2 and "unrelated" in compare.stderr


# -- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, says",
    [
        (["--memory-limit", "1e400GB"], "not a size"),
        (["--warmup", "-1"], "--warmup"),
        (["--target-rse", "inf"], "finite"),
        (["--max-seconds", "nan"], "finite"),
        (["--runs", "0"], "at least 1"),
    ],
)
def test_an_option_no_run_can_take_is_one_line(args, says):
    proc = run_cli(LENET, "--synthetic", *args)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_on_demand_with_repeat_is_refused(tmp_path):
    proc = _run("run", "--on-demand", "--repeat", "3", "-o", str(tmp_path / "o"), LONG, cwd=tmp_path)
    assert proc.returncode == 2 and "means nothing with --on-demand" in proc.stderr and not (tmp_path / "o").exists()


def test_capture_never_signals_a_stranger_named_as_a_launcher_beside_a_real_run(tmp_path):
    """A process started as ``exec -a mpirun ... run --on-demand -o FOLDER`` while a real on-demand run writes FOLDER:
    the real run's own record does not name it, so it gets no signal; nor does capture send any signal but USR1 or
    USR2 to the real run."""
    stop = tmp_path / "stop"
    out = tmp_path / "out" / "odr"
    real = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnprofile",
            "run",
            "-q",
            "--on-demand",
            "-o",
            str(out),
            LONG,
            "--iterations",
            "0",
            "--stop-file",
            str(stop),
        ],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stranger = subprocess.Popen(
        [
            "bash",
            "-c",
            'exec -a mpirun %s -c "import time; time.sleep(60)" run --on-demand -o out/odr' % sys.executable,
        ],
        cwd=str(tmp_path),
    )
    try:
        _wait_for(out / "on-demand.json", real)
        proc = run_cli("capture", str(stranger.pid))
        assert proc.returncode == 2 and "no signal sent" in proc.stderr, proc.stderr
        term = run_cli("capture", str(real.pid), "--signal", "TERM")
        assert term.returncode == 2 and "USR1 or USR2" in term.stderr
        assert stranger.poll() is None and real.poll() is None  # both alive: nothing was sent
        assert not (out / "window-1").exists()
    finally:
        stranger.kill()
        stranger.wait()
        stop.write_text("")
        real.communicate(timeout=120)
    assert real.returncode == 0


@pytest.mark.parametrize(
    "args, says",
    [
        (["--on-demand", "--signal", "TERM"], "USR1 or USR2 only"),
        (["--on-demand", "--signal", "SEGV"], "USR1 or USR2 only"),
        (["--signal", "USR2", "--repeat", "2"], "--signal names the signal of --on-demand"),
    ],
)
def test_a_window_is_asked_for_by_usr1_or_usr2_of_an_on_demand_run_only(tmp_path, args, says):
    proc = _run("run", *args, "-o", str(tmp_path / "o"), LONG, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and not (tmp_path / "o").exists()
    assert len(proc.stderr.strip().splitlines()) == 1


def test_report_compare_and_merge_into_a_folder_in_use_are_refused(tmp_path):
    """Every writer takes the folder's lock as the profile does: none adds to or overwrites a running profile's
    files."""
    source = tmp_path / "source"
    assert run_cli(LENET, "--runs", "1", "--synthetic", "--no-inference", "-q", "-o", str(source)).returncode == 0
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "report.html").write_text("the running profile's")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from nnprofile.base.outdir import Lock; "
            "Lock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)",
            str(busy),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = sorted(os.listdir(busy))
        for args in (["report", str(source), "-o", str(busy)], ["compare", str(source), str(source), "-o", str(busy)]):
            proc = run_cli(*args)
            assert proc.returncode == 2 and "in use by another nnprofile run" in proc.stderr, (args, proc.stderr)
        (busy / "rank-0").mkdir()
        merged = run_cli("merge", str(busy))
        assert merged.returncode == 2, merged.stderr
        assert sorted(os.listdir(busy)) == sorted(before + ["rank-0"])
        assert (busy / "report.html").read_text() == "the running profile's"
    finally:
        holder.kill()
        holder.wait()


def test_a_symlinked_output_file_is_refused_before_the_run(tmp_path):
    users = tmp_path / "users_notes.txt"
    users.write_text("the user's own")
    out = tmp_path / "sym"
    out.mkdir()
    os.symlink(users, out / "profile.log")
    proc = _run("run", "-q", "-o", str(out), LONG, "--iterations", "5", cwd=tmp_path)
    assert proc.returncode == 2 and "profile.log in %s is a symbolic link" % out in proc.stderr, proc.stderr
    assert "ran 5 iterations" not in proc.stdout  # refused before the program ran
    assert users.read_text() == "the user's own" and sorted(os.listdir(out)) == ["profile.log"]
    report = run_cli(LENET, "--runs", "1", "--synthetic", "-o", str(out))
    assert report.returncode == 2 and len(report.stderr.strip().splitlines()) == 1


HOSTILE = os.path.join(ROOT, "tests", "scripts", "hostile_train.py")


@pytest.mark.parametrize("windows", [False, True])
def test_a_program_that_changes_its_working_folder_moves_nothing_nnprofile_writes(tmp_path, windows):
    """Every path is fixed as the run starts: the files land in the output folder, none under the new folder (where
    a user's own profile.log stays untouched)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "profile.log").write_text("the user's own")
    schedule = ["--wait", "2", "--warmup", "0", "--active", "4", "--repeat", "0"] if windows else []
    proc = _run(
        "run", "-q", "-o", "out", *schedule, HOSTILE, "--iterations", "40", "--chdir", "elsewhere", cwd=tmp_path
    )
    assert proc.returncode == 0 and "ran 40 iterations" in proc.stdout, proc.stderr[-2000:]
    assert (
        sorted(os.listdir(elsewhere)) == ["profile.log"] and (elsewhere / "profile.log").read_text() == "the user's own"
    )
    profile = nnprofile.load(tmp_path / "out")
    assert profile.complete and all((tmp_path / "out" / f).is_file() for f in profile.files)
    if windows:
        assert len(profile.windows) >= 3 and all(
            (tmp_path / "out" / w.folder / "result.json").is_file() for w in profile.windows
        )


def test_a_program_that_rewrites_sys_path_keeps_its_profile(tmp_path):
    proc = _run(
        "run", "-q", "-o", str(tmp_path / "out"), HOSTILE, "--iterations", "30", "--clear-sys-path", cwd=tmp_path
    )
    assert proc.returncode == 0 and "ran 30 iterations" in proc.stdout, proc.stderr[-2000:]
    profile = nnprofile.load(tmp_path / "out")
    assert profile.complete and "profile.xlsx" in profile.files and (tmp_path / "out" / "profile.xlsx").is_file()


def test_a_damaged_earlier_record_is_set_aside_and_never_blocks_a_new_profile(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text("[" * 100_000 + "]" * 100_000)
    proc = _run("run", "-q", "-o", str(out), HOSTILE, "--iterations", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if "could not be read" in line]
    assert len(said) == 1 and "set aside as result.json.damaged" in said[0]
    assert (out / "result.json.damaged").read_text().startswith("[[[") and nnprofile.load(out).complete


def test_an_exception_in_on_window_is_the_users_said_with_its_traceback_and_recording_goes_on(tmp_path):
    script = tmp_path / "callback.py"
    script.write_text(
        "import runpy, sys, nnprofile\n"
        "def on_window(profile):\n"
        "    raise RuntimeError('the user callback broke')\n"
        "sys.argv = [%r, '--iterations', '40']\n"
        "with nnprofile.record(outdir=%r, wait=2, warmup=0, active=4, repeat=3, on_window=on_window):\n"
        "    runpy.run_path(%r, run_name='__main__')\n" % (HOSTILE, str(tmp_path / "out"), HOSTILE)
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=str(tmp_path), env=_env(), timeout=600
    )
    assert proc.returncode == 0 and "ran 40 iterations" in proc.stdout, proc.stderr[-3000:]
    assert proc.stderr.count("on_window raised on window 1; the recording goes on") == 1
    assert proc.stderr.count("Traceback (most recent call last)") == 1  # its traceback, once
    assert "in on_window\n    raise RuntimeError('the user callback broke')" in proc.stderr
    assert proc.stderr.count("on_window raised again") == 2
    assert len(nnprofile.load(tmp_path / "out").windows) == 3


def test_a_program_that_trains_in_a_thread_is_told_so_before_profile_completed(tmp_path):
    proc = _run("run", "-o", str(tmp_path / "out"), HOSTILE, "--iterations", "30", "--in-thread", cwd=tmp_path)
    assert proc.returncode == 0 and "ran 30 iterations" in proc.stdout, proc.stderr[-2000:]
    said = proc.stdout.index("the program's NNabla work ran in another thread")
    assert said < proc.stdout.index("Profile Completed.")
    assert any("another thread" in n for n in nnprofile.load(tmp_path / "out").notes)


def test_a_file_that_cannot_be_written_is_said_in_the_record_which_claims_only_what_is_there(tmp_path):
    out = tmp_path / "out"
    proc = _run(
        "run",
        "-q",
        "-o",
        str(out),
        HOSTILE,
        "--iterations",
        "20",
        env=_env(NNPROFILE_TEST_FULL="profile.xlsx"),
        cwd=tmp_path,
    )
    assert proc.returncode == 70 and "No space left on device" in proc.stderr, proc.stderr[-2000:]
    record = json.loads((out / "result.json").read_text())
    assert record["complete"] is False and "profile.xlsx could not be written" in record["failure"]
    assert "profile.xlsx" not in record["files"] and all((out / f).is_file() for f in record["files"])
    check = run_cli("check", str(out), str(out))
    assert check.returncode == 3 and "incomplete" in check.stdout and "PASS" not in check.stdout
