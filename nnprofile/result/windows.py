"""The windows of a long training, each in a few figures: what the view over the whole run is made of.

A program recorded in windows across its run (``nnprofile run --repeat``, ``--on-demand``) keeps
each window's files in a folder of its own; the view over all of them keeps, per window, only this:
which steps it held and when, its step and the step's parts, its heaviest layers. Small, so that a
run of any number of windows stays small, and saved in ``result.json`` (``Profile.windows``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple


@dataclass
class WindowSummary:
    window: int  # from 1
    first_step: int  # its kept steps, numbered over the whole run (from 1)
    last_step: int
    steps: int  # how many it kept
    started_s: float  # seconds from the program's start to its first kept step
    ended_s: float  # ... and to the end of its last
    step_ms: float  # the step, and each part, per step (as its own breakdown says)
    step_error_ms: Optional[float]  # the standard error of the step's mean over its kept steps (None: one step)
    parts: List[Tuple[str, float]] = field(default_factory=list)
    layers: Dict[str, float] = field(default_factory=dict)  # "graph: layer" -> forward + backward, ms per step
    complete: bool = True  # False: the program ended (or failed) before the window filled
    folder: str = ""  # where its own files are, from the view's folder ("window-3"); "" where
    #                                 they are not kept (past --max-windows), or are the folder's own

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["parts"] = [[name, ms] for name, ms in self.parts]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "WindowSummary":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["parts"] = [(str(name), float(ms)) for name, ms in data.get("parts", [])]
        known["layers"] = {str(k): float(v) for k, v in (data.get("layers") or {}).items()}
        return cls(**known)

    @property
    def span(self) -> str:
        return (
            "step %d" % self.first_step
            if self.first_step == self.last_step
            else "steps %d to %d" % (self.first_step, self.last_step)
        )
