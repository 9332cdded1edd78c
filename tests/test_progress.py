"""Progress bars: on a terminal's stderr only, not with -q, not on a rank other than 0 under MPI, and the
log on stdout the same either way."""

import pytest
import fcntl
import os
import pty
import struct
import termios
import subprocess
import sys
import threading

from conftest import LENET, ROOT
from nnprofile.cli.progress import Progress


def _run(args, terminal=True, env=None):
    """python -m nnprofile with stdout piped and stderr a pseudo-terminal (or a pipe); (proc, stdout, stderr)."""
    cmd = [sys.executable, "-m", "nnprofile", *args]
    environment = dict(os.environ, **(env or {}))
    if not terminal:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=environment, timeout=600)
        return proc, proc.stdout, proc.stderr
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal of 100 columns
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=slave, env=environment)
    os.close(slave)
    seen = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    out, _ = proc.communicate(timeout=600)
    reader.join(timeout=10)
    os.close(master)
    return proc, out.decode(), b"".join(seen).decode(errors="replace")


@pytest.mark.slow
def test_a_terminal_sees_a_bar_per_section_and_the_log_is_unchanged(tmp_path):
    proc, out, err = _run([LENET, "--synthetic", "--runs", "3", "-o", str(tmp_path / "tty")])
    assert proc.returncode == 0, err
    assert "measuring optimizer 'Optimizer'" in err and "measuring executor 'Executor'" in err and "%|" in err
    assert out.startswith((tmp_path / "tty" / "profile.log").read_text())  # stdout is the log
    assert "\r" not in out and "%|" not in out  # nothing of the bar on stdout
    piped, out2, err2 = _run([LENET, "--synthetic", "--runs", "3", "-o", str(tmp_path / "pipe")], terminal=False)
    assert piped.returncode == 0 and "measuring" not in err2 and "%|" not in err2
    # The same lines on stdout, terminal or not (their figures differ from run to run).
    strip = lambda text: [line.rsplit(" ", 1)[0] for line in text.splitlines() if "(ms)" in line]  # noqa: E731
    assert strip(out) == strip(out2)


@pytest.mark.slow
def test_quiet_and_ranks_but_the_first_draw_nothing(tmp_path):
    _, _, err = _run([LENET, "--synthetic", "--runs", "2", "-q", "-o", str(tmp_path / "q")])
    assert "%|" not in err and "measuring" not in err
    _, _, err = _run(
        [LENET, "--synthetic", "--runs", "2", "-q", "-o", str(tmp_path / "r")],
        env={"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
    )
    assert "%|" not in err
    _, out, err = _run(
        [LENET, "--synthetic", "--runs", "2", "-o", str(tmp_path / "r1")],
        env={"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
    )
    assert "%|" not in err and "Profile Completed." in out


@pytest.mark.slow
def test_repeat_shows_its_fresh_processes(tmp_path):
    proc, out, err = _run(
        [LENET, "--synthetic", "--runs", "2", "--repeat", "2", "--no-inference", "-o", str(tmp_path / "rep")]
    )
    assert proc.returncode == 0, err
    assert "runs:" in err and "/2" in err


class _Terminal:
    def __init__(self):
        self.text = []

    def isatty(self):
        return True

    def write(self, s):
        self.text.append(s)

    def flush(self):
        pass


def test_the_bar_follows_the_sampling_and_lines_clear_it():
    stream = _Terminal()
    p = Progress.for_terminal(False, stream)
    assert p.enabled

    class S:
        title = "optimizer 'Optimizer' with network 'Main'"

    p.section(S())
    p.round(S(), 0.5)
    assert p._bar.n == 50
    with p.writing():
        pass
    p.round(S(), 1.0)
    p.section_end(S())
    assert p._bar is None and "measuring optimizer" in "".join(stream.text)
    assert not Progress.for_terminal(True, stream).enabled  # -q
    assert not Progress.for_terminal(False, open(os.devnull, "w")).enabled  # not a terminal
