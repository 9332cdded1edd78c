"""A section's plan within its time budget: every entry every round, or lean rounds for a section too large.

``make_plan`` chooses, after the warm-up pass, between normal rounds and lean ones (the layer entries one
sample a round, in one round out of a few); ``Stratum`` is a partial layer round, when a slow spell leaves
too little of the budget for a whole one. ``nnprofile.measure.rounds`` runs the rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Tuple

from .timing import Timer

# A section too large for its budget samples its layer entries in one round out of a few
# (at most this many), and each layer entry gets at least this many rounds where the budget allows.
MAX_LAYER_EVERY = 8
MIN_LAYER_ROUNDS = 3


@dataclass
class Plan:
    """How a section is sampled within its time budget.

    Normally every entry runs every round, cheap ones several samples per round
    with an untimed re-warm first. When ``min_rounds`` such rounds do not fit in
    the budget, the layer entries go ``lean`` (one sample a round instead of up
    to three) and run in one round out of ``layer_every``, together with the
    untimed passes that refresh their buffers; the whole-step entries (data,
    passes, update) run every round. Every layer entry still gets its samples, in rounds spread over the
    whole budget, and every round's speed counts for all entries in it.
    """

    lean: bool = False
    layer_every: int = 1
    predicted_round_ns: float = 0.0
    whole_ns: float = 0.0  # predicted: a round of the whole-step entries only
    layer_ns: float = 0.0  # predicted: what the layer entries add to a round

    def layer_round(self, round_index: int) -> bool:
        return round_index % self.layer_every == 0


def make_plan(
    whole_ns: float, layer_normal_ns: float, layer_lean_ns: float, remaining_ns: float, min_rounds: int
) -> Plan:
    """The plan that fits the remaining budget (see ``Plan``).

    ``whole_ns``: a round's cost of the whole-step entries; ``layer_*_ns``: that of the layer
    entries and the passes that refresh their buffers, sampled normally or lean.
    """
    normal = whole_ns + layer_normal_ns
    if min_rounds * normal <= remaining_ns or layer_normal_ns <= 0:
        return Plan(predicted_round_ns=normal, whole_ns=whole_ns, layer_ns=layer_normal_ns)
    # Lean: as many rounds for the whole-step entries as fit beside MIN_LAYER_ROUNDS layer rounds.
    layer_rounds = MIN_LAYER_ROUNDS
    if layer_rounds * (whole_ns + layer_lean_ns) > remaining_ns:
        return Plan(
            lean=True,
            layer_every=1,
            predicted_round_ns=whole_ns + layer_lean_ns,
            whole_ns=whole_ns,
            layer_ns=layer_lean_ns,
        )
    rounds = int((remaining_ns - layer_rounds * layer_lean_ns) // whole_ns) if whole_ns > 0 else layer_rounds
    every = max(1, min(MAX_LAYER_EVERY, rounds // layer_rounds))
    return Plan(
        lean=True,
        layer_every=every,
        predicted_round_ns=whole_ns + layer_lean_ns / every,
        whole_ns=whole_ns,
        layer_ns=layer_lean_ns,
    )


@dataclass
class Stratum:
    """A partial layer round: the layer probes it holds, and when it stops taking them.

    Its plan is a prediction. A slow spell makes it short, so each probe is taken only while
    it and what must follow it (``tail_ns``: the untimed passes after the layers, the whole-step
    entries) still end before ``end_ns``, at the speed the round has shown so far.
    """

    ids: set
    end_ns: float
    tail_ns: float
    # (clock reading, predicted cost of the probes taken before it), one per probe taken: the speed
    # over the whole round and over its last RECENT probes (a spell that starts inside the round)
    marks: List[Tuple[float, float]] = field(default_factory=list)
    last_cost: float = 0.0  # the predicted cost of the last probe taken

    RECENT = 50

    def takes(self, probe: Any, now_ns: float, timer: Timer) -> bool:
        if id(probe) not in self.ids:
            return False
        slower = 1.0
        if self.marks:
            predicted = self.marks[-1][1] + self.last_cost
            for t, p in (self.marks[0], self.marks[max(0, len(self.marks) - self.RECENT)]):
                if predicted > p:
                    slower = max(slower, (now_ns - t) / (predicted - p))
        cost = probe.round_cost(timer)
        if now_ns + slower * (cost + self.tail_ns) > self.end_ns:
            return False
        self.marks.append((now_ns, self.marks[-1][1] + self.last_cost if self.marks else 0.0))
        self.last_cost = cost
        return True
