"""A rank ended by SIGTERM still writes what it recorded.

When one rank dies, ``mpirun`` ends every other rank with SIGTERM, and SIGKILL
about a second later (Slurm does the same at a job's time limit, after its
KillWait). The other ranks are then usually blocked inside a collective,
waiting for the dead one, in C code where Python runs no signal handler. So the
signal is seen by a thread of ours: Python's C-level handler writes the signal's
number to a pipe (``signal.set_wakeup_fd``) from whichever thread the signal
lands in, and a watcher thread reading that pipe calls ``on_term`` (which
writes the result) and ends the process with the status a SIGTERM gives (143).
The main thread, blocked in MPI, never has to return.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Optional

from ..base import signals as owned

STATUS = 128 + signal.SIGTERM


class TerminationGuard:
    def __init__(self, on_term: Callable[[], None]):
        self.on_term = on_term
        self._lock = threading.Lock()
        self._claimed = False
        self._active = False
        self._previous_handler: Any = None
        self._previous_fd = -1
        self._read = self._write = -1

    def __enter__(self) -> "TerminationGuard":
        if threading.current_thread() is not threading.main_thread():
            return self  # signals can be set up in the main thread only: no guard
        try:
            self._read, self._write = os.pipe()
            os.set_blocking(self._write, False)
            self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
            self._previous_handler = owned.take(signal.SIGTERM, _noticed)
        except (OSError, ValueError):
            self._close()
            return self
        self._active = True
        threading.Thread(target=self._watch, name="nnprofile-sigterm", daemon=True).start()
        return self

    def claim(self) -> bool:
        """The normal end: from now on a SIGTERM leaves the writing to it. False if a SIGTERM got there first."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                data = b""
            if not data:  # the write end closed: the guard is over
                os.close(self._read)
                return
            if signal.SIGTERM in data and self.claim():
                try:
                    self.on_term()
                finally:
                    os._exit(STATUS)

    def __exit__(self, *exc: Any) -> None:
        if not self._active:
            return
        self._active = False
        try:
            signal.set_wakeup_fd(self._previous_fd)
            owned.give_back(signal.SIGTERM, self._previous_handler)
        except (OSError, ValueError):
            pass
        os.close(self._write)  # the watcher reads the end of the pipe, closes it and ends

    def _close(self) -> None:
        for fd in (self._write, self._read):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1


def _noticed(signum: int, frame: Optional[Any]) -> None:
    """The Python-level handler: nothing to do here (the main thread may never get to run it);
    its being set makes the C-level handler write to the wakeup pipe."""
