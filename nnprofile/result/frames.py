"""Profiles as pandas DataFrames, for users who analyse results in a notebook.

One row per entry, in log order; times in milliseconds as floats, counts as
integers, and a missing figure as NaN (pandas' empty cell), never as zero.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..base.stats import NS_PER_MS

if TYPE_CHECKING:
    import pandas

COLUMNS = ["section", "label", "phase", "layer", "layer_id", "layer_type", "class", "in_place",
           "mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "runs", "rse",
           "calls_per_sample", "overhead_ns", "output_shape", "params", "flops", "bytes_read",
           "bytes_written", "gflops_per_s", "flop_per_byte", "dtype", "section_kind", "section_complete",
           "rounds", "run_cv", "entry_complete", "source", "rank_cv", "disturbed"]
INTEGER_COLUMNS = ["layer_id", "runs", "calls_per_sample", "params", "flops", "bytes_read", "bytes_written",
                   "rounds", "disturbed"]


def profile_records(profile: Any) -> List[Dict[str, Any]]:
    """The rows of ``profile_frame`` as plain dicts (None where a figure is unknown); ``profile`` is a
    ``nnprofile.result.model.Profile`` (which imports this module, hence no import of it here)."""
    records = []
    for section in profile.sections:
        for e in section.entries:
            s = e.stats
            records.append({
                "section": section.title, "label": e.label, "phase": e.phase, "layer": e.layer,
                "layer_id": e.layer_id, "layer_type": e.layer_type, "class": e.impl_class,
                "in_place": e.in_place, "mean_ms": e.mean_ms, "median_ms": s.median / NS_PER_MS,
                "std_ms": s.std / NS_PER_MS, "min_ms": s.min / NS_PER_MS, "max_ms": s.max / NS_PER_MS,
                "p90_ms": s.p90 / NS_PER_MS, "runs": s.n, "rse": s.rse if s.rse_known else None,
                "calls_per_sample": e.calls_per_sample, "overhead_ns": e.overhead_ns,
                "output_shape": e.output_shape, "params": e.params, "flops": e.flops,
                "bytes_read": e.bytes_read, "bytes_written": e.bytes_written,
                "gflops_per_s": e.gflops_per_s, "flop_per_byte": e.arithmetic_intensity,
                "dtype": e.dtype, "section_kind": section.kind, "section_complete": section.complete,
                "rounds": s.rounds, "run_cv": e.run_cv, "entry_complete": e.complete, "source": e.source,
                "rank_cv": e.rank_cv, "disturbed": len(e.disturbed),  # samples other work held up, left out
            })
    return records


def profile_frame(profile: Any) -> "pandas.DataFrame":
    import pandas as pd
    frame = pd.DataFrame.from_records(profile_records(profile), columns=COLUMNS)
    # Integers that may be missing: pandas' nullable integer type keeps them whole.
    for column in INTEGER_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    for column in ("mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "rse",
                   "overhead_ns", "gflops_per_s", "flop_per_byte", "run_cv", "rank_cv"):
        frame[column] = frame[column].astype("float64")
    frame["in_place"] = frame["in_place"].astype(bool)
    frame["section_complete"] = frame["section_complete"].astype(bool)
    frame["entry_complete"] = frame["entry_complete"].astype(bool)
    return frame


LAYER_COLUMNS = ["section", "layer", "layer_type", "forward_ms", "backward_ms", "total_ms", "forward_rse",
                 "backward_rse", "calls_per_step", "share_of_section", "output_shape", "params", "flops",
                 "gflops_per_s", "source", "class"]


def layer_frame(profile: Any) -> "pandas.DataFrame":
    """One row per layer of every section: its forward and backward paired (by the layer's identity), in
    forward order, with no pass totals or other whole-step entries; the heaviest first is ``.nlargest(3,
    "total_ms")``. A missing figure is NaN (a layer with no backward: backward_ms NaN)."""
    import pandas as pd
    rows = []
    for section in profile.sections:
        forward = {e.layer_id: e for e in section.entries if e.phase == "forward_function"}
        backward = {e.layer_id: e for e in section.entries if e.phase == "backward_function"}
        ids = list(forward) + [i for i in backward if i not in forward]
        totals = [e.mean_ms * e.calls_per_round() for e in list(forward.values()) + list(backward.values())]
        whole = sum(totals) or None
        for i in ids:
            f, b = forward.get(i), backward.get(i)
            e = f or b
            assert e is not None
            per_call = sum(x.mean_ms for x in (f, b) if x is not None)
            calls = e.calls_per_round()
            per_step = sum(x.mean_ms * x.calls_per_round() for x in (f, b) if x is not None)
            rows.append({
                "section": section.title, "layer": e.layer, "layer_type": e.layer_type,
                "forward_ms": f.mean_ms if f is not None else None, "backward_ms": b.mean_ms if b is not None else None,
                "total_ms": per_call,
                "forward_rse": f.stats.rse if f is not None and f.stats.rse_known else None,
                "backward_rse": b.stats.rse if b is not None and b.stats.rse_known else None,
                "calls_per_step": calls, "share_of_section": per_step / whole if whole else None,
                "output_shape": e.output_shape, "params": e.params,
                "flops": sum(x.flops for x in (f, b) if x is not None and x.flops is not None) if any(
                    x is not None and x.flops is not None for x in (f, b)) else None,
                "gflops_per_s": e.gflops_per_s if f is not None else None, "source": e.source, "class": e.impl_class,
            })
    frame = pd.DataFrame.from_records(rows, columns=LAYER_COLUMNS)
    for column in ("forward_ms", "backward_ms", "total_ms", "forward_rse", "backward_rse", "calls_per_step",
                   "share_of_section", "gflops_per_s"):
        frame[column] = frame[column].astype("float64")
    for column in ("params", "flops"):
        frame[column] = frame[column].astype("Int64")
    return frame


TYPE_COLUMNS = ["section", "layer_type", "layers", "ms_per_step", "share_of_section"]


def layer_type_frame(profile: Any) -> "pandas.DataFrame":
    """One row per layer type of each section: how many layers, their time a step together (forward and backward,
    each as often as it runs a step) and their share of the section's layers; the heaviest first in each section."""
    import pandas as pd
    layers = layer_frame(profile)
    if layers.empty:
        return pd.DataFrame(columns=TYPE_COLUMNS)
    layers = layers.assign(ms_per_step=layers["total_ms"] * layers["calls_per_step"].fillna(1.0),
                           layer_type=layers["layer_type"].fillna("?"))
    grouped = layers.groupby(["section", "layer_type"], sort=False).agg(
        layers=("layer", "size"), ms_per_step=("ms_per_step", "sum"), share_of_section=("share_of_section", "sum"))
    frame = grouped.reset_index()
    order = {name: i for i, name in enumerate(dict.fromkeys(layers["section"]))}
    frame = frame.assign(_order=frame["section"].map(order)).sort_values(
        ["_order", "ms_per_step"], ascending=[True, False]).drop(columns="_order").reset_index(drop=True)
    return frame[TYPE_COLUMNS]
