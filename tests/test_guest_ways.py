"""The program keeps its own ways under ``nnprofile run``: what it sees of itself (``__file__``), how it ends (its
own ``sys.excepthook``, any ``BaseException``, a KeyboardInterrupt it raises, SIGHUP, ``os.execv``), the children it
forks, and what it is given to read. Each is compared with the same program run alone, never with a figure of
nnprofile's; and a fault in nnprofile's accounting loses nothing the recording can still say."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import nnprofile
from nnprofile.base.schedule import Schedule
from conftest import ROOT
from nnprofile.base.errors import ProfileError
from nnprofile.base.functions import FunctionInfo, Graph
from nnprofile.base.outdir import in_use
from nnprofile.result.layer import Layer

FAULTS = os.path.join(ROOT, "tests", "faults")
TRAIN = """
import os, signal, sys, time
import numpy as np
import nnabla as nn, nnabla.functions as F, nnabla.parametric_functions as PF, nnabla.solvers as S
x = nn.Variable((4, 3)); loss = F.mean(PF.affine(x, 2)); solver = S.Sgd(); solver.set_parameters(nn.get_parameters())
def train(n, after=None):
    for i in range(n):
        x.d = np.random.randn(4, 3); loss.forward(); solver.zero_grad(); loss.backward(); solver.update()
        if after is not None and i == after[0]:
            after[1]()
"""


def _program(tmp_path, body, name="prog.py"):
    path = tmp_path / name
    path.write_text(TRAIN + textwrap.dedent(body))
    return path


def _both(tmp_path, program, *args, preexec_fn=None, faults=()):
    """The program alone, then under ``nnprofile run`` (in turns, each in a fresh process): both results."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([FAULTS, ROOT]), NNPROFILE_TEST_FAULTS=",".join(faults))
    run = dict(capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=600, preexec_fn=preexec_fn)
    alone = subprocess.run([sys.executable, str(program), *args], **run)
    out = tmp_path / "out"
    profiled = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(out), str(program.name), *args], **run
    )
    return alone, profiled, out


def _said(text):
    """What a run's stderr says of the program: nnprofile's own lines (and NNabla's start-up line) aside, with the
    lines they wrap onto (``Written to`` a long folder's path: its last files on a line of their own)."""
    skip = ("[nnabla][INFO]", "nnprofile", "Written to ")
    out, ours = [], False
    for line in text.splitlines():
        ours = any(s in line for s in skip) or (ours and line.startswith("  "))
        if not ours:
            out.append(line)
    return "\n".join(out)


@pytest.mark.slow
def test_file_is_absolute_so_a_program_that_changes_folder_reads_beside_itself(tmp_path):
    (tmp_path / "beside.txt").write_text("found")
    program = _program(
        tmp_path,
        """
        train(3)
        here = os.path.dirname(__file__)
        os.chdir("/")
        print(os.path.isabs(__file__), open(os.path.join(here, "beside.txt")).read(), sys.argv[0])
        """,
    )
    alone, profiled, _ = _both(tmp_path, program)
    assert alone.returncode == profiled.returncode == 0, profiled.stderr
    assert profiled.stdout == alone.stdout and alone.stdout.startswith("True found")


@pytest.mark.slow
def test_a_forked_child_that_exits_leaves_the_parents_profile_alone(tmp_path):
    program = _program(
        tmp_path,
        """
        train(20)
        pid = os.fork()
        if pid == 0:
            train(11)
            sys.exit(3)
        train(20)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        """,
    )
    alone, profiled, out = _both(tmp_path, program)
    assert profiled.stdout == alone.stdout == "child 3\n", profiled.stderr
    assert profiled.returncode == alone.returncode == 0
    view = nnprofile.load(out)
    assert view.complete and view.header.run_steps == 40  # the parent's steps, not the child's 11
    assert "Written to" in profiled.stderr and profiled.stderr.count("Written to") == 1


@pytest.mark.slow
def test_the_programs_own_excepthook_says_its_exception(tmp_path):
    program = _program(
        tmp_path,
        """
        def hook(kind, error, tb):
            print("hook:", kind.__name__, error, os.path.basename(tb.tb_frame.f_code.co_filename), file=sys.stderr)
        sys.excepthook = hook
        train(3)
        raise ValueError("bad batch")
        """,
    )
    alone, profiled, out = _both(tmp_path, program)
    assert alone.returncode == profiled.returncode == 1
    assert "hook: ValueError bad batch prog.py" in alone.stderr
    assert _said(profiled.stderr) == _said(alone.stderr)
    assert nnprofile.load(out).failure == "the program raised ValueError: bad batch"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["BaseException", "KeyboardInterrupt"])
def test_an_exception_of_any_kind_ends_the_program_as_it_does_alone(tmp_path, kind):
    program = _program(
        tmp_path,
        """
        class Stop(%s):
            pass
        train(3)
        raise Stop("stop")
        """
        % kind,
    )
    alone, profiled, out = _both(tmp_path, program)
    assert profiled.returncode == alone.returncode == 1  # (a subclass of KeyboardInterrupt too)
    assert _said(profiled.stderr) == _said(alone.stderr)  # its traceback, once, its own frames only
    assert alone.stderr.count("Traceback") == 1 and "runpy" not in profiled.stderr
    assert nnprofile.load(out).failure == "the program raised Stop: stop"  # the program's, not a Ctrl-C


@pytest.mark.slow
def test_a_keyboard_interrupt_the_program_raises_ends_it_by_sigint_as_alone(tmp_path):
    program = _program(tmp_path, "train(3)\nraise KeyboardInterrupt\n")
    alone, profiled, out = _both(tmp_path, program)
    assert profiled.returncode == alone.returncode == -signal.SIGINT
    assert _said(profiled.stderr) == _said(alone.stderr) and "KeyboardInterrupt" in alone.stderr
    assert nnprofile.load(out).failure == "the program raised KeyboardInterrupt"


def _hang_up_by_default():
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _hang_up_ignored():
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup


@pytest.mark.slow
def test_sighup_writes_what_was_recorded_and_lets_the_folder_go(tmp_path):
    program = _program(tmp_path, "train(3000, (40, lambda: os.kill(os.getpid(), signal.SIGHUP)))\nprint('done')\n")
    alone, profiled, out = _both(tmp_path, program, preexec_fn=_hang_up_by_default)
    assert alone.returncode == -signal.SIGHUP and profiled.returncode == 128 + signal.SIGHUP, profiled.stderr
    view = nnprofile.load(out)
    assert view.failure == "interrupted by SIGHUP"
    assert view.header.kept_steps == list(range(2, 2 + Schedule.active))  # the window, recorded before it
    assert not in_use(str(out))


@pytest.mark.slow
def test_sighup_ignored_by_the_program_stays_ignored(tmp_path):
    program = _program(tmp_path, "train(60, (40, lambda: os.kill(os.getpid(), signal.SIGHUP)))\nprint('done')\n")
    alone, profiled, out = _both(tmp_path, program, preexec_fn=_hang_up_ignored)
    assert alone.returncode == profiled.returncode == 0 and profiled.stdout == alone.stdout == "done\n"
    assert nnprofile.load(out).complete


@pytest.mark.slow
def test_exec_writes_what_was_recorded_and_leaves_no_lock(tmp_path):
    program = _program(
        tmp_path,
        """
        train(30)
        sys.stdout.flush()
        check = "from nnprofile.base.outdir import in_use; import sys; print('locked', in_use(sys.argv[1]))"
        os.execv(sys.executable, [sys.executable, "-c", check, os.path.abspath("out")])
        """,
    )
    alone, profiled, out = _both(tmp_path, program)
    assert profiled.returncode == alone.returncode == 0
    assert profiled.stdout == "locked False\n", profiled.stderr
    view = nnprofile.load(out)
    assert view.failure.startswith("the program replaced its process (os.execv") and view.header.kept_steps


@pytest.mark.slow
def test_a_fault_in_the_accounting_still_writes_the_run_and_says_so(tmp_path):
    program = _program(tmp_path, "train(30)\nprint('trained')\n")
    alone, profiled, out = _both(tmp_path, program, faults=["nnprofile.assembly.sections:Layer"])
    assert profiled.returncode == alone.returncode == 0 and profiled.stdout == alone.stdout
    view = nnprofile.load(out)
    assert not view.complete and "could not assemble" in view.failure
    assert "assembly_failed" in [n.kind for n in view.notes] and "could not assemble" in profiled.stderr


def test_a_function_recorded_without_inputs_or_outputs_has_no_flops_and_no_crash():
    for kind in ("Mul2", "Affine", "Convolution", "BatchNormalization", "MaxPooling", "SquaredError"):
        f = FunctionInfo(1, kind, kind, {}, [], [])
        layer = Layer(f, Graph([f]), "x")
        assert layer.flops is None and layer.entry("forward", [1.0]).output_shape == ""


@pytest.mark.slow
def test_inputs_that_never_end_or_block_are_refused(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    os.mkfifo(folder / "result.json")
    os.mkfifo(tmp_path / "p.nntxt")
    for args in (["report", str(folder)], ["report", "/dev/zero"], ["check", str(folder), str(folder)]):
        proc = subprocess.run(
            [sys.executable, "-m", "nnprofile", *args], capture_output=True, text=True, timeout=120, cwd=str(tmp_path)
        )
        assert proc.returncode == 2 and "not read" in proc.stderr and "Traceback" not in proc.stderr, args
    with pytest.raises(ProfileError, match="a named pipe"):
        nnprofile.profile(str(tmp_path / "p.nntxt"))


def test_a_network_that_computes_a_variable_from_itself_is_refused(tmp_path):
    text = (open(os.path.join(ROOT, "projects", "lenet", "lenet.nntxt")).read()).replace(
        'type: "MaxPooling"\n    input: "ReLU"', 'type: "MaxPooling"\n    input: "MaxPooling"', 1
    )
    assert 'input: "MaxPooling"\n    output: "MaxPooling"' in text
    (tmp_path / "loop.nntxt").write_text(text)
    with pytest.raises(ProfileError, match="computes a variable from itself .MaxPooling -> MaxPooling"):
        nnprofile.profile(str(tmp_path / "loop.nntxt"), synthetic=True)


@pytest.mark.slow
def test_an_empty_output_folder_name_is_refused(tmp_path):
    program = _program(tmp_path, "train(3)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-o", "", str(program)],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 2 and "empty folder name" in proc.stderr and not (tmp_path / "results").exists()
    with pytest.raises(ProfileError, match="empty output folder"):
        nnprofile.record(outdir="")


@pytest.mark.slow
def test_quiet_still_says_that_nothing_was_recorded(tmp_path):
    (tmp_path / "plain.py").write_text("print('hello')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", "out", "plain.py"],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "hello\n" and "nothing was recorded" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("steps,repeat", [(12, 1), (20, 0), (4, 1)])
def test_on_window_gets_a_window_whose_kept_steps_all_ran(tmp_path, steps, repeat):
    import numpy as np
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    x = nn.Variable((4, 3))
    loss = F.mean(PF.affine(x, 2))
    solver = S.Sgd()
    solver.set_parameters(nn.get_parameters())
    got = []
    with nnprofile.record(outdir=str(tmp_path / "o"), active=5, repeat=repeat, on_window=got.append) as rec:
        for _ in range(steps):
            x.d = np.random.randn(4, 3)
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    filled = steps > 6  # skip 1, then 5 kept steps
    assert len(got) == (1 if filled else 0)
    assert ("window_unfilled" in [n.kind for n in rec.profile.notes]) == (repeat != 1 and not filled)


@pytest.mark.slow
@pytest.mark.parametrize("collector", ["enabled", "disabled"])
def test_the_garbage_collector_is_as_the_program_left_it_after_a_window_and_at_the_end(tmp_path, collector):
    """nnprofile pauses the collector while it assembles and writes a window: the program finds it as it set it,
    on after a window that closed mid-run (step 30 of 60), and at its end (an atexit of its own)."""
    program = _program(
        tmp_path,
        """
        import atexit, gc
        if %r == "disabled":
            gc.disable()
        atexit.register(lambda: print("at exit", gc.isenabled()))
        train(60)
        print("after the loop", gc.isenabled())
        """
        % collector,
    )
    alone, profiled, out = _both(tmp_path, program)
    assert alone.returncode == profiled.returncode == 0, profiled.stderr[-2000:]
    assert profiled.stdout == alone.stdout and str(collector == "enabled") in alone.stdout
    assert nnprofile.load(out).header.kept_steps  # the window closed, and was written, before the loop ended
