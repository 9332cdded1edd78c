"""The step's memory, as the analysis reads it: the largest batch whose estimated peak fits in a limit (the
outputs say it: ``nnprofile.render.memory``)."""

from __future__ import annotations

from typing import Optional

from ..base.sizes import largest_batch
from ..result import Section


def fits(section: Section, limit: Optional[int]) -> Optional[int]:
    """The largest batch whose estimated peak fits in ``limit`` bytes."""
    m = section.memory
    if not m.estimated or not limit:
        return None
    return largest_batch(limit, m.fixed, m.activations_at_peak or 0, m.batch_size or 1)
