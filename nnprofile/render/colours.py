"""The colours of a step's parts, one set for every output that draws them (the report, the workbook): a part is
the same colour wherever it is drawn (Tableau 10, as Vega's default scheme)."""

from __future__ import annotations

from typing import Dict

PART_COLOURS: Dict[str, str] = {
    "input": "#8e9aaf",
    "evaluation": "#b0a4c8",
    "forward": "#4c78a8",
    "backward": "#f58518",
    "update": "#54a24b",
    "monitor": "#b279a2",
    "communication": "#e45756",
    "checkpoint": "#9d755d",
    "eager": "#72b7b2",
    "other": "#bab0ac",
}
UNKNOWN = "#999999"
FORWARD, BACKWARD = PART_COLOURS["forward"], PART_COLOURS["backward"]


def part_colour(part: str) -> str:
    """A part's colour by its first word ("update (Adam)" is an update)."""
    return PART_COLOURS.get(part.split(" ")[0], UNKNOWN)
