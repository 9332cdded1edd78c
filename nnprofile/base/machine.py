"""What this machine can reach: its matrix-product rate and its memory bandwidth, measured.

A layer's rate (GFLOP/s, GB/s) is judged against what the machine itself reaches, not against another
layer of the same network: a convolution or a matrix product by its FLOP/s against NNabla's own matrix product
(an Affine of 512 by 512, on the CPU, in single precision), an element-wise or normalisation layer by the bytes it
moves against a large copy (16 MiB each way: beyond most laptops' last cache; touching a fresh 32 MiB was most of
the cost of a copy twice that size). NNabla runs its CPU functions on the calling thread, so both are measured on
one thread, by that thread's CPU time: on a busy machine (another task taking the CPU meanwhile) the figures do
not move, and two runs read the same rates. Each is the best of a few short runs (a run held up only reads
slower), measured once per process, in about 0.1 s, and stated in the header (``Header.machine_rates``) so that
the analysis reads them from the profile. A layer's rate above the machine's by more than ``MARGIN`` cannot be:
the layer's time was too short to rate (or mostly taken off as the timing's own cost); it is flagged, and never
used as a reference.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, Optional

MARGIN = 1.5  # a rate this far above the machine's measured one is no rate
_MEASURED: Optional[Dict[str, float]] = None


def _best(work: Callable[[], object], runs: int) -> float:
    """The fastest of ``runs`` runs, in s of the thread's CPU time (its wall time where the system gives none)."""
    clock = time.thread_time if hasattr(time, "thread_time") else time.perf_counter
    work()  # warm: buffers allocated, the library loaded
    best = float("inf")
    for _ in range(runs):
        t0 = clock()
        work()
        best = min(best, clock() - t0)
    return max(best, 1e-9)


def _matrix_product(size: int) -> Callable[[], object]:
    """NNabla's own matrix product on the CPU (an Affine of ``size`` by ``size``)."""
    import numpy as np

    import nnabla as nn
    import nnabla.functions as F
    from nnabla.ext_utils import get_extension_context

    with nn.context_scope(get_extension_context("cpu", type_config="float")), nn.auto_forward(False):
        rng = np.random.RandomState(0)  # its own: the program's random draws stay what they are without nnprofile
        a = nn.Variable.from_numpy_array(rng.rand(size, size).astype(np.float32))
        w = nn.Variable.from_numpy_array(rng.rand(size, size).astype(np.float32))
        y = F.affine(a, w)
    return lambda: y.forward(clear_no_need_grad=True)


def measure(size: int = 512, copy_mib: int = 16, runs: int = 4) -> Dict[str, float]:
    """{"gflops": the best matrix-product rate, "gbytes_per_s": the best copy bandwidth (read + write)}."""
    global _MEASURED
    if _MEASURED is not None:
        return dict(_MEASURED)
    import numpy as np

    gflops = 2.0 * size**3 / _best(_matrix_product(size), runs) / 1e9
    src = np.ones(copy_mib * (1 << 20) // 4, dtype=np.float32)
    dst = np.empty_like(src)
    gbytes = 2.0 * src.nbytes / _best(lambda: np.copyto(dst, src), runs) / 1e9
    _MEASURED = {"gflops": round(gflops, 2), "gbytes_per_s": round(gbytes, 2)}
    return dict(_MEASURED)


def plausible(rate: Optional[float], reach: Optional[float]) -> bool:
    """Whether a rate could be this machine's (no more than MARGIN above what it was measured to reach)."""
    return rate is None or not reach or rate <= MARGIN * reach
