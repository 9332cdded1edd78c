"""Profiles as pandas DataFrames, for users who analyse results in a notebook.

One row per entry, in log order, its columns as ``nnprofile.result.columns`` defines them; times in milliseconds
as floats, counts as integers, and a missing figure as NaN (pandas' empty cell), never as zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from . import views
from .columns import FLAG, FLOAT, INT, IN_FRAME, MS, Row, columns
from .layer_columns import IN_FRAME as LAYERS_IN_FRAME, LayerRow, select
from .paired import layer_times

if TYPE_CHECKING:
    import pandas

DTYPES = {INT: "Int64", MS: "float64", FLOAT: "float64", FLAG: bool}  # pandas' nullable integers keep them whole


def profile_records(profile: Any) -> List[Dict[str, Any]]:
    """The rows of ``profile_frame`` as plain dicts (None where a figure is unknown); ``profile`` is a
    ``nnprofile.result.model.Profile``."""
    chosen = columns(IN_FRAME)
    return [
        {c.name: c.get(row) for c in chosen}
        for row in (Row(section, e) for section in profile.sections for e in section.entries)
    ]


def profile_frame(profile: Any) -> "pandas.DataFrame":
    import pandas as pd

    frame = pd.DataFrame.from_records(profile_records(profile), columns=IN_FRAME)
    for c in columns(IN_FRAME):
        if c.kind in DTYPES:
            frame[c.name] = frame[c.name].astype(DTYPES[c.kind])
    return frame


def layer_frame(profile: Any) -> "pandas.DataFrame":
    """One row per layer of every section: its forward and backward paired (``nnprofile.result.paired``, the rule
    every output follows), in forward order, with no pass totals or other whole-step entries; the heaviest first is
    ``.nlargest(3, "total_ms")``. A missing figure is NaN (a layer with no backward: backward_ms NaN). Its columns
    are ``IN_FRAME``' of ``nnprofile.result.layer_columns``."""
    import pandas as pd

    chosen = select(LAYERS_IN_FRAME)
    rows = []
    for section in profile.sections:
        totals = [e.mean_ms * e.calls_per_round() for e in section.entries if e.is_layer_work]
        whole = sum(totals) or None
        for lt in layer_times(section):
            per_step = sum(x.mean_ms * x.calls_per_round() for x in (lt.forward, lt.backward) if x is not None)
            row = LayerRow(section, lt, per_step, section_ms=whole)
            rows.append({c.name: c.get(row) for c in chosen})
    frame = pd.DataFrame.from_records(rows, columns=LAYERS_IN_FRAME)
    for c in chosen:
        if c.kind in DTYPES:
            frame[c.name] = frame[c.name].astype(DTYPES[c.kind])
    return frame


TYPE_COLUMNS = ["section", "layer_type", "layers", "ms_per_step", "share_of_section"]


def layer_type_frame(profile: Any) -> "pandas.DataFrame":
    """One row per layer type of each section: how many layers, their time a step together (forward and backward,
    each as often as it runs a step) and their share of the section's layers; the heaviest first in each section."""
    import pandas as pd

    layers = layer_frame(profile)
    if layers.empty:
        return pd.DataFrame(columns=TYPE_COLUMNS)
    layers = layers.assign(
        ms_per_step=layers["total_ms"] * layers["calls_per_step"].fillna(1.0),
        layer_type=layers["layer_type"].fillna("?"),
    )
    grouped = layers.groupby(["section", "layer_type"], sort=False).agg(
        layers=("layer", "size"), ms_per_step=("ms_per_step", "sum"), share_of_section=("share_of_section", "sum")
    )
    frame = grouped.reset_index()
    order = {name: i for i, name in enumerate(dict.fromkeys(layers["section"]))}
    frame = (
        frame.assign(_order=frame["section"].map(order))
        .sort_values(["_order", "ms_per_step"], ascending=[True, False])
        .drop(columns="_order")
        .reset_index(drop=True)
    )
    return frame[TYPE_COLUMNS]


for _name, _maker in (
    ("profile_frame", profile_frame),
    ("layer_frame", layer_frame),
    ("layer_type_frame", layer_type_frame),
):
    views.register(_name, _maker)
