"""The program's own pass calls, timed where it makes them (``nnprofile.recording.passtimes``): the code compiled so
runs as Python runs it (same results, order, lines in a traceback), notes only NNabla's passes on the recorded thread
in a window, writes nothing into the program's folder, and leaves installed packages as they are."""

import os
import subprocess
import sys
import threading
import traceback

from conftest import ROOT, run_cli
from nnprofile.assembly import capture_file
from nnprofile.base.schedule import Schedule
from nnprofile.recording.recorder import CALIBRATION
from nnprofile.recording import passtimes

SOURCE = b"""\
class Net:
    def __init__(self):
        self.ran = []

    def forward(self, n=1):
        self.ran.append(("forward", n))

    def backward(self):
        self.ran.append(("backward",))
        return "built"


def order(tag):
    seen.append(tag)
    return net


seen = []
net = Net()
first = order("receiver").forward(n=order("argument") and 2)
second = net.backward()
raise ValueError("line 22")
"""


def test_the_code_compiled_so_runs_as_python_runs_it_and_notes_what_returns_none():
    noted, begun = [], []
    ticks = iter(range(100, 1000))
    scope = {
        passtimes.NOTE: lambda start, phase, result, site: noted.append((start, phase, result, site)) or result,
        passtimes.CLOCK: lambda site: begun.append(site) or next(ticks),
    }
    code = passtimes.compiled(SOURCE, "prog.py")
    assert code is not None
    try:
        exec(code, scope)
        raise AssertionError("the program's own error was not raised")
    except ValueError as e:
        assert traceback.extract_tb(e.__traceback__)[-1].lineno == 22  # its line, as Python numbers it
    assert scope["first"] is None and scope["second"] == "built"
    assert scope["net"].ran == [("forward", 2), ("backward",)]
    assert scope["seen"] == ["receiver", "argument"]  # the receiver, then its arguments: Python's order
    assert [(phase, result) for _, phase, result, _ in noted] == [("forward", None), ("backward", "built")]
    # each call's site: which of the program's calls it was (its file, line and column)
    assert [site for *_, site in noted] == ["prog.py:20:8", "prog.py:21:9"] == begun  # (told as each call begins)


def test_a_file_that_does_not_parse_is_left_to_python():
    assert passtimes.compiled(b"def broken(:\n", "bad.py") is None


class _Host:
    def __init__(self):
        self.capturing = True
        self.program_thread = threading.get_ident()
        self.clock = iter(range(10, 100)).__next__

        class W:
            passes = []

        self.window = W()


def test_a_note_keeps_only_a_pass_on_the_recorded_thread_while_a_window_is_open():
    host = _Host()
    note = passtimes.PassTimes(host).names()[passtimes.NOTE]
    assert note(1, "forward", None) is None
    assert note(2, "forward", "a graph built") == "a graph built"  # a method of the program's own
    host.capturing = False
    note(3, "backward", None)  # between windows
    host.capturing = True
    worker = threading.Thread(target=note, args=(4, "forward", None))
    worker.start()
    worker.join()
    assert [(s, ph) for s, _, ph, _ in host.window.passes] == [(1, "forward")]


def test_a_pass_the_hooked_steps_seldom_called_turns_the_hooks_on_in_the_steps_without_them():
    """A validation every few steps, falling in the steps without the hooks, is recorded: its first pass puts the
    hooks back on before it runs (the step is then neither kept nor without the hooks); a pass of the usual steps
    (every step, every third) leaves them off, and no site is judged before a hooked step called a pass."""
    host = _Host()
    host.hooks_on, host.calibrate, switched = True, True, []

    class Steps:
        done = 0

    host.steps = Steps()
    host._switch_hooks = switched.append
    host._outside_loop = lambda frame: frame.f_code.co_name == "after_the_loop"
    times = passtimes.PassTimes(host)
    names = times.names()
    begin, note = names[passtimes.CLOCK], names[passtimes.NOTE]
    host.hooks_on = False
    begin("train.py:9:4")  # no hooked step seen yet: nothing to judge by
    host.hooks_on = True
    for step in range(1, 11):  # kept steps: the training every step, a generator every third, a validation once
        host.steps.done = step
        note(begin("train.py:9:4"), "forward", None, "train.py:9:4")
        if step % 3 == 0:
            note(begin("train.py:12:4"), "forward", None, "train.py:12:4")
        if step == 4:
            note(begin("train.py:5:8"), "forward", None, "train.py:5:8")
    host.hooks_on = False
    begin("train.py:9:4")
    begin("train.py:12:4")
    assert switched == []
    begin("train.py:5:8")  # the validation, in a step without the hooks
    begin("elsewhere.py:1:0")  # a site no hooked step called
    assert switched == [True, True]

    def after_the_loop():  # (past the loop: for the recorder to follow, as its last step ends)
        begin("train.py:30:4")

    after_the_loop()
    assert switched == [True, True]


def test_only_the_programs_own_files_are_compiled_so(tmp_path):
    root = str(tmp_path)
    for sub in ("pkg", os.path.join(".venv", "lib", "site-packages", "lib")):
        os.makedirs(os.path.join(root, sub))
    assert passtimes.own_file(os.path.join(root, "pkg", "model.py"), root)
    assert not passtimes.own_file(os.path.join(root, ".venv", "lib", "site-packages", "lib", "x.py"), root)
    assert not passtimes.own_file(os.path.join(os.path.dirname(root), "elsewhere.py"), root)
    assert not passtimes.own_file(passtimes.__file__, os.path.dirname(os.path.dirname(passtimes.__file__)))
    assert not passtimes.own_file(os.__file__, "/")  # a program run from "/": Python's own library is not its


PROGRAM = """\
import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

import helper

x = nn.Variable((16, 8))
x.d = np.random.RandomState(0).rand(16, 8)
loss = F.mean(F.relu(PF.affine(x, 4)))
solver = S.Sgd(0.01)
solver.set_parameters(nn.get_parameters())
for i in range(60):
    solver.zero_grad()
    helper.forward(loss)
    loss.backward()
    solver.update()
print("done", sorted(k for k in dir(helper) if "nnprofile" in k), round(float(loss.d), 4))
"""


def test_a_programs_passes_are_timed_in_its_script_and_modules_and_its_folder_left_as_it_was(tmp_path):
    work = tmp_path / "prog"
    work.mkdir()
    (work / "train.py").write_text(PROGRAM)
    (work / "helper.py").write_text("def forward(loss):\n    loss.forward()\n")
    alone = subprocess.run([sys.executable, "train.py"], cwd=str(work), capture_output=True, text=True, timeout=300)
    assert alone.returncode == 0, alone.stderr
    for cache in work.glob("__pycache__"):  # (the run alone made it: under nnprofile, nothing is written there)
        for f in cache.iterdir():
            f.unlink()
        cache.rmdir()
    out = str(tmp_path / "out")
    run = run_cli("run", "-q", "--save-events", "-o", out, str(work / "train.py"), cwd=str(work))
    assert run.returncode == 0, run.stderr
    assert run.stdout == alone.stdout  # no name of nnprofile's in the program's modules
    assert sorted(os.listdir(str(work))) == ["helper.py", "train.py"]
    capture = capture_file.load(os.path.join(out, "events.json.gz"))
    # (helper.forward(loss) is noted too, and holds loss.forward(): the outer call stands for the pass)
    calls = capture.pass_calls
    outer = [c for c in calls if not any(o[0] <= c[0] and c[1] <= o[1] and o != c for o in calls)]
    phases = [ph for _, _, ph, _ in outer]
    # its first step, the kept ones and those without the hooks, of its 60
    assert phases.count("forward") == phases.count("backward") >= 1 + Schedule.active + len(CALIBRATION)
    assert len(calls) - len(outer) == phases.count("forward")
    assert all(start < end for start, end, _, _ in capture.pass_calls)
    with open(os.path.join(out, "profile.log"), encoding="utf-8") as f:
        assert "backward and forward passes to the time of the program's own calls of them" in f.read()


def test_nnprofile_does_not_compile_itself_so():
    assert ROOT  # (the package's own folder is never the program's)
    assert not passtimes.own_file(os.path.join(ROOT, "nnprofile", "api", "launch.py"), ROOT)


def test_modules_under_a_folder_on_the_path_that_holds_the_scripts_are_the_programs_own(tmp_path, monkeypatch):
    """A script in proj/scripts/train that puts proj on the path (``sys.path.append("../..")``) imports its shared
    modules from there: they are the program's own; a module in a folder beside the project is not, nor is one
    found through the file system's root on the path."""
    proj, other = tmp_path / "proj", tmp_path / "other"
    (proj / "scripts" / "train").mkdir(parents=True)
    other.mkdir()
    (proj / "shared_steps.py").write_text("def forward(loss):\n    loss.forward()\n")
    (other / "beside_steps.py").write_text("x = 1\n")
    finder = passtimes.Finder(str(proj / "scripts" / "train"))
    monkeypatch.setattr(sys, "path", [str(proj / "scripts" / "train"), os.sep] + sys.path)
    assert finder.find_spec("shared_steps") is None  # not on the path yet
    sys.path.append(str(proj / "scripts" / "train" / ".." / ".."))
    sys.path.append(str(other))
    spec = finder.find_spec("shared_steps")
    assert spec is not None and type(spec.loader).__name__ == "_Loader"
    assert finder.find_spec("beside_steps") is None
