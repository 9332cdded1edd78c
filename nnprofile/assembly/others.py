"""The kept steps of another shape than the usual (a validation every few steps, a first step that reads its data
twice): no step without the hooks has their shape, so nothing measures them as they run alone. Their passes take
their graphs' factors (``nnprofile.assembly.lean.rescaled``); the rest of their time (the program's own Python and
eager work, beyond their passes and own calls) is scaled as the usual steps' rest was from the hooked steps to the
plain ones, over all their gaps: the hooks slow the program's own work alike in every step (MAML's validation step
read 935 ms, 1.33 times its 705 ms alone; the usual steps' rest read 1.57 times theirs).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

Rows = Dict[int, List[Tuple[float, Dict[str, float]]]]  # a step's gaps: (its rest, hooked; its passes by phase)


def rests(
    scales: Sequence[float], usual: Sequence[List[Tuple[float, Dict[str, float]]]], other: Rows
) -> Tuple[float, Dict[int, float]]:
    """The usual steps' rest factor (their gaps' ``scales`` weighted by their rest, hooked: 1 where they have none),
    and each other step's rest, hooked (by index)."""
    held = sum(rest for row in usual for rest, _ in row)
    factor = sum(scales[k] * rest for row in usual for k, (rest, _) in enumerate(row)) / held if held > 0 else 1.0
    return factor, {i: sum(rest for rest, _ in row) for i, row in other.items()}
