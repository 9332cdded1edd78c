"""The per-layer columns, defined once, as ``columns`` defines the per-entry ones: each column's name, its heading,
its type, how its value is read off a layer (its forward and backward paired: ``paired.LayerTime``), how a report
shows it and whether it shows it at first. ``Profile.layers()`` (``frames.layer_frame``) and the report's layer
table (``nnprofile.render.html``) show the columns named in their selections at the end (``IN_FRAME``,
``IN_REPORT``): a new per-layer figure is one line in the table and its name in the selections, all in this file.

A value is None where it is not known: NaN in a DataFrame, an empty cell in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from .columns import FLOAT, INT, MS, TEXT
from .model import Entry, Section
from .paired import LayerTime

# How the report shows a figure (its script's formatters): as it is, a time, a share, a count, three decimals.
SHOW_TEXT, SHOW_MS, SHOW_SHARE, SHOW_COUNT, SHOW_3 = "text", "ms", "pct", "big", "num3"


@dataclass(frozen=True)
class LayerRow:
    """What a layer column reads: the layer, its section, its time a step as the output counts it, and what that is
    a share of (its section's layers a step; the step)."""

    section: Section
    layer: LayerTime
    per_step_ms: float
    section_ms: Optional[float] = None
    step_ms: Optional[float] = None


@dataclass(frozen=True)
class LayerColumn:
    name: str  # the DataFrame's and the report's key
    heading: str  # the report's
    get: Callable[[LayerRow], Any]  # the value, None where not known
    kind: str = FLOAT  # the DataFrame's dtype follows it
    show: str = SHOW_MS  # how the report shows it
    first: bool = False  # the report shows it before "all columns" is asked


def _forward(pick: Callable[[Entry], Any]) -> Callable[[LayerRow], Any]:
    return lambda r: pick(r.layer.forward) if r.layer.forward is not None else None


def _backward(pick: Callable[[Entry], Any]) -> Callable[[LayerRow], Any]:
    return lambda r: pick(r.layer.backward) if r.layer.backward is not None else None


def _share(part: float, whole: Optional[float]) -> Optional[float]:
    return part / whole if whole else None


LAYER_COLUMNS: Sequence[LayerColumn] = (
    LayerColumn("section", "section", lambda r: r.section.title, TEXT, SHOW_TEXT),
    LayerColumn("layer", "layer", lambda r: r.layer.first.layer, TEXT, SHOW_TEXT, True),
    LayerColumn("layer_type", "type", lambda r: r.layer.first.layer_type, TEXT, SHOW_TEXT, True),
    LayerColumn("class", "class", lambda r: r.layer.first.impl_class, TEXT, SHOW_TEXT),
    LayerColumn("forward_ms", "forward mean (ms)", _forward(lambda e: e.mean_ms), MS, first=True),
    LayerColumn("forward_median_ms", "forward median", _forward(lambda e: e.stats.median / 1e6), MS),
    LayerColumn("forward_p90_ms", "forward p90", _forward(lambda e: e.stats.p90 / 1e6), MS),
    LayerColumn("forward_rse", "forward rel. error", _forward(lambda e: e.stats.known_rse), FLOAT, SHOW_SHARE),
    LayerColumn("backward_ms", "backward mean (ms)", _backward(lambda e: e.mean_ms), MS, first=True),
    LayerColumn("backward_median_ms", "backward median", _backward(lambda e: e.stats.median / 1e6), MS),
    LayerColumn("backward_p90_ms", "backward p90", _backward(lambda e: e.stats.p90 / 1e6), MS),
    LayerColumn("backward_rse", "backward rel. error", _backward(lambda e: e.stats.known_rse), FLOAT, SHOW_SHARE),
    LayerColumn("total_ms", "total (ms)", lambda r: r.layer.total_ms, MS, first=True),
    LayerColumn("calls_per_step", "calls a step", lambda r: r.layer.first.calls_per_round(), FLOAT, SHOW_3),
    LayerColumn(
        "share_of_section", "share of its section", lambda r: _share(r.per_step_ms, r.section_ms), FLOAT, SHOW_SHARE
    ),
    LayerColumn("share", "share of step", lambda r: _share(r.per_step_ms, r.step_ms), FLOAT, SHOW_SHARE, True),
    LayerColumn("output_shape", "output shape", lambda r: r.layer.first.output_shape, TEXT, SHOW_TEXT),
    LayerColumn("params", "parameters", lambda r: r.layer.first.params, INT, SHOW_COUNT),
    LayerColumn("flops", "FLOPs", lambda r: r.layer.flops, INT, SHOW_COUNT),
    LayerColumn("gflops_per_s", "GFLOP/s", lambda r: r.layer.gflops_per_s, FLOAT, SHOW_3, True),
    LayerColumn("bytes", "bytes moved", lambda r: r.layer.bytes_moved, INT, SHOW_COUNT),
    LayerColumn("out_bytes", "output bytes", lambda r: r.layer.first.output_bytes, INT, SHOW_COUNT),
    LayerColumn("param_bytes", "parameter bytes", lambda r: r.layer.first.parameter_bytes, INT, SHOW_COUNT),
    LayerColumn("source", "created at", lambda r: r.layer.first.source, TEXT, SHOW_TEXT, True),
)
BY_NAME: Dict[str, LayerColumn] = {c.name: c for c in LAYER_COLUMNS}

# What each output shows, in its own order: ``Profile.layers()`` (``frames``) and the report's layer table
# (``nnprofile.render.html``, which adds its "calls inside").
IN_FRAME = (
    "section layer layer_type forward_ms backward_ms total_ms forward_rse backward_rse calls_per_step "
    "share_of_section output_shape params flops gflops_per_s source class"
).split()
IN_REPORT = (
    "layer layer_type class forward_ms forward_median_ms forward_p90_ms forward_rse backward_ms "
    "backward_median_ms backward_p90_ms backward_rse total_ms share flops gflops_per_s bytes out_bytes "
    "param_bytes source"
).split()


def select(names: Sequence[str]) -> List[LayerColumn]:
    """The columns of these names, in this order."""
    return [BY_NAME[n] for n in names]
