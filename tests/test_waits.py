"""A wait of the program's own (a sleep, a blocking read, a lock) is charged to the line that waited: the sampler
counts CPU time, and a thread of nnprofile's finds where the program's thread is blocked
(``nnprofile.recording.waitwatch``). Its figures are judged against the program's own clock, never nnprofile's."""

import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

import nnprofile
from conftest import ROOT
from nnprofile.analysis import analyze
from nnprofile.analysis.ownlines import own_lines
from nnprofile.recording.building import Builds
from nnprofile.recording.waitwatch import MIN_BLOCKED_NS, WaitWatch
from nnprofile.recording.window import Window
from nnprofile.result.details import SampledLine, SectionInfo


def _recorder():
    return SimpleNamespace(
        open_calls=[],
        capturing=True,
        window=Window(),
        program_thread=threading.get_ident(),
        builds=Builds(time.perf_counter_ns, lambda: 0, lambda: True, ()),
    )


def test_a_look_charges_a_mostly_blocked_stretch_to_the_line_the_thread_is_on():
    r = _recorder()
    watch = WaitWatch(r, lambda frame: 7)
    # (wall, CPU, run-queue delay): 1 ms blocked of 1.1 ms, 0.1 ms of it on the CPU
    assert watch._look((0, 0, 0), (1_100_000, 100_000, 0))
    assert r.window.blocked == [(1_100_000, 7, 1_000_000)]
    # waiting for a CPU (other work's, the interference's) is no wait of the program's
    assert not watch._look((0, 0, 0), (1_000_000, 0, 1_000_000 - MIN_BLOCKED_NS // 2))
    # blocked for under half of it: a wait that ended since is some earlier line's; looked at again soon
    assert watch._look((0, 0, 0), (1_000_000, 700_000, 0)) and len(r.window.blocked) == 1
    r.open_calls.append(("a pass", 0))  # inside a call nnprofile times: the call's own time, looked at seldom
    assert not watch._look((0, 0, 0), (1_000_000, 0, 0)) and len(r.window.blocked) == 1


def test_a_wait_that_ended_before_the_look_is_no_wait_of_the_line_it_is_on_now():
    """Looks 2.5 ms apart: a 2 ms sleep can begin and end between two of them; the thread runs the next line at the
    look (its state in /proc), and that line is not charged the sleep."""
    r = _recorder()
    watch = WaitWatch(r, lambda frame: 8)
    watch._blocked_now = lambda: False
    assert not watch._look((0, 0, 0), (2_500_000, 500_000, 0)) and r.window.blocked == []
    watch._blocked_now = lambda: True
    assert watch._look((0, 0, 0), (2_500_000, 500_000, 0)) and r.window.blocked == [(2_500_000, 8, 2_000_000)]


def test_a_lines_wait_is_its_own_and_the_samples_share_what_is_left():
    info = SectionInfo()
    info.own_samples = 40
    info.own_lines = [
        SampledLine("t.py:8", "main", "b = svd(a)", 24, 0.05),
        SampledLine("t.py:7", "main", "time.sleep(0.002)", 2, 1.9),
        SampledLine("t.py:6", "main", "x.d = rng.rand()", 14),
    ]
    lines = own_lines(info, 4.0)
    assert [l.where for l in lines] == ["t.py:7", "t.py:8", "t.py:6"]
    ran = 4.0 - 1.95  # what the waits leave, shared by the samples
    assert lines[0].ms == pytest.approx(1.9 + ran * 2 / 40, abs=1e-6) and lines[0].waited_ms == pytest.approx(1.9)
    assert sum(l.ms for l in lines) <= 4.0 and lines[0].share_low <= lines[0].share <= lines[0].share_high
    assert own_lines(info, 1.0)[0].ms <= 1.0  # waits found beyond other: shared out to fit it


def test_a_sampled_line_keeps_its_wait_in_result_json():
    line = SampledLine("t.py:7", "main", "time.sleep(0.002)", 2, 1.9)
    assert SampledLine.from_json(line.to_json()) == line
    assert SampledLine.from_json(["t.py:6", "main", "x", 3]).waited_ms == 0.0  # (version 13's four items)


PROGRAM = """
import time
import numpy as np, nnabla as nn, nnabla.functions as F, nnabla.parametric_functions as PF, nnabla.solvers as S
x = nn.Variable((16, 32))
loss = F.mean(PF.affine(F.relu(PF.affine(x, 64, name="a")), 1, name="b"))
solver = S.Sgd()
solver.set_parameters(nn.get_parameters())
slept = []
for i in range(40):
    x.d = np.random.randn(16, 32)
    t0 = time.perf_counter()
    time.sleep(0.004)
    slept.append(time.perf_counter() - t0)
    total = sum(np.sqrt(np.arange(2000.0)))
    loss.forward(); solver.zero_grad(); loss.backward(); solver.update()
print("slept", sum(slept[1:21]) / 20 * 1e3)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the program's thread's CPU clock and schedstat")
def test_a_sleep_in_the_loop_is_charged_to_its_own_line(tmp_path):
    (tmp_path / "sleepy.py").write_text(PROGRAM)
    proc = subprocess.run(
        [sys.executable, "-m", "nnprofile", "run", "-q", "-o", "out", "sleepy.py"],
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    assert proc.returncode == 0, proc.stderr
    slept = float(proc.stdout.split()[-1])  # the program's own clock: what a sleep of 4 ms took (its steps 2 to 21)
    step = analyze(nnprofile.load(tmp_path / "out")).sections[-1].step
    first = step.own_lines[0]
    assert first.text == "time.sleep(0.004)" and first.waited_ms > 0.5 * slept  # (a wait's start is seen late)
    assert first.waited_ms <= 1.1 * slept  # never more than the sleep took, beyond the readings' own noise
    others = [l for l in step.own_lines[1:] if l.waited_ms > 0.2 * slept]
    assert not others, others  # the line after it is not charged the wait
