"""The per-entry columns, defined once: each column's name, the header a workbook shows, its unit, how its value
is read off an entry, and how it is written (its type, its text in a CSV file, its number format and width in a
workbook). ``Profile.dataframe()`` (``frames``), profile_detail.csv and the workbook's section sheets show the
columns named in their selections at the end (``IN_FRAME``, ``IN_DETAIL``, ``IN_SHEET``), each in its own order: a
new per-entry figure is one line in the table and its name in the selections that show it, all in this file.

A value is None where it is not known: an empty cell in a file, NaN in a DataFrame; a layer's figure that no
FLOP formula gives reads ``unknown`` in the files (``unknown``). Text that comes from a project or a program
(``from_user``) is neutralised where a file is written (``nnprofile.render.safe``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Sequence

from .model import Entry, Section, ms

# A column's type, which its DataFrame dtype follows: text, a time in ms, another float, a (nullable) integer,
# a flag.
TEXT, MS, FLOAT, INT, FLAG = "text", "ms", "float", "int", "flag"
MS_FORMAT = "0.000000"


@dataclass(frozen=True)
class Row:
    """What a column reads: an entry, its section, and the section's coverage by whole phase (profile_detail.csv's
    ``coverage``: how much of a pass its layers add up to)."""

    section: Section
    entry: Entry
    coverage: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Column:
    name: str  # the DataFrame's and the CSV file's
    header: str  # the workbook's
    unit: str  # "ms", "ns", "bytes", "FLOP", "GFLOP/s", "FLOP/byte", "" (a count, a ratio)
    get: Callable[[Row], Any]  # the value, None where not known
    kind: str = TEXT
    text: str = ""  # printf format of the value in a CSV file ("": as it is)
    number_format: str = ""  # the workbook's ("": Excel's general)
    width: int = 13  # the workbook's
    unknown: bool = False  # None for a layer's forward or backward: no formula gives it, "unknown"
    from_user: bool = False  # text a project or program named


def _stats(row: Row) -> Any:
    return row.entry.stats


ENTRY_COLUMNS: Sequence[Column] = (
    Column("section", "section", "", lambda r: r.section.title, from_user=True),
    Column("label", "entry", "", lambda r: r.entry.label, from_user=True),
    Column("phase", "phase", "", lambda r: r.entry.phase, width=26),
    Column("layer", "layer", "", lambda r: r.entry.layer, from_user=True, width=24),
    Column("layer_id", "layer id", "", lambda r: r.entry.layer_id, INT),
    Column("layer_type", "layer type", "", lambda r: r.entry.layer_type, from_user=True),
    Column("class", "class", "", lambda r: r.entry.impl_class, from_user=True, width=26),
    Column("in_place", "in place", "", lambda r: r.entry.in_place, FLAG),
    Column("mean_ms", "time (ms)", "ms", lambda r: r.entry.mean_ms, MS, "%f", MS_FORMAT),
    Column("median_ms", "median (ms)", "ms", lambda r: ms(_stats(r).median), MS, "%f", MS_FORMAT),
    Column("std_ms", "std (ms)", "ms", lambda r: ms(_stats(r).std), MS, "%f", MS_FORMAT),
    Column("min_ms", "min (ms)", "ms", lambda r: ms(_stats(r).min), MS, "%f", MS_FORMAT),
    Column("max_ms", "max (ms)", "ms", lambda r: ms(_stats(r).max), MS, "%f", MS_FORMAT),
    Column("p90_ms", "p90 (ms)", "ms", lambda r: ms(_stats(r).p90), MS, "%f", MS_FORMAT),
    Column("runs", "runs", "", lambda r: _stats(r).n, INT),
    Column(
        "rse",
        "rel. std. error",
        "",
        lambda r: _stats(r).known_rse,
        FLOAT,
        "%.4f",
        "0.00%",
    ),
    Column("calls_per_sample", "calls/sample", "", lambda r: r.entry.calls_per_sample, INT),
    Column("overhead_ns", "overhead (ns)", "ns", lambda r: r.entry.overhead_ns, FLOAT, "%.1f"),
    Column("output_shape", "output shape", "", lambda r: r.entry.output_shape, from_user=True, width=16),
    Column("params", "params", "", lambda r: r.entry.params, INT, width=10),
    Column("flops", "FLOPs", "FLOP", lambda r: r.entry.flops, INT, width=14, unknown=True),
    Column("bytes_read", "bytes read", "bytes", lambda r: r.entry.bytes_read, INT),
    Column("bytes_written", "bytes written", "bytes", lambda r: r.entry.bytes_written, INT),
    Column(
        "gflops_per_s", "GFLOP/s", "GFLOP/s", lambda r: r.entry.gflops_per_s, FLOAT, "%.3f", "0.000", 10, unknown=True
    ),
    Column(
        "flop_per_byte",
        "FLOP/byte",
        "FLOP/byte",
        lambda r: r.entry.arithmetic_intensity,
        FLOAT,
        "%.3f",
        "0.000",
        10,
        unknown=True,
    ),
    Column("coverage", "coverage", "", lambda r: r.coverage.get(r.entry.phase), FLOAT, "%.4f", "0.00%"),
    Column("dtype", "dtype", "", lambda r: r.entry.dtype),
    Column("section_kind", "section kind", "", lambda r: r.section.kind),
    Column("section_complete", "section complete", "", lambda r: r.section.complete, FLAG),
    Column("rounds", "rounds", "", lambda r: _stats(r).rounds, INT),
    Column("entry_complete", "entry complete", "", lambda r: r.entry.complete, FLAG),
    Column("run_cv", "run CV", "", lambda r: r.entry.run_cv, FLOAT, "%.4f", "0.00%"),
    Column("output_bytes", "output bytes", "bytes", lambda r: r.entry.output_bytes, INT, width=14),
    Column("parameter_bytes", "parameter bytes", "bytes", lambda r: r.entry.parameter_bytes, INT, width=15),
    Column("gradient_bytes", "gradient bytes", "bytes", lambda r: r.entry.gradient_bytes, INT, width=14),
    Column(
        "input_gradient_bytes", "input gradient bytes", "bytes", lambda r: r.entry.input_gradient_bytes, INT, width=19
    ),
    Column("source", "source", "", lambda r: r.entry.source, from_user=True, width=30),
    Column("rank_cv", "rank CV", "", lambda r: r.entry.rank_cv, FLOAT, "%.4f", "0.00%"),
    Column("disturbed", "disturbed", "", lambda r: len(r.entry.disturbed), INT),  # samples other work held up
)
BY_NAME: Dict[str, Column] = {c.name: c for c in ENTRY_COLUMNS}

# What each output shows, in its own order: ``Profile.dataframe()`` (``frames``), profile_detail.csv (every
# column) and the workbook's section sheets (the figures a reader looks at first, then what the layer computes).
IN_FRAME = (
    "section label phase layer layer_id layer_type class in_place mean_ms median_ms std_ms min_ms max_ms p90_ms "
    "runs rse calls_per_sample overhead_ns output_shape params flops bytes_read bytes_written gflops_per_s "
    "flop_per_byte dtype section_kind section_complete rounds run_cv entry_complete source rank_cv disturbed"
).split()
IN_DETAIL = (
    "section label phase layer layer_type class in_place mean_ms median_ms std_ms min_ms max_ms p90_ms runs rse "
    "calls_per_sample overhead_ns output_shape params flops bytes_read bytes_written gflops_per_s flop_per_byte "
    "coverage section_complete layer_id rounds entry_complete run_cv output_bytes parameter_bytes gradient_bytes "
    "input_gradient_bytes source rank_cv disturbed"
).split()
IN_SHEET = (
    "label mean_ms median_ms std_ms min_ms max_ms p90_ms runs rse calls_per_sample phase layer class output_shape "
    "params flops bytes_read bytes_written gflops_per_s flop_per_byte output_bytes parameter_bytes gradient_bytes "
    "input_gradient_bytes source"
).split()


def columns(names: Sequence[str]) -> List[Column]:
    """The columns of these names, in this order."""
    return [BY_NAME[n] for n in names]


def is_unknown(column: Column, row: Row, value: Any) -> bool:
    """Whether a missing value is a layer's figure that no formula gives (``unknown`` in the files)."""
    return value is None and column.unknown and row.entry.is_layer_work
