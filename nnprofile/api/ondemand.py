"""Capture on demand: a window of a running training, asked for from another shell.

``nnprofile run --on-demand`` runs the program untouched (only the light wrappers that count its
steps) and listens for a signal (SIGUSR1, or ``--signal``): each time it comes, the next steps are
recorded as a window and written (``OUTDIR/window-K``), as many times as asked. The process keeps a
small status file in its output folder (``on-demand.json``: its pid, its signal, its windows so far,
whether the program has put a handler of its own in place of nnprofile's), which ``capture`` reads:

    nnprofile capture PID            # the signal, to a process started with nnprofile run --on-demand
    nnprofile capture PID --rank 1   # under mpirun (PID: mpirun's), one rank; else every rank

``mpirun`` passes SIGUSR1 and SIGUSR2 on to every rank of its job. A launcher is signalled only where a
listening rank's own status (``OUTDIR/rank-R/on-demand.json``) names it among the rank's ancestors, and it is
one still; a rank alone (``--rank``) is signalled by the pid its status gives. No other signal than USR1 and
USR2 is sent, and no process is trusted by its name.
"""

from __future__ import annotations

import json
import os
import signal as signals
import sys
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

from ..base import signals as owned
from ..base.errors import ProfileError
from ..base.schedule import STATUS_FILE, WINDOW_SIGNALS
from ..base.outdir import LOCK_NAME, write_whole

STATUS = STATUS_FILE


def signal_number(name: str) -> int:
    """SIGUSR1 or SIGUSR2: no other signal asks for a window (a program or its launcher depends on the rest)."""
    name = name.upper()
    name = name[3:] if name.startswith("SIG") else name
    if name not in WINDOW_SIGNALS:
        raise ProfileError("signal %s cannot ask for a window (use USR1 or USR2)" % name[:20])
    return int(getattr(signals, "SIG" + name))


def ancestors(pid: int) -> List[int]:
    """The pids above ``pid``, its parent first, up to init (what a launcher's capture is checked against)."""
    out: List[int] = []
    while pid > 1 and len(out) < 64:
        try:
            stat = _proc(pid, "stat").decode(errors="replace")
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 0:
            break
        out.append(pid)
    return out


class Listener:
    """The signal handler of an on-demand run: it only asks the recorder for a window (safe in a handler)."""

    def __init__(
        self,
        ask: Callable[[], None],
        signal_name: str,
        folder: Optional[str],
        progress: Callable[[str], None] = lambda line: None,
    ):
        self.ask, self.name, self.folder, self.progress = ask, signal_name.upper(), folder, progress
        self.number = signal_number(signal_name)
        self.previous: Any = None
        self.windows = 0
        self.replaced = False
        self.token = uuid.uuid4().hex  # marks this run as listening: capture checks it with the pid

    def install(self) -> None:
        self.previous = owned.take(self.number, self._handle)
        self.write()
        self.progress(
            "nnprofile: waiting for SIG%s (nnprofile capture %d) to record a window" % (self.name, os.getpid())
        )

    def _handle(self, number: int, frame: Any) -> None:
        self.ask()

    def check(self) -> None:
        """Whether the program put a handler of its own in place of this one: said once, and in the status."""
        if self.replaced or signals.getsignal(self.number) == self._handle:
            return
        self.replaced = True
        print(
            "nnprofile: warning: the program installed its own SIG%s handler: nnprofile capture cannot reach it "
            "(start it with --signal USR2, or another signal it leaves alone)" % self.name,
            file=sys.stderr,
        )
        self.write()

    def window_written(self) -> None:
        self.windows += 1
        self.write()

    def write(self) -> None:
        """The status file ``capture`` reads: this process, the token that marks it as listening, its signal."""
        if self.folder is None:
            return
        try:
            write_whole(
                os.path.join(self.folder, STATUS),
                json.dumps(
                    {
                        "pid": os.getpid(),
                        "token": self.token,
                        "signal": self.name,
                        "windows": self.windows,
                        "handler": "replaced by the program" if self.replaced else "nnprofile",
                        "ancestors": ancestors(os.getpid()),
                    }
                ),
            )
        except OSError as e:  # a full disk: the program goes on, the capture will say it cannot find the status
            print("nnprofile: warning: %s could not be written (%s)" % (STATUS, e.strerror or e), file=sys.stderr)

    def uninstall(self) -> None:
        if not self.replaced and self.previous is not None:
            owned.give_back(self.number, self.previous)


# -- the other side: nnprofile capture PID -------------------------------------------------------


def _proc(pid: int, name: str) -> bytes:
    with open("/proc/%d/%s" % (pid, name), "rb") as f:
        return f.read()


def _cmdline(pid: int) -> List[str]:
    try:
        return [a.decode(errors="replace") for a in _proc(pid, "cmdline").split(b"\0") if a]
    except FileNotFoundError:
        raise ProfileError("no process %d" % pid)
    except PermissionError:
        raise ProfileError("process %d cannot be read (another user's)" % pid)


def _outdir(argv: List[str], cwd: str) -> Optional[str]:
    """The output folder an ``nnprofile run`` command line writes to (its -o, else results/<name>)."""
    if "run" not in argv:
        return None
    rest = argv[argv.index("run") + 1 :]
    for i, arg in enumerate(rest):
        if arg in ("-o", "--outdir") and i + 1 < len(rest):
            return os.path.join(cwd, rest[i + 1])
        if arg.startswith("--outdir="):
            return os.path.join(cwd, arg.split("=", 1)[1])
        if arg == "-m" and i + 1 < len(rest):
            return os.path.join(cwd, "results", rest[i + 1].rsplit(".", 1)[-1])
        if arg.endswith(".py"):
            return os.path.join(cwd, "results", os.path.splitext(os.path.basename(arg))[0])
    return None


def launches(pid: int, rank_pid: int, status: Dict[str, Any]) -> bool:
    """Whether ``pid`` launched the listening process ``rank_pid``: the status it wrote names ``pid`` among its
    ancestors, and it is one still (a pid reused since is not)."""
    recorded = status.get("ancestors")
    return isinstance(recorded, list) and pid in recorded and pid in ancestors(rank_pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def holds_lock(pid: int, folder: str) -> bool:
    """Whether process ``pid`` holds the lock of an nnprofile run on ``folder`` open (its own run's folder)."""
    lock = os.path.realpath(os.path.join(folder, LOCK_NAME))
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.path.realpath(os.readlink("/proc/%d/fd/%s" % (pid, fd))) == lock:
                return True
        except OSError:
            continue
    return False


def listening(status: Dict[str, Any], pid: int, folder: str) -> bool:
    """A process that an --on-demand run marked as listening: the status file names it with a token, and it holds
    its output folder's lock. Its command line alone is never enough."""
    return status.get("pid") == pid and bool(status.get("token")) and holds_lock(pid, folder)


def _status(folder: Optional[str], pid: int, launched: bool, wait_s: float) -> Dict[str, Any]:
    """The process's status file, once it listens (it writes the file as its handler is set: a signal
    before that would end it); one from an earlier run (another pid, gone) is not it."""
    if folder is None:
        raise ProfileError("process %d is no nnprofile run --on-demand: no output folder to find its status in" % pid)
    path = os.path.join(folder, STATUS)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                status = json.load(f)
            if status.get("pid") == pid or _alive(int(status.get("pid", 0))):  # a run going on: capture judges it
                return status
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline or not _alive(pid):
            raise ProfileError(
                "process %d does not listen for a capture yet (no %s from it): nnprofile run "
                "--on-demand writes it as it starts" % (pid, path)
            )
        time.sleep(0.05)


def capture(pid: int, signal_name: Optional[str] = None, rank: Optional[int] = None, wait_s: float = 60.0) -> str:
    """Ask a process started with ``nnprofile run --on-demand`` for a window: sends it its signal (to one
    rank, or through its launcher to all); returns where the window will go. Signals only a process that a
    listening run's status names with its token while it holds its folder's lock, or the launcher that status
    records among its ancestors and that is still one (never a process by its name); refuses one whose program
    replaced nnprofile's handler; waits up to ``wait_s`` for a process just started to listen."""
    argv = _cmdline(pid)
    if "--on-demand" not in argv:
        raise ProfileError(
            "process %d was not started with nnprofile run --on-demand: nothing in it listens "
            "for a capture (%s)" % (pid, " ".join(argv)[:120])
        )
    try:
        cwd = os.readlink("/proc/%d/cwd" % pid)
    except OSError:
        cwd = "."
    outdir = _outdir(argv, cwd)
    if outdir is None:
        raise ProfileError("process %d is no nnprofile run --on-demand: no output folder to find its status in" % pid)
    launched = not os.path.isfile(os.path.join(outdir, STATUS)) and os.path.isdir(os.path.join(outdir, "rank-0"))
    folder = os.path.join(outdir, "rank-%d" % (rank or 0)) if launched else outdir
    if rank is not None and not launched:
        raise ProfileError("process %d is not a launcher (mpirun, srun): --rank names one of a launcher's ranks" % pid)
    status = _status(folder, pid, launched, wait_s)
    name = signal_name or status.get("signal") or "USR1"
    number = signal_number(name)
    if status.get("handler", "nnprofile") != "nnprofile":
        raise ProfileError(
            "the program in process %d installed its own SIG%s handler: a capture would reach the "
            "program, not nnprofile (start it with --signal USR2)" % (pid, name.upper())
        )
    rank_pid = int(status.get("pid") or 0)
    if not listening(status, rank_pid, folder):
        raise ProfileError(
            "process %d does not listen for a capture: no status of an --on-demand run with its pid "
            "and token in %s, or it does not hold that folder (no signal sent)" % (rank_pid, folder)
        )
    if launched and not launches(pid, rank_pid, status):
        raise ProfileError(
            "process %d is not the launcher of the run in %s: that run's own record does not name it "
            "among its ancestors (no signal sent)" % (pid, folder)
        )
    if not launched and rank_pid != pid:
        raise ProfileError("process %d is not the run in %s (no signal sent)" % (pid, folder))
    os.kill(rank_pid if launched and rank is not None else pid, number)
    where = "%s/window-%d" % (folder, int(status.get("windows", 0)) + 1) if folder else "its output folder"
    if launched and rank is None:
        where = "%s/rank-K/window-%d (every rank)" % (outdir, int(status.get("windows", 0)) + 1)
    return where
