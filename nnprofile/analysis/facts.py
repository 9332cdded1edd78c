"""What each piece of advice stands on: the figures that triggered it, as data.

A rule of ``nnprofile.analysis.advice`` (a step's) or ``nnprofile.analysis.ranks`` (a distributed run's)
returns an ``Advice``: the rule's name and its facts, one dataclass per rule. The words (what to try, and
the evidence with its figures) are made from them by ``nnprofile.render.advice``, once for every output.
An interval is a pair of bounds, as ``nnprofile.analysis.evidence`` gives it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

Bounds = Tuple[float, float]


@dataclass(frozen=True)
class Share:
    """A part's time a step, its share of the step, that share's 95 % interval, and the rule's threshold."""

    ms: float
    share: float
    bounds: Bounds
    step_ms: float
    threshold: float


@dataclass(frozen=True)
class InputBound:
    input: Share


@dataclass(frozen=True)
class NoHalf:
    functions: int
    backend: str
    type_config: str


@dataclass(frozen=True)
class LayerName:
    layer: str
    copies: int  # the unrolled copies its figures sum (1: one layer)
    layer_type: str


@dataclass(frozen=True)
class DominantLayer:
    layer: LayerName
    kind: str  # what the layer does (``nnprofile.base.kinds``)
    time: Share  # its forward and backward a step


@dataclass(frozen=True)
class SlowLayer:
    layer: LayerName
    rate: float
    bounds: Bounds
    step_ms: float
    share: float
    memory: Optional[Tuple[float, float]]  # (FLOP per byte, GB/s moved), for a layer rated by its arithmetic


@dataclass(frozen=True)
class SlowLayers:
    """Layers of one kind of work far below what it reaches: by arithmetic (``gflops``) or by the bytes they move."""

    key: str  # "gflops" or "gbytes_per_s"
    unit: str
    layers: Tuple[SlowLayer, ...]
    reference: float  # the rate they are judged against
    best_layer: Optional[str]  # None: the machine's measured rate; else the best layer of their kind (older results)


@dataclass(frozen=True)
class BetweenLayers:
    coverage: float  # the forward functions' sum over forward_all
    threshold: float


@dataclass(frozen=True)
class HeavyUpdate:
    update: Share


@dataclass(frozen=True)
class CostlyCheckpoint:
    checkpoint: Share  # the solvers' save_states and load_states


@dataclass(frozen=True)
class CostlyEvaluation:
    graph: str
    per_step: float  # its forward passes a step
    pass_ms: float
    time: Share


@dataclass(frozen=True)
class LineShare:
    where: str  # file:line
    text: str  # the line's code
    share: float  # of ``other``
    ms: float


@dataclass(frozen=True)
class OwnPython:
    """The program's own Python between NNabla's calls is a large share of the step."""

    other: Share
    named: Optional[LineShare]  # the line most of it is at, where its samples show one
    hints: Tuple[str, ...]  # what the named lines do (``advice.OWN_HINTS``' kinds), first seen first
    lines: Tuple[LineShare, ...]  # the lines shown as evidence


@dataclass(frozen=True)
class Straggler:
    rank: int
    part: Optional[str]  # the part of its step most above the others'
    ratio: float
    interval: Tuple[Optional[float], Optional[float], int]  # 95 % interval of the ratio, and the steps it is over
    threshold: float
    part_ms: float
    others_part_ms: float
    last_in: Tuple[int, int]  # steps it entered the longest collective last, of the steps that could tell
    others_wait_ms: float  # what the other ranks wait a step inside collectives


@dataclass(frozen=True)
class RankInput:
    rank: int
    input_ms: float
    busy_ms: float
    threshold: float


@dataclass(frozen=True)
class Communication:
    comm_ms: float
    step_ms: float
    wait_ms: float
    ranks: int
    threshold: float


@dataclass(frozen=True)
class PartsOverStep:
    """A step's note: its parts come to more than the step (the program's own time then reads 0)."""

    parts_ms: float
    step_ms: float


@dataclass(frozen=True)
class InputHeldUp:
    """A step's note: other work took a share of the program's thread while it ran, and the reads wait for the
    data iterators' threads, which it held up too, unmeasured: the input's time may read higher than alone."""

    busy: float  # what other work took of the profiled thread's time (the kernel's count)
    input_ms: float  # the input's time a step, as it reads


@dataclass(frozen=True)
class RateAboveMachine:
    """A step's note: a layer reads a rate above what this machine reaches (its time too short to rate)."""

    layer: LayerName
    rate: float
    unit: str
    reach: float  # what the machine reaches, measured
    total_ms: float


@dataclass(frozen=True)
class ChartShown:
    """What a bar chart of layers shows where it is not every layer."""

    summed: bool  # unrolled copies summed into their base layer
    slowest: int  # the slowest this many (0: every base layer)
    of: int  # of so many (base) layers


StepNote = Union[PartsOverStep, RateAboveMachine, InputHeldUp]
Facts = Union[
    InputBound,
    NoHalf,
    DominantLayer,
    SlowLayers,
    BetweenLayers,
    HeavyUpdate,
    CostlyCheckpoint,
    CostlyEvaluation,
    OwnPython,
    Straggler,
    RankInput,
    Communication,
]
