"""nnprofile is a guest in the program: a fault of its own, injected into every hook, proxy and wrapper, never
reaches the program. The program prints what it computed, digit for digit; run alone and under nnprofile with
the fault, its output and its exit status are the same, and the profile says what could not be recorded.

The faults are injected by tests/faults/sitecustomize.py (NNPROFILE_TEST_FAULTS), as a bug of nnprofile's would
raise: in the function hooks NNabla calls from C++, in the function proxies (eager work on NdArrays, auto_forward),
in the solver proxies and a solver of the program's own, in the data iterator's and the monitor's wrappers, in
reading the program's stacks and counting its steps, in switching the hooks, and in making the profile.
"""

import dis
import gc
import os
import subprocess
import sys
import threading

import pytest

import nnprofile
from conftest import ROOT
from nnprofile.base.errors import Terminated
from nnprofile.recording.faults import Faults
from nnprofile.recording.hooks import FunctionHooks

SCRIPT = os.path.join(ROOT, "tests", "scripts", "everything.py")
FAULTS = os.path.join(ROOT, "tests", "faults")
R, W, S = "nnprofile.recording.recorder:Recorder", "nnprofile.recording.wrappers:FunctionCalls", "nnprofile.recording"
I, V = "nnprofile.recording.inputs:Inputs", "nnprofile.recording.solvers:Solvers"
# Each run breaks places that lie on different paths, so that each fault is met.
INJECTED = {
    "hooks": ["%s._start_of" % R, "%s.dynamic_call" % W],
    "stacks": ["%s.stack:Stacks.take" % S, "%s.eager_call" % W],
    "counting": ["nnprofile.assembly.iterations:Counter.feed", "%s._iterator_name" % I, "%s.note_creation" % W],
    "solvers": ["%s._solver_plan" % V, "%s._solver_index" % V, "%s._read_plan" % I],
    "proxies": ["%s.function_mode" % W, "%s.track_solver" % V, "%s.counting:StepCount.freeze" % S],
    "passes": ["%s.passes:PassTracker.close" % S, "%s.step_ended" % R, "%s.check_subclasses" % V],
}


def _run(*command, faults=(), cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([FAULTS, ROOT]), NNPROFILE_TEST_FAULTS=",".join(faults))
    return subprocess.run(list(command), capture_output=True, text=True, env=env, cwd=str(cwd), timeout=600)


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    proc = _run(sys.executable, SCRIPT, "--iterations", "6", cwd=tmp_path_factory.mktemp("alone"))
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(INJECTED))
def test_a_fault_of_nnprofiles_own_never_reaches_the_program(group, alone, tmp_path):
    out = tmp_path / "out"
    proc = _run(
        sys.executable,
        "-m",
        "nnprofile",
        "run",
        "-q",
        "-o",
        str(out),
        SCRIPT,
        "--iterations",
        "6",
        faults=INJECTED[group],
        cwd=tmp_path,
    )
    assert proc.returncode == alone.returncode, proc.stderr[-3000:]
    assert proc.stdout == alone.stdout  # what the program computed, unchanged
    assert "Traceback" not in proc.stderr
    # what could not be recorded is a warning: said with -q too, one line a kind, never raised into the program
    said = [line for line in proc.stderr.splitlines() if "injected fault" in line]
    assert said and all(line.startswith("nnprofile: warning: could not be recorded at ") for line in said)
    log = (out / "profile.log").read_text()
    assert "could not be recorded at" in log and "injected fault" in log  # said in the profile's notes


@pytest.mark.slow
def test_debug_shows_the_frames_of_what_could_not_be_recorded(alone, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "nnprofile", "run", "-q", "--debug", "-o", str(out), SCRIPT, "--iterations", "6"]
    proc = _run(*command, faults=INJECTED["solvers"], cwd=tmp_path)
    assert proc.returncode == alone.returncode and proc.stdout == alone.stdout, proc.stderr[-3000:]
    assert "nnprofile could not record" in proc.stderr and "Traceback (nnprofile's own frames)" in proc.stderr
    assert "_solver_plan" in proc.stderr  # the injected fault's own frame


@pytest.mark.slow
def test_a_profile_that_cannot_be_made_leaves_the_program_its_output_and_says_so(alone, tmp_path):
    proc = _run(
        sys.executable,
        "-m",
        "nnprofile",
        "run",
        "-q",
        "-o",
        str(tmp_path / "out"),
        SCRIPT,
        "--iterations",
        "6",
        faults=["nnprofile.recording.driver:ProgramRun.profile"],
        cwd=tmp_path,
    )
    assert proc.stdout == alone.stdout
    assert proc.returncode == 70, proc.stderr  # the program succeeded; its profile could not be written
    lines = [line for line in proc.stderr.splitlines() if line.startswith("nnprofile:")]
    assert lines and "injected fault" in lines[-1] and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_a_ctrl_c_before_the_recorder_stopped_still_stops_it_and_its_timer(tmp_path):
    """A Ctrl-C landing as the recording ends, before the recorder stopped (injected: its stop's first call is
    interrupted): the recorder is stopped all the same, its sampler's timer with it, so that Python putting the
    timer signal's default back as it finalises never ends the process by that signal; said as asked for."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([FAULTS, ROOT]),
        NNPROFILE_TEST_INTERRUPT="nnprofile.recording.recorder:Recorder.stop",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(tmp_path / "out"), SCRIPT, "--iterations", "40"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=600,
    )
    assert proc.returncode >= 0, proc.stderr[-3000:]  # not ended by a signal (SIGPROF: -27)
    assert "a second Ctrl-C stopped it before all its files were written" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "nnprofile: error:" not in proc.stderr


class _Interrupted:
    """The recording as the collections' callback reads it, whose first read takes a signal's exception (as where
    the handler of a Ctrl-C that came in runs at that point)."""

    faults = Faults()
    sampler = None

    def __init__(self, error):
        self.error = error
        self.program_thread = threading.get_ident()

    @property
    def capturing(self):
        error, self.error = self.error, None
        if error is not None:
            raise error
        return False


@pytest.mark.parametrize("error", [KeyboardInterrupt(), Terminated()])
def test_a_ctrl_c_landing_in_the_collections_callback_reaches_the_program_once_it_ends(error):
    """Python prints an exception raised in a garbage collection's callback and drops it: a Ctrl-C (or a SIGTERM)
    whose handler ran in nnprofile's is raised in the code that set the collection off, as its next line
    begins."""
    assert next(dis.get_instructions(FunctionHooks.collected)).opname == "SETUP_FINALLY"  # no handler before it
    hooks, dropped, reached = FunctionHooks(_Interrupted(error)), [], []
    unraisable, sys.unraisablehook = sys.unraisablehook, dropped.append
    gc.callbacks.append(hooks.collected)
    try:
        with pytest.raises(type(error)):
            gc.collect()
            reached.append("the line after the collection")
    finally:
        gc.callbacks.remove(hooks.collected)
        sys.unraisablehook = unraisable
    assert not dropped and not reached


@pytest.mark.slow
def test_a_ctrl_c_landing_in_a_function_hook_reaches_the_programs_own_handler(tmp_path):
    """A Ctrl-C whose handler ran inside a function hook (injected: the hook's first look at a pass raises it), raised
    there, would leave ``forward`` as a SystemError the program's ``except KeyboardInterrupt`` misses. It is raised as
    the call returns: the program's own handler runs, and its exit status is its own."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([FAULTS, ROOT]),
        NNPROFILE_TEST_INTERRUPT="nnprofile.recording.passes:PassTracker.static_function@catches_ctrl_c",
    )
    program = os.path.join(ROOT, "tests", "scripts", "catches_ctrl_c.py")
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "--warmup", "0", "-o", str(tmp_path / "out"), program],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=600,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert proc.stdout.startswith("stopped by Ctrl-C at iteration 0: saved"), proc.stdout
    assert "SystemError" not in proc.stderr and "Traceback" not in proc.stderr


def test_nested_import_waits_on_one_thread_keep_the_outer_one():
    """importlib's _blocking_on as a recording leaves it: a wait nested in another on the same thread (a garbage
    collection inside an import that imports again) takes only its own note off; a plain dict loses the outer."""
    from nnprofile.recording.importlock import StackedLocks, install, uninstall

    locks = StackedLocks({})
    locks[7] = "outer"
    locks[7] = "inner"
    assert locks.get(7) == "inner"
    del locks[7]
    assert locks.get(7) == "outer"  # the outer wait is still noted (deadlock detection reads it)
    del locks[7]
    assert 7 not in locks and not locks.stacks
    plain = {7: "outer"}
    plain[7] = "inner"
    del plain[7]
    with pytest.raises(KeyError):
        del plain[7]  # what importlib's own dict does: the KeyError behind MAML's SystemError
    import _frozen_importlib

    original = _frozen_importlib._blocking_on
    saved = install()
    try:
        assert saved is original and isinstance(_frozen_importlib._blocking_on, StackedLocks)
        import json.tool  # noqa: F401  (an import through the stacked locks)
    finally:
        uninstall(saved)
    assert _frozen_importlib._blocking_on is original


def test_import_waits_plain_between_windows_stacked_again_in_a_window():
    """Between windows the stacked dict runs as a plain one; stacked again, a wait under way then (another
    thread's) is the bottom of its thread's stack, and a nested one on it comes off alone."""
    import _frozen_importlib
    from nnprofile.recording.importlock import StackedLocks, install, stacked, uninstall

    saved = install()
    if saved is None:
        pytest.skip("this interpreter's importlib keeps its waits otherwise")
    locks = _frozen_importlib._blocking_on
    try:
        stacked(False)
        assert StackedLocks.__setitem__ is dict.__setitem__ and not locks.stacks
        locks[-5] = "plain"
        assert not locks.stacks  # noted as a plain dict notes it
        stacked(True)
        locks[-5] = "nested"
        del locks[-5]
        assert locks.get(-5) == "plain"
        del locks[-5]
        assert -5 not in locks
        stacked(False)
    finally:
        uninstall(saved)
    assert StackedLocks.__setitem__ is not dict.__setitem__  # a recording to come starts stacked


def test_the_calibration_times_the_hooks_with_the_import_waits_stacked():
    """The hooks' cost of auto_forward calls is measured at the run's end too, after the recording put importlib's
    dict back: with NNabla's imports under the hooks, a collection inside one made that measurement, and with it the
    profile, fail with KeyError (2 of 6 runs of tests/scripts/maml.py beside two busy processes). Its hooked runs
    have the waits stacked, as a window has them, and the plain dict back after."""
    import _frozen_importlib

    from nnprofile.recording.calibrate import hooks_only
    from nnprofile.recording.importlock import StackedLocks
    from nnprofile.recording.recorder import Recorder

    original = _frozen_importlib._blocking_on
    if type(original) is not dict:
        pytest.skip("this interpreter's importlib keeps its waits otherwise")
    seen = []
    with hooks_only(Recorder()):
        locks = _frozen_importlib._blocking_on
        seen.append(isinstance(locks, StackedLocks))
        locks[-7] = "outer"
        locks[-7] = "nested"  # a collection inside the import waits again, on the same thread
        del locks[-7]
        del locks[-7]  # the outer's own delete: a plain dict raises KeyError here
    assert seen == [True] and _frozen_importlib._blocking_on is original and -7 not in original


def _draws():
    import numpy as np

    import nnabla as nn
    import nnabla.functions as F

    with nn.auto_forward():
        made = F.rand(shape=(4,)).d.tolist()
    return np.random.rand(4).tolist(), nn.random.prng.rand(4).tolist(), made


def _seeded():
    import numpy as np

    import nnabla as nn

    np.random.seed(7)
    nn.random.seed(7)
    nn.random.set_function_seed(7)


def test_the_programs_random_draws_are_what_they_are_without_nnprofile(tmp_path, monkeypatch):
    """A program seeds its generators, then records: NumPy's global one, NNabla's and the functions' draw the same
    numbers as without nnprofile (what nnprofile measures first draws from generators of its own)."""
    import nnprofile.base.machine as machine

    monkeypatch.setattr(machine, "_MEASURED", None)  # measured again here, as in a program's first record()
    _seeded()
    alone = _draws()
    _seeded()
    with nnprofile.record(str(tmp_path / "out")):
        recorded = _draws()
    assert recorded == alone


def _alone_and_profiled(script, tmp_path):
    """The script run alone, then under ``nnprofile run`` (into ``tmp_path/out``), both from ``tmp_path``."""
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=str(tmp_path))
    profiled = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(tmp_path / "out"), str(script)],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    return alone, profiled


LOGS_AROUND_ITS_IMPORT = """
import logging
logging.getLogger("library").info("before the program imports nnabla")
import nnabla  # (its import sets up logging: INFO lines print from here on)
logging.getLogger("library").info("after the program imports nnabla")
"""


@pytest.mark.slow
def test_a_library_logs_before_the_program_imports_nnabla_as_it_does_alone(tmp_path):
    """nnprofile imports NNabla before the program does; NNabla's import sets up the root logger. A library's INFO line
    before the program's own import of NNabla (matplotlib's "generated new fontManager" on a first run) goes to no
    one alone, and so under nnprofile; one after it prints in both."""
    script = tmp_path / "logs.py"
    script.write_text(LOGS_AROUND_ITS_IMPORT)
    alone, profiled = _alone_and_profiled(script, tmp_path)
    assert alone.returncode == profiled.returncode == 0, profiled.stderr[-2000:]
    assert "before the program imports" not in alone.stderr and "after the program imports" in alone.stderr
    assert "before the program imports" not in profiled.stderr, profiled.stderr
    assert "after the program imports" in profiled.stderr


KEEPS_ITS_SOLVER = """
import atexit, gc
import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S


def alive():
    gc.collect()
    kinds = {"nnabla.function.Function": 0, "nnprofile.assembly.events.Call": 0}
    for o in gc.get_objects():
        kind = "%s.%s" % (type(o).__module__, type(o).__name__)
        if kind in kinds:
            kinds[kind] += 1
    print("alive", kinds["nnabla.function.Function"], kinds["nnprofile.assembly.events.Call"])


def step(solver):
    x = nn.Variable.from_numpy_array(np.ones((4, 8), dtype=np.float32))
    loss = F.mean(F.relu(PF.affine(F.tanh(PF.affine(x, 8, name="a")), 1, name="b")))
    solver.zero_grad()
    loss.forward()
    loss.backward()
    solver.update()


solver = S.Sgd(0.01)
solver.set_parameters({k: v for k, v in nn.get_parameters().items()} or {})
step(solver)
solver.set_parameters(nn.get_parameters())
for i in range(30):
    step(solver)
atexit.register(alive)  # (after nnprofile's end, as the program's own end)
"""


@pytest.mark.slow
def test_a_recording_over_holds_none_of_the_programs_graphs(tmp_path):
    """The program keeps its solver, which nnprofile's proxy stands in for, and builds a graph each step inside a
    function. Once the recording is written, what it recorded (which held every function of the kept steps' graphs)
    is let go: at the program's end as many of NNabla's functions are alive as alone, and none of the recorded calls."""
    script = tmp_path / "keeps.py"
    script.write_text(KEEPS_ITS_SOLVER)
    alone, profiled = _alone_and_profiled(script, tmp_path)
    assert alone.returncode == 0 and profiled.returncode == 0, profiled.stderr
    said = [line.split() for line in (alone.stdout + profiled.stdout).splitlines() if line.startswith("alive")]
    assert len(said) == 2
    assert said[1][1] == said[0][1]  # NNabla's functions alive: as many as alone
    assert said[1][2] == "0"  # nnprofile's recorded calls: none
