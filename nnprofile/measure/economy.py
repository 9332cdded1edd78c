"""A section's first step, and what it decides: the passes' order and cost, the memory a step takes, and whether
the section's layers are timed alone (NNC's way) or inside its whole passes (a network whose passes are long).

The first step is one training step (an inference's forward pass) run before anything is timed, from a cleared
memory cache, with a post-hook after every function: it reads the memory in use (``nnprofile.measure.peak``) and
notes the functions in the order they run, forward and backward, and how long each pass took. It is the
section's warm-up, its layer order and its memory figure at once.

Timing each layer alone, a round costs about five whole steps of a training network (buffers refreshed, each
layer run twice, the whole passes, the backward without zeroing, a settling step); four forward passes of an
inference network. Where ``min_rounds`` such rounds do not fit in the section's budget (an unrolled recurrent
network, a deep residual one: 0.19 s and 1.4 s a step here), every round spends whole passes on each entry:
the layers are timed inside the section's whole passes instead, between NNabla's hooks (as ``--mode graph``
does), and those passes are also forward_all's and backward_all's samples, the hooks' measured cost taken
off. A training round is then two steps, an inference round one pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

# What a round costs, in whole steps (a training network) or passes (an inference network), its layers timed
# alone: the refresh, each layer run twice (re-warmed, then timed), the whole passes, the backward without
# zeroing, the settling step of lean rounds.
ISOLATED_ROUND_STEPS = 5.0
ISOLATED_ROUND_PASSES = 4.0
# What each per-layer entry adds to a round besides its function's own time: its untimed re-run, the timing, the
# round's bookkeeping (about 40 us here, on an unrolled LSTM's 1,600 layer entries).
ENTRY_NS = 40_000.0


@dataclass
class FirstStep:
    """What the first step showed: the functions of each pass in the order they ran, how long each pass took
    (ns, with the post-hook's reading after every function in it), and the memory it took."""

    forward: List[Any] = field(default_factory=list)
    backward: List[Any] = field(default_factory=list)
    forward_ns: float = 0.0
    backward_ns: float = 0.0
    grown: Optional[int] = None
    how: str = ""

    @property
    def step_ns(self) -> float:
        return self.forward_ns + self.backward_ns


def run_first_step(
    clock: Callable[[], int],
    forward: Callable[[Any, Any], None],
    backward: Optional[Callable[[Any, Any], None]],
    update: Optional[Callable[[], None]],
    measure: Callable[[Callable[[Any], None]], Tuple[Optional[int], str]],
) -> FirstStep:
    """One step through ``measure`` (the memory reading: it gives the step its post-hook), the functions noted as
    they begin (a failure, such as running out of memory, names the function it came in) and the passes timed."""
    first = FirstStep()
    order: List[Any] = first.forward
    phase = "forward"

    def step(post: Optional[Callable[[Any], None]]) -> None:
        nonlocal order, phase
        t0 = clock()
        forward(order.append, post)
        t1 = clock()
        first.forward_ns = float(t1 - t0)
        if backward is not None:
            order, phase = first.backward, "backward"
            backward(order.append, post)
            first.backward_ns = float(clock() - t1)
        if update is not None:
            update()

    try:
        first.grown, first.how = measure(step)
    except Exception as e:
        if order:
            e.nnprofile_function = order[-1]  # type: ignore[attr-defined]
            e.nnprofile_phase = phase  # type: ignore[attr-defined]
        raise
    return first


def in_passes(first: FirstStep, training: bool, min_rounds: int, budget_s: float) -> Optional[str]:
    """Why the section's layers are timed inside its whole passes (None: alone, NNC's way)."""
    if training:  # setup, forward and backward entries for each layer
        round_ns, what = ISOLATED_ROUND_STEPS * first.step_ns + ENTRY_NS * 3 * len(first.forward), "a training step"
        took = first.step_ns
    else:
        round_ns, what = ISOLATED_ROUND_PASSES * first.forward_ns + ENTRY_NS * 2 * len(first.forward), "a forward pass"
        took = first.forward_ns
    if round_ns * max(1, min_rounds) <= budget_s * 1e9:
        return None
    return (
        "%s of its %d functions takes %.0f ms: %d rounds timing each layer alone (about %.1f s) would not fit "
        "in the section's budget of %g s"
        % (what, len(first.forward), took / 1e6, min_rounds, round_ns * min_rounds / 1e9, budget_s)
    )
