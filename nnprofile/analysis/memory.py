"""The step's memory, as the outputs say it: rows for summary.csv, lines for the log."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..base.sizes import human, largest_batch
from ..result import Section

ROWS = ("parameters", "gradients", "solver_state", "activations_at_peak", "peak_estimated", "peak_measured")


def fits(section: Section, limit: Optional[int]) -> Optional[int]:
    """The largest batch whose estimated peak fits in ``limit`` bytes."""
    m = section.memory
    if "peak_estimated" not in m or not limit:
        return None
    fixed = m["parameters"] + m["gradients"] + m["solver_state"]
    return largest_batch(limit, fixed, m["activations_at_peak"], m["batch_size"])


def difference(m: Dict[str, Any]) -> str:
    measured = m.get("peak_measured")
    if measured is None:
        return ""
    delta = measured - m["activations_at_peak"]
    return ("the measured growth is %s %s the estimated activations: NNabla's allocator rounds buffers up to "
            "its block sizes and keeps freed blocks for reuse, functions allocate workspaces the estimate does "
            "not count (im2col buffers of convolutions), and the resident memory grows by whole pages; the input "
            "batch is counted in both" % (human(abs(delta)), "above" if delta >= 0 else "below"))


def rows(section: Section, limit: Optional[int]) -> List[List[object]]:
    """summary.csv rows: section, item 'memory', name, ms, percent, detail, bytes."""
    m = section.memory
    if "peak_estimated" not in m:  # not measured (results of an earlier version)
        return []
    alive = ", ".join("%s %s" % (name, human(b)) for name, b in m.get("alive_at_peak", [])[:5])
    detail = {
        "parameters": "every parameter of the network",
        "gradients": "the parameters' gradients",
        "solver_state": "what the solver keeps per parameter (Adam two states, Momentum one, SGD none)",
        "activations_at_peak": "alive at the peak: %s" % alive,
        "peak_estimated": "reached at %s (%s), from the buffers' lifetimes under NNabla's release rules"
                          % (m.get("peak_layer"), m.get("peak_phase")),
        "peak_measured": "%s%s" % (m.get("measured", ""), ("; " + difference(m)) if difference(m) else ""),
    }
    out: List[List[object]] = [[section.title, "memory", name, "", "", detail[name],
                                "" if m.get(name) is None else m[name]] for name in ROWS]
    batch = fits(section, limit)
    if batch is not None:
        out.append([section.title, "memory", "largest_batch", "", "",
                    "the largest batch whose estimated peak fits in %s (activations grow with the batch; "
                    "parameters, gradients and solver state do not)" % human(limit), batch])
    return out


def lines(section: Section, limit: Optional[int]) -> List[str]:
    m = section.memory
    if "peak_estimated" not in m:  # not measured (results of an earlier version)
        return []
    out = ["Memory: parameters %s, gradients %s, solver state %s; estimated peak %s at %s (%s), of which "
           "activations %s (%s)" % (human(m["parameters"]), human(m["gradients"]), human(m["solver_state"]),
                                    human(m["peak_estimated"]), m.get("peak_layer"), m.get("peak_phase"),
                                    human(m["activations_at_peak"]),
                                    ", ".join("%s %s" % (n, human(b)) for n, b in m.get("alive_at_peak", [])[:3]))]
    if m.get("peak_measured") is not None:
        out.append("Memory measured: %s: %s; %s" % (m.get("measured"), human(m["peak_measured"]), difference(m)))
    batch = fits(section, limit)
    if batch is not None:
        out.append("Memory limit %s: the largest batch whose estimated peak fits is %d (now %d)"
                   % (human(limit), batch, m["batch_size"]))
    return out
