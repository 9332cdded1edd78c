"""Memory: what each layer holds, the step's estimated and measured peak, what fits.

NNabla's Python API has no call for allocated or peak bytes on the CPU, so:

- per layer, the bytes of its outputs, parameters, their gradients and the
  gradients it writes for its inputs, in the dtype that really ran;
- the estimated peak follows the buffers' lifetimes in execution order under
  NNabla's release rules: in a training forward (``clear_no_need_grad``) a
  buffer is released after its last reader unless a backward needs its data;
  in backward (``clear_buffer``) gradients are released once consumed and data
  after the last function that needs it; in inference (``clear_buffer``) after
  the last reader. In-place outputs share their input's buffer. Parameters,
  their gradients and the solver's state stay for the whole step;
- the measured peak is how much the process's resident memory grows over one
  step, NNabla's memory cache cleared first (Linux: the peak RSS is reset
  through /proc/self/clear_refs). Under CUDA, the device's used memory is read
  at the phase boundaries through nnabla-ext-cuda instead.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np


def nbytes(variable: Any, itemsize: Optional[int] = None) -> int:
    size = math.prod(variable.shape) if variable.shape else 1  # math.prod: np.prod costs microseconds a call
    if itemsize is None:
        try:
            itemsize = int(np.dtype(variable.data.dtype).itemsize)
        except Exception:  # not allocated yet: NNabla's default float
            itemsize = 4
    return size * itemsize


@dataclass(frozen=True)
class LayerMemory:
    output_bytes: int
    parameter_bytes: int
    gradient_bytes: int        # of its parameters
    input_gradient_bytes: int  # the gradients it writes for its other inputs


def layer_memory(function: Any, parameters: frozenset, itemsize: int) -> LayerMemory:
    inputs, outputs = list(function.inputs), list(function.outputs)
    params = [v for v in inputs if v in parameters]
    return LayerMemory(
        output_bytes=sum(nbytes(v, itemsize) for v in outputs),
        parameter_bytes=sum(nbytes(v) for v in params),
        gradient_bytes=sum(nbytes(v) for v in params if v.need_grad),
        input_gradient_bytes=sum(nbytes(v, itemsize) for v in inputs if v not in parameters and v.need_grad))


@dataclass
class Estimate:
    """The live activation bytes along a step, from the buffers' lifetimes."""

    curve: List[Tuple[str, str, int]] = field(default_factory=list)  # (layer, phase, live bytes after it)
    peak: int = 0
    peak_layer: str = ""
    peak_phase: str = ""
    alive_at_peak: List[Tuple[str, int]] = field(default_factory=list)


def _needs_grad(function: Any) -> bool:
    return any(v.need_grad for v in function.inputs)


def _data_needed_in_backward(functions: Sequence[Any]) -> set:
    """Variables whose data some function's backward reads."""
    needed = set()
    for f in functions:
        if not _needs_grad(f):
            continue
        inputs, outputs = list(f.inputs), list(f.outputs)
        for i, v in enumerate(inputs):
            if not v.need_grad:
                continue
            for depends, variables in ((f.grad_depends_input_data, inputs), (f.grad_depends_output_data, outputs)):
                for j, w in enumerate(variables):
                    try:
                        if depends(i, j):
                            needed.add(w)
                    except Exception:  # not said: keep it (the estimate errs on the safe side)
                        needed.add(w)
    return needed


def estimate(functions: Sequence[Any], names: Sequence[str], parameters: frozenset, itemsize: int,
             training: bool) -> Estimate:
    """Simulate one forward (and, training, one backward) pass; ``functions`` in forward order."""
    est = Estimate()
    live: Dict[Any, Tuple[str, int]] = {}
    consumers: Dict[Any, int] = {}
    for i, f in enumerate(functions):
        for v in f.inputs:
            consumers[v] = i
    produced = {v for f in functions for v in f.outputs}
    needed = _data_needed_in_backward(functions) if training else set()
    finals = {v for v in produced if v not in consumers}

    def record(layer: str, phase: str, buffers: Dict[Any, Tuple[str, int]]) -> None:
        total = sum(b for _, b in buffers.values())
        est.curve.append((layer, phase, total))
        if total > est.peak:
            est.peak, est.peak_layer, est.peak_phase = total, layer, phase
            est.alive_at_peak = sorted(buffers.values(), key=lambda x: -x[1])[:10]

    for v in consumers:  # the data fed in: the input batch
        if v not in produced and v not in parameters:
            live[v] = ("input %s" % "x".join(str(d) for d in v.shape), nbytes(v, itemsize))
    for i, (f, name) in enumerate(zip(functions, names)):
        outputs = list(f.outputs)
        for o, v in enumerate(outputs):
            shared = False
            try:
                shared = f.inplace_data(o) != 0
            except Exception:
                pass
            live[v] = ("%s output" % name, 0 if shared else nbytes(v, itemsize))
        record(name, "forward", live)
        for v in list(f.inputs):
            if consumers.get(v) == i and v in produced and v not in needed and v not in finals:
                live.pop(v, None)
    if not training:
        return est
    grads: Dict[Any, Tuple[str, int]] = {}
    remaining_need: Dict[Any, int] = {}
    backward = [(f, n) for f, n in zip(functions, names) if _needs_grad(f)][::-1]
    for k, (f, _) in enumerate(backward):
        for v in list(f.inputs) + list(f.outputs):
            if v in needed:
                remaining_need[v] = k
    for v in finals:
        grads[v] = ("gradient of the loss", nbytes(v, itemsize))
    for k, (f, name) in enumerate(backward):
        for v in f.inputs:
            if v.need_grad and v not in parameters and v not in grads:
                grads[v] = ("%s input gradient" % name, nbytes(v, itemsize))
        both = dict(live)
        both.update({("grad", key): value for key, value in grads.items()})
        record(name, "backward", both)
        for v in f.outputs:  # consumed
            grads.pop(v, None)
        for v in list(live):
            if remaining_need.get(v, -1) <= k and v in produced and v not in finals:
                live.pop(v, None)
    return est


def step_memory(functions: Sequence[Any], names: Sequence[str], parameters: Sequence[Any], itemsize: int,
                training: bool, solver_state: int, measured: str = "") -> Dict[str, Any]:
    """A section's ``memory``: what stays for the whole step, and the activations estimated along it.

    ``functions`` run in forward order and are named by ``names``; ``parameters`` are those
    of the step (their gradients count when ``training``). The batch size is read off the
    first input the functions are fed.
    """
    known = frozenset(parameters)
    est = estimate(functions, names, known, itemsize, training)
    fixed = {"parameters": sum(nbytes(p) for p in parameters),
             "gradients": sum(nbytes(p) for p in parameters if p.need_grad) if training else 0,
             "solver_state": solver_state}
    inputs = [v for f in functions for v in f.inputs if v.parent is None and v not in known and v.shape]
    return dict(fixed, activations_at_peak=est.peak, peak_estimated=est.peak + sum(fixed.values()),
                peak_layer=est.peak_layer, peak_phase=est.peak_phase,
                alive_at_peak=[list(x) for x in est.alive_at_peak], curve=[list(x) for x in est.curve],
                batch_size=int(inputs[0].shape[0]) if inputs else 1, peak_measured=None, measured=measured)


def solver_state_bytes(solver: Any) -> int:
    """What the solver keeps per parameter (Adam: two states, Momentum: one, SGD: none), from its states."""
    total = 0
    try:
        for state in solver.get_states().values():
            total += sum(nbytes(v) for v in state.pstate.values())
    except Exception:
        return 0
    return total


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
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


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


def measure_device_step(run_step: Callable[[Optional[Callable[[Any], None]]], None],
                        used: Callable[[], int], clear: Callable[[], None],
                        sync: Optional[Callable[[], None]]) -> Tuple[Optional[int], str]:
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
    return max(0, max(readings) - base), ("the highest that the device's used memory (NVML, read after every "
                                          "function with the device synchronised) rose over one step, from a "
                                          "cleared CUDA memory cache")


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
        return max(0, max(readings) - base), ("the highest that the bytes in use by the allocator (glibc "
                                              "mallinfo2, read after every function) rose over one step, "
                                              "from a cleared NNabla memory cache")
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
    return max(0, peak - base_rss), ("growth of the process's peak resident memory over one step, from a "
                                     "cleared NNabla memory cache (VmHWM reset through /proc/self/clear_refs)")


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


def largest_batch(limit: int, fixed: int, activations: int, batch_size: int) -> Optional[int]:
    """The largest batch whose estimated peak fits in ``limit``: activations grow with the batch, the rest not."""
    if batch_size < 1 or activations <= 0:
        return None
    per_sample = activations / batch_size
    room = limit - fixed
    return max(0, int(math.floor(room / per_sample))) if room > 0 else 0


UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2, "g": 1000 ** 3, "gb": 1000 ** 3,
         "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4, "tb": 1000 ** 4}


def parse_size(text: str) -> int:
    """'8GiB', '512MB', '1e9' -> bytes."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        raise ValueError("'%s' is not a size (examples: 8GiB, 512MB, 1000000)" % text)
    value = float(m.group(1)) * UNITS[m.group(2).lower()]
    if value <= 0:
        raise ValueError("'%s' is not a positive size" % text)
    return int(value)


def human(n: Optional[float]) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(n) >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d B" % n
