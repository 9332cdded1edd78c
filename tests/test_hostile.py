"""A guest in every process: the signals, modules, files, streams and children a program owns stay the program's.
Each case is an unmodified program (tests/scripts/hostile_train.py, an MLP trained for 40 steps) doing one thing
to its process at step 10, run under ``nnprofile run`` as a user runs it: it exits as it exits alone, prints what
it prints alone, and its profile is written whole."""

import os
import subprocess
import sys

import pytest

import nnprofile
from conftest import ROOT

HOSTILE = os.path.join(ROOT, "tests", "scripts", "hostile_train.py")
pytestmark = pytest.mark.slow


def _printed(proc):
    """What the program printed: its stdout without nnprofile's last line (where the files went)."""
    return "".join(line for line in proc.stdout.splitlines(True) if not line.startswith("Written to out: "))


def _run(args, cwd, stdio=None, python=(sys.executable, "-m", "nnprofile", "run", "-q", "-o", "out")):
    return subprocess.run(
        [*python, HOSTILE, "--iterations", "40", "--at", "10", *args],
        capture_output=stdio is None,
        text=True,
        cwd=str(cwd),
        timeout=600,
        **(stdio or {}),
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--reset-sigprof"],  # the program sets SIGPROF back to its default: no timer of nnprofile's kills it
        ["--own-sigprof"],  # a handler of its own: nnprofile's clock never calls it
        ["--drop-modules"],  # json, csv, gzip, zipfile and pandas taken out of sys.modules
        ["--replace-open"],  # builtins.open and io.open refuse every file
        ["--recursion-limit", "60"],
    ],
    ids=lambda a: a[0].strip("-"),
)
def test_what_the_program_does_to_its_process_takes_nothing_from_its_profile(tmp_path, args):
    alone = _run(args, tmp_path, python=(sys.executable,))
    proc = _run(args, tmp_path)
    assert alone.returncode == 0 and proc.returncode == 0, proc.stderr[-2000:]
    assert _printed(proc) == alone.stdout  # what the program prints, as alone (its own handler: called 0 times)
    assert "Traceback" not in proc.stderr
    profile = nnprofile.load(tmp_path / "out")
    assert profile.complete and profile.header.run_steps == 40
    assert all((tmp_path / "out" / f).is_file() for f in profile.files)


def test_forked_pool_workers_end_as_the_program_ends_them(tmp_path):
    """``multiprocessing``'s fork pool, then ``terminate()``: its workers get SIGTERM and die quietly, as alone (they
    inherited nnprofile's SIGTERM handler once, and each printed a traceback ending in its own exception)."""
    alone = _run(["--pool"], tmp_path, python=(sys.executable,))
    proc = _run(["--pool"], tmp_path)
    assert proc.returncode == alone.returncode == 0 and _printed(proc) == alone.stdout
    assert "Traceback" not in proc.stderr and "Terminated" not in proc.stderr, proc.stderr[-2000:]
    assert nnprofile.load(tmp_path / "out").complete


def test_closed_standard_streams_keep_the_exit_status(tmp_path):
    """``nnprofile run ... >&- 2>&-``: nothing can be said, and the status is the program's (it was 1, silently)."""
    for head in ("-q", ""):
        proc = subprocess.run(
            "%s -m nnprofile run %s -o out %s --iterations 30 >&- 2>&-" % (sys.executable, head, HOSTILE),
            shell=True,
            cwd=str(tmp_path),
            timeout=600,
            env=dict(os.environ, PYTHONPATH=ROOT),
        )
        assert proc.returncode == 0
        assert nnprofile.load(tmp_path / "out").complete


def test_a_working_folder_deleted_under_the_shell_is_one_line_naming_it(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.run(
        "cd %s && rmdir %s && PWD=%s %s -m nnprofile run -o %s %s"
        % (gone, gone, gone, sys.executable, tmp_path / "out", HOSTILE),
        shell=True,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "nnprofile: error: %s: the working folder cannot be read (No such file or directory): cd to a folder that "
        "exists" % gone
    ]


def test_quiet_drops_the_log_never_a_warning_nor_where_the_files_went(tmp_path):
    """pip's convention: ``-q`` drops progress and the log's echo; a program whose steps ran in a thread, unseen,
    is still told so on stderr, and the last line says where the files went (on stderr: stdout is the program's)."""
    proc = _run(["--in-thread"], tmp_path)
    assert proc.returncode == 0
    assert "nnprofile: warning: the program's NNabla work ran in another thread" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("Written to out: ")  # (with -q: on stderr, stdout the program's)


def test_another_thread_that_runs_functions_takes_the_hooks_off_for_good(tmp_path):
    """NNabla's global function hooks crash a process whose threads run functions together (gdb: in NNabla's own
    ``FunctionHookWithObject``, a daemon thread's steps beside the loop, 9 runs in 10): a thread of the program's
    seen running functions takes them off at the next step's end, for the rest of the run, and the profile says so.
    Here the thread runs its steps while the loop waits for it (no race to lose)."""
    alone = _run(["--thread-steps"], tmp_path, python=(sys.executable,))
    proc = _run(["--thread-steps"], tmp_path)
    assert alone.returncode == 0 and proc.returncode == 0, proc.stderr[-2000:]
    profile = nnprofile.load(tmp_path / "out")
    assert profile.complete and any(n.kind == "hooks_shared" for n in profile.notes)
    assert "nnprofile: warning: another thread of the program ran NNabla functions" in proc.stderr


def test_a_disk_that_fills_before_the_record_is_rewritten_says_what_is_there(tmp_path):
    """The disk fills as result.json is rewritten to list the files (its first version, listing only itself, and
    every other file, are whole): the one line says so, never that the profile could not be made."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "faults"), ROOT]))
    env["NNPROFILE_TEST_FULL"] = "result.json@rewrite"
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", "out", HOSTILE, "--iterations", "30"],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        env=env,
        timeout=600,
    )
    assert proc.returncode == 70 and "could not be made" not in proc.stderr, proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("nnprofile:")]
    assert said == [
        "nnprofile: error: every file was written whole in %s, but result.json could not be rewritten to list them "
        "(No space left on device): it lists only itself, as written first" % (tmp_path / "out")
    ]
    record = nnprofile.load(tmp_path / "out")
    assert record.files == ["result.json"] and (tmp_path / "out" / "profile.xlsx").is_file()
