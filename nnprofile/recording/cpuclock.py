"""A signal every ``period`` of one thread's CPU time, at the resolution of the CPU clock (Linux ``perf_event_open``).

The profiling timer (``setitimer(ITIMER_PROF)``) counts CPU time at the kernel's tick: on a kernel of 250 Hz it
fires every 4 ms, whatever it was asked for, and a window of 20 short steps holds a handful of its samples. The
kernel's software event ``task-clock`` counts a thread's CPU time on a high-resolution timer instead: set to
overflow every ``period`` ns and to signal its thread on each overflow (``O_ASYNC``, ``F_SETSIG``,
``F_SETOWN_EX``), it fires at the period asked for, only while the thread runs (a machine busy with other work
delays it, never fills it). Each overflow disables the event until ``rearm`` (``PERF_EVENT_IOC_REFRESH``), so
that overflows never pile up behind a handler that has not run yet.

Where the kernel refuses the event (``perf_event_paranoid`` 3, a container whose seccomp filter blocks the call,
another system than Linux on x86-64 or ARM64), ``open_cpu_clock`` returns None and the sampler keeps the
profiling timer. Counting the kernel's time too (a line that reads a file) needs ``perf_event_paranoid`` 1 or
less, or root; where only the thread's own user time may be counted, that is what is counted.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import struct
import sys
from typing import Any, Optional

# perf_event_open's number by machine (it has no C library wrapper).
_SYSCALL = {"x86_64": 298, "aarch64": 241, "arm64": 241}
_SOFTWARE, _TASK_CLOCK = 1, 1
_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6
_IOC_DISABLE, _IOC_REFRESH, _IOC_PERIOD = 0x2401, 0x2402, 0x40082404
_F_SETSIG, _F_SETOWN_EX, _F_OWNER_TID = 10, 15, 0


class _Attr(ctypes.Structure):
    """``struct perf_event_attr`` up to its version 5 (112 bytes), as the kernel reads it."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32),
        ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64),
        ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16),
        ("reserved", ctypes.c_uint16),
    ]


class CpuClock:
    """An open ``task-clock`` event of one thread that signals it every ``period_ns`` of its CPU time."""

    def __init__(self, fd: int):
        self.fd = fd

    def rearm(self) -> None:
        """One more overflow: the signal's handler calls this once it has taken its sample."""
        fcntl.ioctl(self.fd, _IOC_REFRESH, 1)

    def set_period(self, period_ns: int) -> None:
        """The CPU time between signals from the next one on."""
        fcntl.ioctl(self.fd, _IOC_PERIOD, struct.pack("Q", period_ns))

    def close(self) -> None:
        """Disabled and closed: no signal comes after this returns."""
        try:
            fcntl.ioctl(self.fd, _IOC_DISABLE, 0)
        finally:
            os.close(self.fd)


def _open(period_ns: int, tid: int, flags: int) -> int:
    number = _SYSCALL.get(platform.machine())
    if number is None or not sys.platform.startswith("linux"):
        return -1
    attr = _Attr(
        type=_SOFTWARE,
        size=ctypes.sizeof(_Attr),
        config=_TASK_CLOCK,
        sample_period=period_ns,
        flags=flags,
        wakeup_events=1,
    )
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return int(
        libc.syscall(
            ctypes.c_long(number),
            ctypes.byref(attr),
            ctypes.c_int(tid),
            ctypes.c_int(-1),
            ctypes.c_int(-1),
            ctypes.c_ulong(0),
        )
    )


def open_cpu_clock(period_ns: int, signal_number: int, tid: Optional[int] = None) -> Optional[CpuClock]:
    """The thread ``tid`` (this one by default) signalled with ``signal_number`` every ``period_ns`` of its CPU
    time, counting the kernel's time on its behalf where allowed, else its user time; None where the kernel
    refuses. The caller sets the signal's handler first and calls ``rearm`` once to start."""
    tid = tid if tid is not None else _native_id()
    for flags in (_DISABLED, _DISABLED | _EXCLUDE_KERNEL | _EXCLUDE_HV):  # the kernel's time too, where allowed
        try:
            fd = _open(period_ns, tid, flags)
        except Exception:
            return None
        if fd < 0:
            continue
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, os.O_ASYNC)
            fcntl.fcntl(fd, _F_SETSIG, signal_number)
            fcntl.fcntl(fd, _F_SETOWN_EX, struct.pack("ii", _F_OWNER_TID, tid))
        except Exception:
            os.close(fd)
            return None
        return CpuClock(fd)
    return None


def _native_id() -> Any:
    import threading

    return threading.get_native_id()
