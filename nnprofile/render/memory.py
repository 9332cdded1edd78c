"""The step's memory in words: the log's and the report's Memory lines, and the rows summary.csv and the Summary
sheet give it (``nnprofile.analysis.memory`` reads the largest batch that fits)."""

from __future__ import annotations

from typing import List

from ..analysis import SectionAnalysis
from ..base.buffers import StepMemory
from ..base.sizes import human

ROWS = ("parameters", "gradients", "solver_state", "activations_at_peak", "peak_estimated", "peak_measured")


def difference(m: StepMemory) -> str:
    measured = m.peak_measured
    if measured is None:
        return ""
    delta = measured - (m.activations_at_peak or 0)
    return (
        "the measured growth is %s %s the estimated activations: NNabla's allocator rounds buffers up to "
        "its block sizes and keeps freed blocks for reuse, functions allocate workspaces the estimate does "
        "not count (im2col buffers of convolutions), and the resident memory grows by whole pages; the input "
        "batch is counted in both" % (human(abs(delta)), "above" if delta >= 0 else "below")
    )


def rows(a: SectionAnalysis) -> List[List[object]]:
    """summary.csv rows: section, item 'memory', name, ms, percent, detail, bytes."""
    section = a.section
    m = section.memory
    if not m.estimated:  # not measured (results of an earlier version)
        return []
    alive = ", ".join("%s %s" % (name, human(b)) for name, b in m.alive_at_peak[:5])
    detail = {
        "parameters": "every parameter of the network",
        "gradients": "the parameters' gradients",
        "solver_state": "what the solver keeps per parameter (Adam two states, Momentum one, SGD none)",
        "activations_at_peak": "alive at the peak: %s" % alive,
        "peak_estimated": "reached at %s (%s), from the buffers' lifetimes under NNabla's release rules"
        % (m.peak_layer, m.peak_phase),
        "peak_measured": "%s%s" % (m.measured or "", ("; " + difference(m)) if difference(m) else ""),
    }
    out: List[List[object]] = [
        [section.title, "memory", name, "", "", detail[name], "" if getattr(m, name) is None else getattr(m, name)]
        for name in ROWS
    ]
    batch, limit = a.largest_batch, a.memory_limit
    if batch is not None:
        out.append(
            [
                section.title,
                "memory",
                "largest_batch",
                "",
                "",
                "the largest batch whose estimated peak fits in %s (activations grow with the batch; "
                "parameters, gradients and solver state do not)" % human(limit),
                batch,
            ]
        )
    return out


def lines(a: SectionAnalysis) -> List[str]:
    section = a.section
    m = section.memory
    if not m.estimated:  # not measured (results of an earlier version)
        return []
    out = [
        "Memory: parameters %s, gradients %s, solver state %s; estimated peak %s at %s (%s), of which "
        "activations %s (%s)"
        % (
            human(m.parameters or 0),
            human(m.gradients or 0),
            human(m.solver_state or 0),
            human(m.peak_estimated or 0),
            m.peak_layer,
            m.peak_phase,
            human(m.activations_at_peak or 0),
            ", ".join("%s %s" % (n, human(b)) for n, b in m.alive_at_peak[:3]),
        )
    ]
    if m.peak_measured is not None:
        out.append("Memory measured: %s: %s; %s" % (m.measured, human(m.peak_measured), difference(m)))
    batch, limit = a.largest_batch, a.memory_limit
    if batch is not None:
        out.append(
            "Memory limit %s: the largest batch whose estimated peak fits is %d (now %d)"
            % (human(limit), batch, m.batch_size or 1)
        )
    return out
