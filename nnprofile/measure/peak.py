"""The memory a project's step really takes: the process's (or the GPU's) memory over one step.

- on the CPU, how much the bytes NNabla's allocator holds grow over one step
  (glibc's mallinfo2, read after every function), NNabla's memory cache
  cleared first; else the growth of the peak resident memory (Linux: reset
  through /proc/self/clear_refs);
- under CUDA, the device's used memory read after every function through NVML
  (``nnabla.utils.nvml``), the device synchronised first;
- what this process may still use (its address-space limit, its cgroup, or MemAvailable),
  to explain running out of memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any, Callable, List, Optional, Tuple


def _status(field_name: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_in_use() -> Optional[Callable[[], int]]:
    """glibc's count of bytes in use (heap and mmap'd blocks), or None where it cannot be read."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2

    def in_use() -> int:
        info = mallinfo2()
        return int(info.uordblks + info.hblkhd)

    return in_use


def device_reader(backend: str, device_id: str) -> Optional[Tuple[Callable[[], int], Callable[[], None]]]:
    """(used bytes of the GPU, clear the extension's memory cache), or None without a readable device.

    The used memory comes from NVML through NNabla's own binding (``nnabla.utils.nvml``);
    the cache is cleared through the extension module (``clear_memory_cache``).
    """
    try:
        from nnabla.ext_utils import import_extension_module
        from nnabla.utils import nvml

        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByIndex(int(device_id))
        ext = import_extension_module(backend)
    except Exception:  # no NVML, no such device, no extension: not measured
        return None
    return (lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).used)), ext.clear_memory_cache


def measure_device_step(
    run_step: Callable[[Optional[Callable[[Any], None]]], None],
    used: Callable[[], int],
    clear: Callable[[], None],
    sync: Optional[Callable[[], None]],
) -> Tuple[Optional[int], str]:
    """The highest the GPU's used memory rises over one step (read after every function, the
    device synchronised first), from a cleared memory cache."""
    clear()
    if sync is not None:
        sync()
    base = used()
    readings: List[int] = []

    def read(f: Any) -> None:
        if sync is not None:
            sync()
        readings.append(used())

    run_step(read)
    read(None)
    return max(0, max(readings) - base), (
        "the highest that the device's used memory (NVML, read after every "
        "function with the device synchronised) rose over one step, from a "
        "cleared CUDA memory cache"
    )


def measure_step(run_step: Callable[[Optional[Callable[[Any], None]]], None]) -> Tuple[Optional[int], str]:
    """The highest the memory NNabla holds climbs during one step, from a cleared memory cache.

    ``run_step(post_hook)`` runs one step with ``post_hook`` as the function post-hook of its
    passes. glibc's bytes in use (mallinfo2) are read after every function: NNabla's CPU
    arrays come from malloc, and its memory cache keeps what it frees, so the highest
    reading less the one before the step is the step's peak. Without mallinfo2, the growth
    of the process's peak resident memory (VmHWM, reset through /proc/self/clear_refs).
    """
    import nnabla._init as nnabla_init

    nnabla_init.clear_memory_cache()
    in_use = _malloc_in_use()
    if in_use is not None:
        readings: List[int] = []
        base = in_use()
        run_step(lambda f: readings.append(in_use()))
        readings.append(in_use())
        return max(0, max(readings) - base), (
            "the highest that the bytes in use by the allocator (glibc "
            "mallinfo2, read after every function) rose over one step, "
            "from a cleared NNabla memory cache"
        )
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS to the current RSS
    except OSError:
        return None, "not measured: neither mallinfo2 nor a resettable peak RSS on this system"
    base_rss = _status("VmRSS:")
    run_step(None)
    peak = _status("VmHWM:")
    if base_rss is None or peak is None:
        return None, "not measured: /proc/self/status is not readable"
    return max(0, peak - base_rss), (
        "growth of the process's peak resident memory over one step, from a "
        "cleared NNabla memory cache (VmHWM reset through /proc/self/clear_refs)"
    )


def available_memory() -> Tuple[Optional[int], str]:
    """What this process may still use: its RLIMIT_AS, else the cgroup's memory.max, else MemAvailable."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        used = _status("VmSize:") or 0
        return max(0, soft - used), "the process's address-space limit (RLIMIT_AS) less what it uses"
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            text = f.read().strip()
        if text != "max":
            with open("/sys/fs/cgroup/memory.current") as f:
                current = int(f.read().strip())
            return max(0, int(text) - current), "the cgroup's memory.max less its current use"
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable"
    except OSError:
        pass
    return None, "unknown"
