"""What a section says besides its entries (result.json's section ``info``, and a project's ``sampling``), typed:
the one hand-over from the stages that make sections (``nnprofile.assembly``, ``nnprofile.measure``) to those
that read them.

Every field is None where the section does not say it (a project's section says none of a graph's). In the
file a field is written only where it is set, under its own name, as every earlier version wrote it; a name
this version does not know is kept as read (``extra``) and written back. Reading a field by its name
(``info["role"]``, ``info.get("role")``) is kept for code written against the dict of earlier versions
(``nnprofile.base.records``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ..base.records import Record


@dataclass(frozen=True)
class SampledLine:
    """One of the program's own lines as the sampler found it in the kept steps: where, in which function, its
    text, how many samples fell on it, and the time a step it was found blocked (a sleep, a read, a lock)."""

    where: str
    function: str
    text: str
    samples: int
    waited_ms: float = 0.0

    def to_json(self) -> List[Any]:
        row: List[Any] = [self.where, self.function, self.text, self.samples]
        return row + [self.waited_ms] if self.waited_ms else row

    @classmethod
    def from_json(cls, row: Any) -> "SampledLine":
        where, function, text, samples = row[:4]
        return cls(str(where), str(function), str(text), int(samples), float(row[4]) if len(row) > 4 else 0.0)


@dataclass(frozen=True)
class Child:
    """A kind of call that ran inside an entry's calls: its label, its type, its calls per call of the entry and its
    mean (ms a call). Its time is inside the entry's, never counted again beside it."""

    label: str
    type: str
    calls: float
    mean_ms: float

    def to_json(self) -> Dict[str, Any]:
        return {"label": self.label, "type": self.type, "calls": self.calls, "mean_ms": self.mean_ms}

    @classmethod
    def from_json(cls, value: Dict[str, Any]) -> "Child":
        return cls(value["label"], value["type"], value["calls"], value["mean_ms"])


@dataclass(frozen=True)
class LoadBurst:
    """A project's data source read in a burst after its epochs' first reads: the mean read, how many, after how
    many reads set aside."""

    mean_ms: float
    reads: int
    after: int

    def to_json(self) -> Dict[str, Any]:
        return {"mean_ms": self.mean_ms, "reads": self.reads, "after": self.after}

    @classmethod
    def from_json(cls, value: Any) -> "LoadBurst":
        return cls(float(value.get("mean_ms", 0.0)), int(value.get("reads", 0)), int(value.get("after", 0)))


@dataclass(frozen=True)
class SolverSummary:
    """A recorded program's solver: its label, its class, the parameters it holds (how many, and their scopes: each
    parameter's name without its last part, in order, at most ``MAX_SCOPES``), its updates per kept step and the
    graphs it trains."""

    label: str
    type: str
    parameters: int
    scopes: List[str]
    updates_per_step: float
    trains: List[str]
    module: str = ""  # the module of its class: NNabla's (nnabla.solver), or the program's own ("": not said)

    MAX_SCOPES = 256

    def to_json(self) -> Dict[str, Any]:
        out = {
            "label": self.label,
            "type": self.type,
            "parameters": self.parameters,
            "scopes": list(self.scopes),
            "updates_per_step": self.updates_per_step,
            "trains": list(self.trains),
        }
        return dict(out, module=self.module) if self.module else out  # (since version 14)

    @classmethod
    def from_json(cls, value: Any) -> "SolverSummary":
        if not isinstance(value, dict) or not isinstance(value.get("scopes", []), list):
            raise ValueError("solvers holds %s, not a solver" % type(value).__name__)
        return cls(
            str(value.get("label", "")),
            str(value.get("type", "")),
            int(value.get("parameters", 0)),
            [str(x) for x in value.get("scopes", [])][: cls.MAX_SCOPES],
            float(value.get("updates_per_step", 0.0)),
            [str(x) for x in value.get("trains", [])],
            str(value.get("module", "")),
        )


@dataclass
class SectionInfo(Record):
    # A recorded program's graph: its name, whether auto_forward made it, the solvers that train it (their
    # labels), its passes per kept step.
    graph: Optional[str] = None
    dynamic: Optional[bool] = None
    trained_by: Optional[List[str]] = None
    forward_per_step: Optional[float] = None
    backward_per_step: Optional[float] = None
    # What ran only outside the kept steps: where ("before the first kept step", "after the last step"), and a
    # graph's passes there, per phase.
    outside: Optional[str] = None
    passes: Optional[Dict[str, int]] = None
    # What a graph is for (``nnprofile.assembly.roles``): trained, backward, feeds, evaluation, updates; the
    # graphs it feeds, the scopes it writes.
    role: Optional[str] = None
    writes: Optional[List[str]] = None
    feeds: Optional[List[str]] = None
    # A graph run only outside the kept steps: the hooks' cost scaled to its own passes, per phase.
    hook_scale: Optional[Dict[str, float]] = None
    # The program's step: its own lines as sampled (the most first), the samples in all, and the clock that
    # took them (kind, period in ms); which iterator feeds which evaluation graph.
    own_samples: Optional[int] = None
    own_lines: Optional[List[SampledLine]] = None
    own_clock: Optional[Tuple[str, float]] = None
    inputs_of: Optional[Dict[str, str]] = None
    # The program's solvers (its step's section): each one's parameters, updates per step and the graphs it trains.
    solvers: Optional[List[SolverSummary]] = None
    # A graph built under auto_forward: the program's lines its first build was made from (``file:line``, the
    # outermost first).
    built_at: Optional[List[str]] = None
    # Rounds never left out of the means as slow (steps holding rare work).
    drift_exempt: Optional[List[int]] = None
    # A project's section: why its layers are timed inside its whole passes, and its data source read in a burst.
    layers_in_passes: Optional[str] = None
    load_dataset_burst: Optional[LoadBurst] = None
    # What a later version wrote that this one does not know: kept as read, written back.
    extra: Dict[str, Any] = field(default_factory=dict)

    def encode(self, name: str, value: Any) -> Any:
        if name == "own_lines":
            return [line.to_json() for line in value]
        if name == "own_clock":
            return list(value)
        if name == "load_dataset_burst":
            return value.to_json()
        if name == "solvers":
            return [x.to_json() for x in value]
        return value

    @classmethod
    def decode(cls, name: str, value: Any) -> Any:
        if name == "own_lines":
            return [SampledLine.from_json(row) for row in value]
        if name == "own_clock":
            kind, period = value
            return str(kind), float(period)
        if name == "load_dataset_burst":
            return LoadBurst.from_json(value)
        if name == "solvers":
            return [SolverSummary.from_json(x) for x in value]
        if name == "drift_exempt":  # round numbers: each a whole number
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
                raise ValueError("drift_exempt holds what is no round number")
            return list(value)
        return value


# What each field is in the file (a number may be written as an integer).
SectionInfo.KINDS = {
    "graph": str,
    "dynamic": bool,
    "trained_by": list,
    "forward_per_step": (int, float),
    "backward_per_step": (int, float),
    "outside": str,
    "passes": dict,
    "role": str,
    "writes": list,
    "feeds": list,
    "hook_scale": dict,
    "own_samples": int,
    "own_lines": list,
    "own_clock": list,
    "inputs_of": dict,
    "solvers": list,
    "built_at": list,
    "drift_exempt": list,
    "layers_in_passes": str,
    "load_dataset_burst": dict,
}


@dataclass
class Sampling(Record):
    """What a project's section's time budget allowed (``nnprofile.measure.rounds``): the rounds run, the seconds
    they took against the budget (None: a fixed number of rounds), how entries were sampled: whether rounds were
    lean and how often a layer round came, from which round the layer entries' shares were planned, how many
    partial layer rounds ran for the entries short of how many rounds (``nnprofile.render.sampling`` says it;
    ``plan``: the words of results before version 11), and why sampling stopped; empty where not known."""

    SPARSE = False
    rounds: Optional[int] = None
    seconds: Optional[float] = None
    budget_seconds: Optional[float] = None
    plan: Optional[str] = None
    lean: Optional[bool] = None
    layer_every: Optional[int] = None
    stopped: Optional[str] = None
    shared_from: Optional[int] = None
    partial_rounds: Optional[int] = None
    partial_short_of: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        """Every field (None as null) but those version 11 added, written where set (an earlier file's as read)."""
        out = super().to_json()
        for name in ("shared_from", "partial_rounds", "partial_short_of"):
            if out.get(name, 0) is None:
                del out[name]
        return out


Sampling.KINDS = {
    "rounds": int,
    "seconds": (int, float),
    "budget_seconds": (int, float),
    "plan": str,
    "lean": bool,
    "layer_every": int,
    "stopped": str,
    "shared_from": int,
    "partial_rounds": int,
    "partial_short_of": int,
}
