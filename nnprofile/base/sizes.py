"""Sizes in bytes as people write them and read them: '8GiB' in, '1.50 MiB' out, and what batch fits."""

from __future__ import annotations

import math
import re
from typing import Optional


def largest_batch(limit: int, fixed: int, activations: int, batch_size: int) -> Optional[int]:
    """The largest batch whose estimated peak fits in ``limit``: activations grow with the batch, the rest not."""
    if batch_size < 1 or activations <= 0:
        return None
    per_sample = activations / batch_size
    room = limit - fixed
    return max(0, int(math.floor(room / per_sample))) if room > 0 else 0


UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "tb": 1000**4,
}


def parse_size(text: str) -> int:
    """'8GiB', '512MB', '1e9' -> bytes."""
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        raise ValueError("'%s' is not a size (examples: 8GiB, 512MB, 1000000)" % text)
    try:
        value = float(m.group(1)) * UNITS[m.group(2).lower()]
    except ValueError:
        raise ValueError("'%s' is not a size (examples: 8GiB, 512MB, 1000000)" % text)
    if not math.isfinite(value) or value > 2**62:
        raise ValueError("'%s' is not a size a machine has" % text)
    if value <= 0:
        raise ValueError("'%s' is not a positive size" % text)
    return int(value)


def human(n: Optional[float]) -> str:
    if n is None:
        return "n/a"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= scale:
            return "%.2f %s" % (n / scale, unit)
    return "%d B" % n
