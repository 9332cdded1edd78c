"""Long trainings: windows across the run, files as soon as a window closes, the view over the windows,
capture on demand, ``-m``. The schedule and the finding are tested on their own (no NNabla, the fake
clock); the rest on a training script of tests/scripts/ run as users run it.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import nnprofile
from conftest import FakeClock, ROOT, run_cli
from nnprofile.analysis.windows import NOISE_FLOOR, analyze_windows, slowdown
from nnprofile.render.windows import finding
from nnprofile.base.hookcost import HookCosts
from nnprofile.recording.schedule import ACTIVE, CALIBRATE, OFF, WARMUP, Schedule, Windows
from nnprofile.recording.profiling import schedule_note
from nnprofile.result.windows import WindowSummary

SCRIPTS = os.path.join(ROOT, "tests", "scripts")
LONG = os.path.join(SCRIPTS, "long_train.py")


# -- the schedule, step by step -------------------------------------------------------------------


def _phases(windows, steps):
    out = []
    for step in range(steps):
        out.append(windows.begin(step))
        windows.window_done(step + 1)
    return out


def test_windows_fall_where_torch_profilers_schedule_puts_them():
    w = Windows(Schedule(wait=2, warmup=1, active=3, repeat=2))
    phases = _phases(w, 16)
    assert phases == [
        (OFF, 0),
        (OFF, 0),
        (WARMUP, 1),
        (ACTIVE, 1),
        (ACTIVE, 1),
        (ACTIVE, 1),
        (OFF, 0),
        (OFF, 0),
        (WARMUP, 2),
        (ACTIVE, 2),
        (ACTIVE, 2),
        (ACTIVE, 2),
        (OFF, 0),
        (OFF, 0),
        (OFF, 0),
        (OFF, 0),
    ]  # two windows, then no more
    assert w.closed == 2


def test_the_first_window_is_followed_by_the_calibration_and_repeat_0_goes_on():
    w = Windows(Schedule(wait=0, warmup=1, active=2, repeat=0), calibration=(False, True))
    phases = _phases(w, 12)
    assert phases[:5] == [(WARMUP, 1), (ACTIVE, 1), (ACTIVE, 1), (CALIBRATE, 1), (CALIBRATE, 1)]
    assert phases[5:8] == [(WARMUP, 2), (ACTIVE, 2), (ACTIVE, 2)]  # no calibration after the first
    assert phases[8:11] == [(WARMUP, 3), (ACTIVE, 3), (ACTIVE, 3)]  # until the program ends


def test_a_window_on_demand_begins_at_the_next_step_each_time_it_is_asked():
    w = Windows(Schedule(warmup=0, active=2, on_demand=True))
    assert _phases(w, 3) == [(OFF, 0)] * 3
    assert w.ask(3) and not w.ask(3)  # asked twice before it began: one window
    assert _phases_from(w, 3, 6) == [(ACTIVE, 1), (ACTIVE, 1), (OFF, 0)]
    assert w.ask(7)
    assert _phases_from(w, 7, 9) == [(ACTIVE, 2), (ACTIVE, 2)]


def _phases_from(windows, start, end):
    out = []
    for step in range(start, end):
        out.append(windows.begin(step))
        windows.window_done(step + 1)
    return out


def test_a_schedule_says_itself_and_refuses_what_cannot_be():
    assert str(schedule_note(Schedule())) == "wait 0, warmup 1, active 10, repeat 1 (1 window)"
    assert not Schedule().windowed and Schedule(repeat=0).windowed and Schedule(on_demand=True).windowed
    with pytest.raises(ValueError):
        Schedule(active=0)
    with pytest.raises(ValueError):
        Schedule(wait=-1)


# -- the finding, on figures made by hand ------------------------------------------------------


def _window(k, step, parts, error=0.01, layers=None):
    return WindowSummary(
        k,
        100 * k + 1,
        100 * k + 20,
        20,
        10.0 * k,
        10.0 * k + 1,
        step,
        error,
        list(parts.items()),
        layers or {},
        True,
        "window-%d" % k,
    )


def test_a_lasting_slowdown_is_found_with_the_part_that_grew():
    base = {"input (data)": 1.0, "forward (loss)": 3.0, "backward (loss)": 4.0, "other": 2.0}
    slow = dict(base, **{"input (data)": 6.0})
    windows = [_window(1, 10.0, base), _window(2, 10.1, base), _window(3, 15.0, slow), _window(4, 15.1, slow)]
    s = slowdown(windows)
    assert s is not None and s.window == 3 and s.first_step == 301
    assert s.part == "input (data)" and (s.part_base_ms, s.part_ms) == (1.0, 6.0)
    assert s.step_ms == 15.1 and s.base_ms == 10.0
    assert "the part that grew most: input (data)" in finding(s)


def test_a_slow_spell_just_before_a_lasting_slowdown_is_not_its_start():
    """The machine ran 1.3x slow through window 3; the input fell behind from window 4 on: the finding
    names window 4. A slowdown that grows step by step is found where the series moves most."""
    base = {"input (data)": 0.1, "other": 0.3}
    slow = {"input (data)": 5.0, "other": 0.4}
    steps = [0.42, 0.40, 0.55, 5.4, 5.9, 5.3, 5.6]
    windows = [_window(k + 1, ms, slow if ms > 1 else base, 0.005) for k, ms in enumerate(steps)]
    s = slowdown(windows)
    assert s is not None and s.window == 4 and s.first_step == 401 and s.part == "input (data)"
    # no spell: the same step from window 3 on is found from window 3
    steps = [0.42, 0.40, 5.5, 5.4, 5.9]
    assert slowdown([_window(k + 1, ms, base, 0.005) for k, ms in enumerate(steps)]).window == 3
    # the last window only
    assert slowdown([_window(k + 1, ms, base, 0.005) for k, ms in enumerate([1.0, 1.0, 1.0, 2.0])]).window == 4
    # a steady climb: where the two levels split best
    climb = [1.0, 1.0, 1.0, 1.5, 2.0, 2.0, 2.0]
    assert slowdown([_window(k + 1, ms, base, 0.005) for k, ms in enumerate(climb)]).window in (4, 5)


def test_a_difference_within_the_noise_or_a_passing_spell_is_no_slowdown():
    base = {"forward (loss)": 5.0, "other": 5.0}
    # 4% slower: under the floor
    assert slowdown([_window(1, 10.0, base), _window(2, 10.4, base)]) is None
    # 15% slower, but the spread (a standard error of 0.6 ms each) allows 1.7 ms
    assert slowdown([_window(1, 10.0, base, 0.6), _window(2, 11.5, base, 0.6)]) is None
    # 8% slower, but the windows' own spread (a standard error of 0.5 ms each) allows 1.4 ms
    assert slowdown([_window(1, 10.0, base, 0.5), _window(2, 10.8, base, 0.5)]) is None
    # a slow spell in the middle window that passed
    assert slowdown([_window(1, 10.0, base), _window(2, 14.0, base), _window(3, 10.1, base)]) is None
    # just past the floor, with no spread
    assert slowdown([_window(1, 10.0, base, 0.0), _window(2, 10.0 * (1 + NOISE_FLOOR) + 0.01, base, 0.0)]) is not None


def test_the_layers_that_moved_most_between_the_first_and_the_last_window():
    a = analyze_windows(
        [
            _window(1, 10.0, {}, layers={"conv1": 2.0, "conv2": 3.0, "fc": 1.0}),
            _window(2, 12.0, {}, layers={"conv1": 2.1, "conv2": 5.0, "fc": 0.5}),
        ]
    )
    assert [name for name, _, _ in a.moved] == ["conv2", "fc", "conv1"]
    assert a.moved[0] == ("conv2", 3.0, 5.0)


# -- windows of a program on the fake clock ------------------------------------------------------


def _batches(load):
    """An NNabla iterator of 4 samples a batch, read in the program's thread (its wait is the loading)."""
    from nnabla.utils.data_iterator import data_iterator_simple

    data = data_iterator_simple(load, 64, 4, shuffle=False, with_memory_cache=False, with_file_cache=False)
    data._use_thread = False
    return data


def _slowing_input(clock, state):
    """A sample loader whose batches take exactly 5 ms longer (on the fake clock) from step 13 on."""

    def load(i):
        if state["step"] >= 12 and i % 4 == 0:
            clock.advance(5_000_000)
        return [1.0, 2.0, 3.0], [1.0]

    return load


def _windows_every_6_steps(tmp_path, clock, seen):
    """Windows of 4 kept steps after 1 set aside, 1 step apart, as long as the program runs."""
    return nnprofile.Recording(
        outdir=tmp_path,
        clock=clock.now_ns,
        hook_costs=HookCosts(),
        schedule=Schedule(wait=1, warmup=1, active=4, repeat=0),
        on_window=lambda p: seen.append(p.header.kept_steps),
    )


def test_a_program_whose_input_slows_down_is_found_slow_in_its_input_on_the_fake_clock(tmp_path):
    """The input of steps 13 on takes 5 ms longer (exactly: the fake clock); windows of 4 kept steps
    after 1 set aside, every 6 steps: the view finds it, from the window that began after, naming the input."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF
    import nnabla.solvers as S

    nn.clear_parameters()
    clock = FakeClock(steps=(1000,))
    state = {"step": 0}
    data = _batches(_slowing_input(clock, state))
    x, t = nn.Variable((4, 3)), nn.Variable((4, 1))
    with nn.parameter_scope("fc"):
        loss = F.mean(F.squared_error(PF.affine(x, 1), t))
    seen = []
    with _windows_every_6_steps(tmp_path, clock, seen):
        solver = S.Sgd()
        solver.set_parameters(nn.get_parameters())
        for i in range(24):
            state["step"] = i
            x.d, t.d = data.next()
            loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    assert seen == [[3, 4, 5, 6], [9, 10, 11, 12], [15, 16, 17, 18], [21, 22, 23, 24]]
    view = nnprofile.load(tmp_path)
    assert [w.folder for w in view.windows] == ["window-1", "window-2", "window-3", "window-4"]
    found = nnprofile.analyze(view).windows.slowdown
    assert found is not None and found.window == 3 and found.part == "input (data)"
    assert found.part_ms - found.part_base_ms == pytest.approx(5.0, abs=0.01)
    assert os.path.isfile(tmp_path / "window-3" / "result.json") and os.path.isfile(tmp_path / "windows.csv")


def test_an_evaluation_loop_without_a_solver_is_counted_by_its_reads_between_windows(tmp_path):
    """No solver, no nnprofile.step(): a loop that reads a batch of images and one of references each step
    and runs the network forward (the passes show its steps only with the hooks). Between windows its steps
    are counted by the iterators' reads (two a step, as the first window showed; before it, the reads'
    own pattern): the windows fall where a training loop's fall, and the input slowed from step 13 on is
    found from the window after, on the fake clock."""
    import nnabla as nn
    import nnabla.functions as F
    import nnabla.parametric_functions as PF

    nn.clear_parameters()
    clock = FakeClock(steps=(1000,))
    state = {"step": 0}
    images, references = _batches(_slowing_input(clock, state)), _batches(lambda i: ([0.0, 1.0, 2.0], [0.0]))
    x, r = nn.Variable((4, 3)), nn.Variable((4, 3))
    with nn.parameter_scope("fc"):
        distance = F.sum(F.squared_error(PF.affine(x, 2), PF.affine(r, 2)))
    seen = []
    with _windows_every_6_steps(tmp_path, clock, seen):
        for i in range(24):
            state["step"] = i
            x.d, _ = images.next()
            r.d, _ = references.next()
            distance.forward()
    assert seen == [[3, 4, 5, 6], [9, 10, 11, 12], [15, 16, 17, 18], [21, 22, 23, 24]]
    view = nnprofile.load(tmp_path)
    assert not any("could not be counted" in n for n in view.notes)
    found = nnprofile.analyze(view).windows.slowdown
    assert found is not None and found.window == 3 and found.part == "input (images)"


# -- programs run as users run them --------------------------------------------------------------


def _start(tmp_path, *options, script_args=(), module=None, cwd=None):
    out = tmp_path / "out"
    target = ["-m", module] if module else [LONG]
    proc = subprocess.Popen(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(out), *options, *target, *script_args],
        cwd=str(cwd or tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return out, proc


def _wait_for(path, proc, timeout=120):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, "%s never appeared" % path
        time.sleep(0.05)


@pytest.mark.slow
def test_each_windows_files_are_complete_while_the_program_still_runs(tmp_path):
    """Two windows of 5 kept steps, 10 steps apart; the program pauses at iteration 60 until the test has
    read the first window's files and the view: both loadable, complete, saying what they hold."""
    go = tmp_path / "go"
    out, proc = _start(
        tmp_path,
        "--wait",
        "10",
        "--warmup",
        "1",
        "--active",
        "5",
        "--repeat",
        "2",
        script_args=["--iterations", "80", "--pause-at", "60", "--pause-file", str(go)],
    )
    _wait_for(out / "window-2" / "result.json", proc)
    deadline = time.time() + 60
    while len(nnprofile.load(out).windows) < 2:  # the view is rewritten just after the window's own files
        assert time.time() < deadline
        time.sleep(0.05)
    assert proc.poll() is None  # still running: paused at iteration 60
    first = nnprofile.load(out / "window-1")
    assert first.complete and first.header.window == 1 and first.header.kept_steps == [12, 13, 14, 15, 16]
    view = nnprofile.load(out)
    assert [(w.window, w.first_step, w.last_step) for w in view.windows] == [(1, 12, 16), (2, 48, 52)]
    assert (out / "window-1" / "report.html").exists() and (out / "windows.csv").exists()
    go.write_text("")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    view = nnprofile.load(out)
    [end] = [str(n) for n in view.notes if n.kind == "after_windows"]
    assert "the program ran 28 more steps unrecorded" in end and "ended normally" in end
    log = (out / "profile.log").read_text()
    assert "Windows: 2 recorded" in log and "Window 2: steps 48 to 52" in log


@pytest.mark.slow
def test_an_evaluation_loop_run_as_a_script_gets_windows_across_its_run(tmp_path):
    out, proc = _start(
        tmp_path,
        "--wait",
        "10",
        "--warmup",
        "1",
        "--active",
        "5",
        "--repeat",
        "0",
        script_args=["--inference", "--iterations", "120"],
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    view = nnprofile.load(out)
    # the first window, its 20 calibration steps, then a window every 16 steps (10 + 1 + 5)
    assert [w.first_step for w in view.windows] == [12, 48, 64, 80, 96, 112]
    assert any("after step 116 (the end of window 6) the program ran 4 more steps unrecorded" in n for n in view.notes)
    assert [s.name for s in view.sections][0] == "y" and "accuracy" in stdout


@pytest.mark.slow
def test_a_sigkill_after_a_window_leaves_its_files_complete(tmp_path):
    out, proc = _start(tmp_path, "--active", "10", script_args=["--iterations", "200", "--kill-at", "60"])
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    profile = nnprofile.load(out)  # the window closed at step 31 (1 + 10 + 20): written then
    assert profile.complete and profile.header.kept_steps == list(range(2, 12))
    for name in ("profile.log", "profile.xlsx", "report.html", "trace.json.gz", "profile.csv"):
        assert (out / name).stat().st_size > 0
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]


@pytest.mark.slow
def test_a_module_runs_as_python_m_runs_it_with_its_package_and_arguments(tmp_path):
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text("ITERATIONS = 30\n")
    source = (
        open(LONG)
        .read()
        .replace(
            'parser.add_argument("--iterations", type=int, default=100',
            "from trainer.settings import ITERATIONS\n    "
            'parser.add_argument("--iterations", type=int, default=ITERATIONS',
        )
    )
    (package / "train.py").write_text(source)
    out, proc = _start(tmp_path, module="trainer.train", script_args=["--print-argv", "--units", "16"])
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    argv = eval(stdout.split("argv ", 1)[1].splitlines()[0])
    assert argv == [str(package / "train.py"), "--print-argv", "--units", "16"]  # as python -m sets it
    assert "ran 30 iterations" in stdout  # its package imported from the working folder
    profile = nnprofile.load(out)
    assert profile.header.project == "-m trainer.train --print-argv --units 16"
    assert profile.header.kept_steps == list(range(2, 2 + Schedule.active))
    proc = run_cli("run", "-q", "-o", str(tmp_path / "bad"), "-m", "no_such_module", cwd=str(tmp_path))
    assert (
        proc.returncode != 0
        and proc.stderr.strip().splitlines()[-1] == "nnprofile: error: no module named no_such_module"
    )


@pytest.mark.slow
def test_on_demand_records_a_window_each_time_it_is_asked(tmp_path):
    stop = tmp_path / "stop"
    out, proc = _start(
        tmp_path,
        "--on-demand",
        "--warmup",
        "1",
        "--active",
        "5",
        script_args=["--iterations", "0", "--stop-file", str(stop), "--seconds-per-step", "0.002"],
    )
    _wait_for(out / "on-demand.json", proc)
    status = json.loads((out / "on-demand.json").read_text())
    assert status["pid"] == proc.pid and status["signal"] == "USR1" and status["windows"] == 0
    time.sleep(0.5)
    assert not (out / "window-1").exists()  # untouched until asked
    for k in (1, 2):
        asked = run_cli("capture", str(proc.pid))
        assert asked.returncode == 0, asked.stderr
        assert "window-%d" % k in asked.stdout
        _wait_for(out / ("window-%d" % k) / "result.json", proc)
    stop.write_text("")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert stderr.count("written to") == 2
    view = nnprofile.load(out)
    assert [w.window for w in view.windows] == [1, 2] and all(w.steps == 5 for w in view.windows)
    assert view.windows[1].first_step > view.windows[0].last_step


@pytest.mark.slow
def test_capture_refuses_a_process_not_started_on_demand_or_whose_program_took_the_signal(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc = run_cli("capture", str(sleeper.pid))
        assert proc.returncode != 0 and "was not started with nnprofile run --on-demand" in proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        sleeper.kill()
    stop = tmp_path / "stop"
    code = (
        "import signal, runpy, sys; signal.signal(signal.SIGUSR1, lambda *a: None); "
        "sys.argv = [%r] + sys.argv[1:]; runpy.run_path(%r, run_name='__main__')" % (LONG, LONG)
    )
    script = tmp_path / "own_handler.py"
    script.write_text(code)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nnprofile",
            "run",
            "-q",
            "--on-demand",
            "-o",
            str(out),
            str(script),
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
    try:
        deadline = time.time() + 120
        while "replaced" not in (out / "on-demand.json").read_text() if (out / "on-demand.json").exists() else True:
            assert time.time() < deadline and proc.poll() is None
            time.sleep(0.05)
        asked = run_cli("capture", str(proc.pid))
        assert asked.returncode != 0 and "installed its own SIGUSR1 handler" in asked.stderr
    finally:
        stop.write_text("")
        stdout, stderr = proc.communicate(timeout=120)
    assert "the program installed its own SIGUSR1 handler" in stderr


@pytest.mark.slow
def test_max_windows_keeps_the_last_folders_and_every_windows_figures(tmp_path):
    out, proc = _start(
        tmp_path,
        "--wait",
        "2",
        "--warmup",
        "0",
        "--active",
        "3",
        "--repeat",
        "0",
        "--max-windows",
        "2",
        script_args=["--iterations", "90"],
    )
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    view = nnprofile.load(out)
    kept = sorted(p for p in os.listdir(out) if p.startswith("window-"))
    assert len(view.windows) > 3 and kept == sorted("window-%d" % w.window for w in view.windows[-2:])
    assert all(w.folder == "" for w in view.windows[:-2]) and view.windows[-1].folder == kept[-1]


@pytest.mark.slow
def test_ctrl_c_in_a_window_writes_it_and_every_window_before(tmp_path):
    from conftest import interruptible

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
            "--warmup",
            "0",
            "--active",
            "5",
            "--wait",
            "2",
            "--repeat",
            "0",
            LONG,
            "--iterations",
            "0",
            "--seconds-per-step",
            "0.01",
        ],
        cwd=str(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    _wait_for(out / "window-2" / "result.json", proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGINT, stderr
    view = nnprofile.load(out)
    assert len(view.windows) >= 2 and all(w.complete for w in view.windows[:2])
    assert not view.complete and view.failure == "interrupted by Ctrl-C"
    log = (out / "profile.log").read_text()
    assert log.startswith("nnprofile") and "Schedule: wait 2, warmup 0, active 5, repeat 0" in log


@pytest.mark.slow
def test_a_training_whose_input_falls_behind_is_found_slow_in_its_input(tmp_path):
    """A real run: from iteration 1000 the loader sleeps 5 ms a batch; windows every 220 steps or so: the view
    finds the slowdown from the first window after it, and names the input."""
    out, proc = _start(
        tmp_path,
        "--wait",
        "200",
        "--active",
        "20",
        "--repeat",
        "0",
        script_args=["--iterations", "2000", "--slow-input-after", "1000", "--slow-ms", "5"],
    )
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    view = nnprofile.load(out)
    found = nnprofile.analyze(view).windows.slowdown
    first_slow = next(w for w in view.windows if w.first_step > 1001)
    seen = [(w.window, w.first_step, w.step_ms, w.step_error_ms, dict(w.parts)) for w in view.windows]
    assert found is not None and found.window == first_slow.window and found.part == "input (data)", seen
    assert "Finding: the step slowed from window %d on" % first_slow.window in (out / "profile.log").read_text()


def test_reads_in_no_pattern_are_counted_no_longer_than_their_first_64():
    """Before any window, a loop without a solver is counted by the pattern its reads form; reads that form
    none are kept only so long (what is sought stays bounded), then the reads count nothing."""
    from nnprofile.recording.counting import FREEZE_AT
    from nnprofile.recording.recorder import Recorder

    steps = Recorder(schedule=Schedule(wait=10**6), calibrate=False).steps
    for k in range(3 * FREEZE_AT):  # a new iterator each read: no pattern
        if steps.counts_reads():
            steps.light_read(k)
    assert not steps.counts_reads() and len(steps.reads) == FREEZE_AT and steps.done == 0
    steady = Recorder(schedule=Schedule(wait=10**6), calibrate=False).steps
    for _ in range(3 * FREEZE_AT):
        steady.light_read(0)
    assert steady.counts_reads() and steady.done == 3 * FREEZE_AT - 1  # the last step ends at the next read


@pytest.mark.slow
@pytest.mark.parametrize("module", [False, True])
def test_the_program_sees_the_sys_path_python_gives_it(tmp_path, module):
    """Not one entry more: each import that fails (NNabla runs a few a step) looks in every entry."""
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "__init__.py").write_text("")
    (tmp_path / "prog" / "show.py").write_text("import json, sys\nprint('PATH ' + json.dumps(sys.path))\n")
    target = ["-m", "prog.show"] if module else [str(tmp_path / "prog" / "show.py")]

    def seen(command):
        proc = subprocess.run(command, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.split("PATH ", 1)[1].splitlines()[0])

    alone = seen([sys.executable, *target])
    assert seen([sys.executable, "-m", "nnprofile", "run", "-q", "-o", str(tmp_path / "out"), *target]) == alone


@pytest.mark.slow
def test_the_steps_the_lean_note_names_are_numbered_over_the_run_as_the_header_numbers_them(tmp_path):
    """A first window after 6 steps waited: the steps run without the hooks that the note names are among the header's
    (both numbered from the run's first step), never counted from the window's."""
    out = tmp_path / "out"
    proc = run_cli(
        "run", "-q", "-o", str(out), "--wait", "6", "--warmup", "0", "--active", "8", "--repeat", "1",
        LONG, "--iterations", "50", cwd=str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    h = nnprofile.load(out).header
    [lean] = [n for n in nnprofile.load(out).notes if n.kind == "lean_step"]
    assert h.kept_steps[0] == 7
    assert set(lean.figures["plain_steps"]) <= set(h.plain_steps), (lean.figures, h.plain_steps)
    steps = lean.figures["plain_steps"]
    assert "(steps %d to %d)" % (min(steps), max(steps)) in " ".join((out / "profile.log").read_text().split())
