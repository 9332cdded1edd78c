"""What this machine can reach: its matrix-product rate (BLAS) and its memory bandwidth, measured.

A layer's rate (GFLOP/s, GB/s) is judged against what the machine itself reaches, not against another
layer of the same network: a convolution or a matrix product by its FLOP/s against a single-precision
matrix product through NumPy's BLAS, an element-wise or normalisation layer by the bytes it moves
against a large copy. Both are the best of a few short runs (a slow spell only lowers a run), measured
once per process, in about 0.1 s, and stated in the header (``Header.machine_rates``) so that the
analysis reads them from the profile. A layer's rate above the machine's by more than ``MARGIN`` cannot
be: the layer's time was too short to rate (or mostly taken off as the timing's own cost); it is
flagged, and never used as a reference.
"""
from __future__ import annotations

import time
from typing import Dict, Optional

MARGIN = 1.5          # a rate this far above the machine's measured one is no rate
_MEASURED: Optional[Dict[str, float]] = None


def measure(size: int = 512, copy_mib: int = 32, runs: int = 7) -> Dict[str, float]:
    """{"gflops": the best matrix-product rate, "gbytes_per_s": the best copy bandwidth (read + write)}."""
    global _MEASURED
    if _MEASURED is not None:
        return dict(_MEASURED)
    import numpy as np
    a = np.random.rand(size, size).astype(np.float32)
    b = np.random.rand(size, size).astype(np.float32)
    np.dot(a, b)  # warm: the library loaded, its threads started
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        np.dot(a, b)
        best = min(best, time.perf_counter() - t0)
    gflops = 2.0 * size ** 3 / best / 1e9
    src = np.ones(copy_mib * (1 << 20) // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    gbytes = 2.0 * src.nbytes / best / 1e9
    _MEASURED = {"gflops": round(gflops, 2), "gbytes_per_s": round(gbytes, 2)}
    return dict(_MEASURED)


def plausible(rate: Optional[float], reach: Optional[float]) -> bool:
    """Whether a rate could be this machine's (no more than MARGIN above what it was measured to reach)."""
    return rate is None or not reach or rate <= MARGIN * reach
