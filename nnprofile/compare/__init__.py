"""Repeatable comparisons, of configurations of a project and of saved results, and the regression gate
(``gate``: ``nnprofile check``); plain data that the renderers read.

A ``Comparison`` is plain data (statistics per metric and configuration,
ratios with 95% confidence intervals, findings); its renderers write
compare.log, compare.csv, compare_entries.csv, compare.xlsx and box plots.

- ``compare_results(*results)``: saved results (folders, result.json files or
  ``Profile`` objects), entry by entry and layer by layer, from their samples;
- ``compare_configurations(files, configs, repeat, outdir)``: each
  configuration profiled ``repeat`` times, each run a fresh process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Union

from ..base.errors import ProfileError
from ..result import Profile, file as result_file, views
from .configs import Config, parse_set, run_configurations
from .findings import findings
from .metrics import ROW_COLUMNS, Metric, Row, metric_rows
from .saved import ENTRY_COLUMNS, EntryRow, compare_saved, unique_names

if TYPE_CHECKING:
    import pandas

__all__ = ["Comparison", "Config", "compare_results", "compare_configurations", "parse_set"]

ResultLike = Union[str, "os.PathLike[str]", Profile]


@dataclass
class Comparison:
    """What a comparison found: one row per metric and configuration, and per entry and layer."""

    names: List[str]  # configurations or saved runs; ratios are to the first
    header: List[str]
    rows: List[Row]
    findings: List[str]
    metrics: List[Metric]
    what: str  # what each metric's values are (for the box plots)
    entry_rows: List[EntryRow] = field(default_factory=list)
    layer_rows: List[EntryRow] = field(default_factory=list)
    location: Optional[str] = field(default=None, compare=False, repr=False)  # where write() put the files

    def to_dataframe(self) -> "pandas.DataFrame":
        """Saved results: the rows of compare_entries.csv (entries, then layers); configurations:
        the rows of compare.csv. Numbers as numbers, a figure never measured as NaN."""
        import pandas as pd

        if self.entry_rows or self.layer_rows:
            records = [
                [r.section, r.label, r.config, r.n, r.mean_ms, r.median_ms, r.std_ms, r.ratio, r.ci_low, r.ci_high]
                for r in list(self.entry_rows) + list(self.layer_rows)
            ]
            frame = pd.DataFrame.from_records(records, columns=ENTRY_COLUMNS)
            frame["n"] = frame["n"].astype("Int64")
            for column in ENTRY_COLUMNS[4:]:
                frame[column] = frame[column].astype("float64")
            return frame
        records = [
            [
                r.metric,
                r.unit,
                r.config,
                r.stats.n,
                r.stats.mean,
                r.stats.median,
                r.stats.std,
                r.stats.p90,
                r.stats.min,
                r.stats.max,
                r.ratio,
                r.ci_low,
                r.ci_high,
            ]
            for r in self.rows
        ]
        frame = pd.DataFrame.from_records(records, columns=ROW_COLUMNS)
        for column in ROW_COLUMNS[4:]:
            frame[column] = frame[column].astype("float64")
        return frame

    def write(self, outdir: str) -> List[str]:
        """Write compare.log, compare.csv, compare_entries.csv, compare.xlsx and box plots; returns the paths
        (written by ``nnprofile.render.comparison``, which the API loads)."""
        return views.make("comparison_write", (self, outdir))

    def _repr_html_(self) -> Optional[str]:
        """In Jupyter: the header, each metric's ratio and interval, the findings, a link to compare.html
        (made by ``nnprofile.render.inline``; None where the renderers are not loaded)."""
        maker = views.find("comparison_html")
        return maker(self) if maker is not None else None


def _load(result: ResultLike) -> Profile:
    return result if isinstance(result, Profile) else result_file.load(os.fspath(result))


def compare_results(*results: ResultLike, names: Optional[Sequence[str]] = None) -> Comparison:
    """Compare saved results (two or more), entry by entry and layer by layer."""
    if len(results) < 2:
        raise ProfileError("give two or more results to compare")
    if names is None:
        names = unique_names(
            [os.fspath(r) if not isinstance(r, Profile) else "run %d" % (i + 1) for i, r in enumerate(results)]
        )
    names = list(names)
    profiles = {n: _load(r) for n, r in zip(names, results)}
    base = profiles[names[0]]
    shared = {(s.kind, s.name) for s in base.sections}
    for n in names[1:]:
        common = shared & {(s.kind, s.name) for s in profiles[n].sections}
        if not common:
            raise ProfileError(
                "%s and %s share no section: the results are of unrelated runs (%s against %s)"
                % (names[0], n, base.header.project or "?", profiles[n].header.project or "?")
            )
    entry_rows, layer_rows, metrics = compare_saved(profiles)
    rows = metric_rows(metrics, names)
    header = [
        "nnprofile compare: %d saved results, each entry's per-call samples; ratios to %s" % (len(names), names[0])
    ] + [
        "  %s: %s (%s, %s)"
        % (
            n,
            r if not isinstance(r, Profile) else "in memory",
            profiles[n].header.context or "?",
            profiles[n].header.date or "?",
        )
        for n, r in zip(names, results)
    ]
    found = findings(rows, [Config(n, {}) for n in names], {n: p.header.context for n, p in profiles.items()})
    return Comparison(names, header, rows, found, metrics, "per-call samples of each saved run", entry_rows, layer_rows)


def compare_configurations(
    files: Sequence[str],
    configs: Sequence[Config],
    repeat: int,
    outdir: str,
    extra: Sequence[str] = (),
    train_epochs: Optional[int] = None,
    progress: Callable[[str], None] = lambda line: None,
    on_run: Optional[Callable[[int, int, str], None]] = None,
    resolve: Optional[float] = None,
    max_runs: int = 10,
    max_seconds: float = 300.0,
) -> Comparison:
    """Profile (and optionally train) each configuration ``repeat`` times, alternating, in fresh processes, and with
    ``resolve`` more until every headline ratio's 95% interval is within it (or ``max_runs`` runs, ``max_seconds``);
    ``on_run(done, total, what)`` as each process starts."""
    if len({c.name for c in configs}) != len(configs):
        raise ProfileError("the same configuration is given twice")
    total = len(configs) * repeat * (2 if train_epochs else 1)
    started = [0]

    def next_run(what: str) -> None:
        if on_run is not None:
            on_run(started[0], total, what)
        started[0] += 1

    metrics, profiles, resolution = run_configurations(
        files,
        configs,
        repeat,
        outdir,
        extra,
        progress=progress,
        on_run=next_run,
        resolve=resolve,
        max_runs=max_runs,
        max_seconds=max_seconds,
    )
    repeat = resolution.runs
    contexts = {c: p.header.context for c, p in profiles.items()}
    names = [c.name for c in configs]
    if train_epochs:
        metrics += _train(files[0], configs, repeat, train_epochs, outdir, progress, next_run)
    rows = metric_rows(metrics, names)
    header = [
        "nnprofile compare: %s, %d configurations x %d runs, each a fresh process, alternating; "
        "ratios to %s" % (" ".join(files), len(configs), repeat, names[0])
    ]
    if resolve is not None:
        header.append("  " + _resolution_line(resolution, resolve, repeat, max_runs, max_seconds))
    header += ["  %s: ran on %s" % (c, contexts.get(c, "?")) for c in names]
    if train_epochs:
        header.append(
            "  training: %d epochs with nnabla_cli train; 'validation error' is 1 - accuracy on "
            "the validation dataset, 'valid_error monitor' the project's own monitor (NNabla "
            "averages the loss for an Error monitor)" % train_epochs
        )
    return Comparison(
        names, header, rows, findings(rows, configs, contexts), metrics, "%d runs per configuration" % repeat
    )


def _resolution_line(resolution: Any, resolve: float, repeat: int, max_runs: int, max_seconds: float) -> str:
    """Whether every headline ratio's interval came within ``resolve`` of it, after how many runs."""
    widest = ", ".join("%s +-%.1f%%" % (m, 100 * w) for m, w in resolution.widest.items())
    if resolution.resolved:
        return "resolved: every headline ratio's 95%% interval is within %g%% of it after %d runs each (%s)" % (
            100 * resolve,
            repeat,
            widest,
        )
    budget = "%d runs" % max_runs if resolution.reason == "runs" else "%g s" % max_seconds
    return "not resolved to %g%%: the budget ended first (%s) after %d runs each; the intervals: %s" % (
        100 * resolve,
        budget,
        repeat,
        widest,
    )


def _train(
    main_file: str,
    configs: Sequence[Config],
    repeat: int,
    epochs: int,
    outdir: str,
    progress: Callable[[str], None],
    on_run: Callable[[str], None] = lambda what: None,
) -> List[Metric]:
    """Time to train and validation error per configuration and run, as comparison metrics."""
    from .training import train_once

    trained = {
        m: Metric(m, u)
        for m, u in (("time to train", "s"), ("validation error", "ratio"), ("valid_error monitor", "loss"))
    }
    for i in range(repeat):
        for c in configs:  # alternating, as the profiles
            progress("training %d epochs, run %d of %d, %s ..." % (epochs, i + 1, repeat, c.name))
            on_run("train %s" % c.name)
            t = train_once(main_file, c.settings, epochs, os.path.join(outdir, "train", c.slug, str(i + 1)))
            trained["time to train"].values.setdefault(c.name, []).append(t.train_seconds)
            if t.classification_error is not None:
                trained["validation error"].values.setdefault(c.name, []).append(t.classification_error)
            if t.monitor_valid_error is not None:
                trained["valid_error monitor"].values.setdefault(c.name, []).append(t.monitor_valid_error)
    return [m for m in trained.values() if m.values]
