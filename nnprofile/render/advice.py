"""The words of advice: what to try, and the evidence with its figures, made from a rule's facts.

Every output (the log, summary.csv, the workbook, the HTML report, the notebook) says a piece of advice
in these words; the rules that decide it are ``nnprofile.analysis.advice`` (a step's) and
``nnprofile.analysis.ranks`` (a distributed run's), and what each stands on is ``nnprofile.analysis.facts``.
"""

from __future__ import annotations

from typing import Callable, Dict, NamedTuple, Optional, Tuple

from ..analysis import facts
from ..analysis.breakdown import Advice
from ..base import kinds
from .words import OTHER_OPENING, bracket, listed, named, pct


class Words(NamedTuple):
    rule: str
    text: str  # what to try
    evidence: str  # the measured figures that triggered it


def words(a: Advice) -> Words:
    """A piece of advice in words."""
    text, evidence = SAYS[type(a.facts)](a.facts)
    return Words(a.rule, text, evidence)


def _share(s: facts.Share) -> str:
    """``3.100 ms, 33.0% [31.0%, 36.1%]``: a part's time, its share and that share's interval."""
    return "%.3f ms, %s %s" % (s.ms, pct(s.share), bracket(s.bounds, True))


def _input_bound(f: facts.InputBound) -> Tuple[str, str]:
    return (
        "The step waits for its data: prepare batches ahead (a dataset cache on fast storage, smaller images, fewer "
        "augmentations) or overlap loading with computing.",
        "input (load_dataset, let_data) takes %s of the %.3f ms step (threshold %s)"
        % (_share(f.input), f.input.step_ms, pct(f.input.threshold)),
    )


def _no_half(f: facts.NoHalf) -> Tuple[str, str]:
    return (
        "No function ran in half precision on a GPU backend: try mixed precision (nnprofile compare PROJECT --set "
        "type_config=float --set type_config=half) and check the validation error with --train-epochs.",
        "0 of %d functions ran in half precision on %s:%s" % (f.functions, f.backend, f.type_config),
    )


# What to try where one layer dominates, by what the layer does (``nnprofile.base.kinds``).
DOMINANT_ADVICE = {
    kinds.CONVOLUTION: "shrink %s (fewer maps, a smaller kernel, a stride) or move it later, after pooling.",
    kinds.AFFINE: "%s is a product with a weight matrix: fewer units, a smaller input to it, "
    "or its weight factored into two smaller ones (a low-rank layer, as an "
    "SVD-compressed network has).",
    kinds.RECURRENT: "%s is recurrent, a small product per time step: fewer hidden units, shorter sequences "
    "(truncated backpropagation through time), or a larger batch.",
    kinds.NORMALIZATION: "%s reads and writes its whole input and computes little: normalize fewer or smaller "
    "tensors, or fuse it with the activation after it (F.fused_batch_normalization).",
    kinds.POOLING: "%s reads its whole input: give it a smaller one (a stride in the layer before it).",
    kinds.EMBEDDING: "%s looks up rows of a table; its backward adds into the whole table's gradient and the "
    "solver updates every row: a smaller vocabulary or embedding size, or fewer lookups per step.",
    kinds.ELEMENTWISE: "%s is element-wise: its time is moving its operands through memory, not arithmetic. "
    "Smaller operands (batch, dimensions), or fewer separate element-wise functions (each "
    "reads and writes its whole input).",
    kinds.REDUCTION: "%s reads its whole input to produce little: reduce smaller tensors, or once where the "
    "program reduces the same data several times.",
    kinds.LOSS: "the loss %s has a large input (many classes or positions): fewer classes, or a sampled loss.",
    kinds.DATA: "%s only moves data (reshape, transpose, concatenate, slice): lay the data out so that it "
    "needs no copy.",
}


def _dominant(f: facts.DominantLayer) -> Tuple[str, str]:
    what = DOMINANT_ADVICE.get(f.kind)
    layer = f.layer.layer
    text = (
        what % layer
        if what
        else "%s; the others matter little until it costs less (its shapes and arguments are in the layer table)."
        % layer
    )
    return (
        "One layer dominates the step: " + text,
        "%s (%s) takes %.3f ms forward + backward, %s %s of the %.3f ms step (threshold %s)"
        % (
            named(f.layer),
            f.layer.layer_type,
            f.time.ms,
            pct(f.time.share),
            bracket(f.time.bounds, True),
            f.time.step_ms,
            pct(f.time.threshold),
        ),
    )


def _slow_words(key: str, one: bool) -> str:
    """What slow layers of a kind of work do (``key``: gflops, gbytes_per_s), for one layer or several."""
    if key == "gflops":
        return (
            "compute%s far below what this machine reaches: %s implementation or shape (small or odd sizes) costs "
            "more than %s arithmetic" % ("s" if one else "", "its" if one else "their", "its" if one else "their")
        )
    return (
        "move%s %s operands far slower than this machine's memory allows: many small calls, or a layout %s must "
        "convert, cost more than the data moved"
        % ("s" if one else "", "its" if one else "their", "it" if one else "they")
    )


def _slow_layer(l: facts.SlowLayer, unit: str) -> str:
    memory = ", %.2f FLOP/byte, %.2f GB/s moved" % l.memory if l.memory is not None else ""
    return "%s (%s) achieves %.3f %s %s over %.3f ms (%s of the step)%s" % (
        named(l.layer),
        l.layer.layer_type,
        l.rate,
        unit,
        bracket(l.bounds),
        l.step_ms,
        pct(l.share),
        memory,
    )


def _slow(f: facts.SlowLayers) -> Tuple[str, str]:
    against = (
        "this machine reaches %.1f %s (measured)" % (f.reference, f.unit)
        if f.best_layer is None
        else "the best layer of its kind, %s, achieves %.3f %s" % (f.best_layer, f.reference, f.unit)
    )
    return (
        "%s %s." % (listed([l.layer.layer for l in f.layers]), _slow_words(f.key, len(f.layers) == 1)),
        "%s; %s (threshold: a tenth of it)" % ("; ".join(_slow_layer(l, f.unit) for l in f.layers), against),
    )


def _between(f: facts.BetweenLayers) -> Tuple[str, str]:
    return (
        "Much of forward_all is spent between the layers (graph bookkeeping, memory allocation, launches): larger "
        "batches or fewer, larger layers amortise it.",
        "the forward_function entries add up to %s of forward_all (threshold %s)" % (pct(f.coverage), pct(f.threshold)),
    )


def _heavy_update(f: facts.HeavyUpdate) -> Tuple[str, str]:
    return (
        "The solver update is a large part of the step: a network with many parameters and little computation; a "
        "simpler solver (SGD, Momentum) or larger batches help.",
        "update (and weight decay) take %s of the step (threshold %s)" % (_share(f.update), pct(f.update.threshold)),
    )


def _checkpoint(f: facts.CostlyCheckpoint) -> Tuple[str, str]:
    return (
        "Saving the solver's state is a large part of the step: save it less often (each epoch, or every few "
        "hundred steps), or to faster storage.",
        "save_states and load_states take %s of the step (threshold %s)"
        % (_share(f.checkpoint), pct(f.checkpoint.threshold)),
    )


def _evaluation(f: facts.CostlyEvaluation) -> Tuple[str, str]:
    return (
        "The graph '%s' runs forward only (an evaluation) and costs %s of the training step: evaluate less often, on "
        "fewer batches, or with a larger batch." % (f.graph, pct(f.time.share)),
        "%.2f forward passes of '%s' per step, %.3f ms each: %.3f ms of the %.3f ms step (threshold %s)"
        % (f.per_step, f.graph, f.pass_ms, f.time.ms, f.time.step_ms, pct(f.time.threshold)),
    )


# What usually helps, by what a line of the program's does (``nnprofile.analysis.advice.OWN_HINTS``).
OWN_HINTS = {
    "logging": "logging every step: log every N steps",
    "graphs_in_loop": "building graphs inside the loop: build the static graph once, before the loop, and feed it "
    "new data",
    "reading_d": "reading `.d` every step (it copies the array to the host and waits for the device): read it every "
    "N steps",
    "python_data": "converting data in Python: vectorise it with NumPy, prepare it once outside the loop, or let a "
    "data iterator (in its own thread) do it",
    "waiting": "waiting (a sleep, a blocking read, a queue, a lock): overlap it with the computation (a thread, a "
    "prefetching data iterator) or remove it",
    "collection": "Python's garbage collector walking every object the program keeps: keep fewer (one array, not "
    "many small objects), collect less often, or gc.freeze() what is set up before the loop",
}
USUAL_CAUSES = (
    "converting data in Python, reading `.d` every step, building graphs inside the loop and logging every step are "
    "the usual causes"
)


def _own_python(f: facts.OwnPython) -> Tuple[str, str]:
    top: Optional[facts.LineShare] = f.named
    where = (
        ", most of it at %s%s" % (top.where, " (`%s`)" % top.text if top.text else "")
        if top is not None
        else " (no one line's share of it is shown by its samples)"
    )
    helps = "; ".join(OWN_HINTS[h] for h in f.hints) if f.hints else USUAL_CAUSES
    return (
        "%s takes %s of the step%s. What usually helps: %s." % (OTHER_OPENING, pct(f.other.share), where, helps),
        "other %.3f ms of the %.3f ms step (threshold %s); sampled lines: %s"
        % (
            f.other.ms,
            f.other.step_ms,
            pct(f.other.threshold),
            ", ".join("%s %s (%.3f ms)" % (l.where, pct(l.share), l.ms) for l in f.lines),
        ),
    )


# Why a rank straggles, by the part of its step most above the other ranks'.
WHY = {
    "input": "its data comes slower (its storage, its loader, or a data source it alone reads): give it a "
    "local copy, prefetch (DataIterator's use_thread), or balance the shards",
    "forward": "it computes slower: a slower or busier device, or more work on it",
    "backward": "it computes slower: a slower or busier device, or more work on it",
    "update": "its solver update is slower: a slower or busier device",
    "monitor": "it monitors more (usually rank 0): monitor less often, or on one rank after the collective",
    "other": "its own Python between NNabla's calls is slower (logging, saving, checks that other ranks skip)",
}


def ratio_interval(low: Optional[float], high: Optional[float], steps: int) -> str:
    """A straggler's ratio's 95 % interval, in words."""
    if low is None or high is None:
        return "one step: no interval"
    return "95%% interval %.2fx to %.2fx over %d steps" % (low, high, steps)


def straggler_evidence(part: Optional[str], part_ms: float, others_part_ms: float, last_in: Tuple[int, int]) -> str:
    """What singles a straggler out: the part of its step most above the others', and how often it came last."""
    out = []
    if part is not None:
        out.append("%s %.3f ms a step against %.3f ms (the other ranks' median)" % (part, part_ms, others_part_ms))
    if last_in[1]:
        out.append("entered the step's longest collective last in %d of %d steps" % last_in)
    return "; ".join(out)


def _straggler(f: facts.Straggler) -> Tuple[str, str]:
    why = WHY.get(f.part or "", "the evidence does not single out a part of its step")
    singled = straggler_evidence(f.part, f.part_ms, f.others_part_ms, f.last_in)
    return (
        "Rank %d is the straggler, and every other rank waits for it in the collectives: %s." % (f.rank, why),
        "rank %d is busy %.2fx the other ranks' median (%s; threshold %.2fx)%s; the other ranks wait %.3f ms a step "
        "inside collectives"
        % (
            f.rank,
            f.ratio,
            ratio_interval(*f.interval),
            f.threshold,
            "; " + singled if singled else "",
            f.others_wait_ms,
        ),
    )


def _rank_input(f: facts.RankInput) -> Tuple[str, str]:
    return (
        "Rank %d waits for its data: prepare its batches ahead (DataIterator's use_thread, a local cache) so that it "
        "keeps up with its collectives." % f.rank,
        "input takes %.3f ms, %.1f%% of its %.3f ms busy time a step (threshold %.0f%%)"
        % (f.input_ms, 100 * f.input_ms / f.busy_ms, f.busy_ms, 100 * f.threshold),
    )


def _communication(f: facts.Communication) -> Tuple[str, str]:
    share = 100 * f.comm_ms / f.step_ms
    if f.wait_ms > f.comm_ms / 2:
        text = (
            "Communication takes %.1f%% of the step, most of it waiting for slower ranks: make the ranks' work even "
            "(see the straggler) before tuning the collectives." % share
        )
    else:
        text = (
            "Communication takes %.1f%% of the step: reduce fewer, larger buffers (pack the gradients), use a larger "
            "batch per rank, or overlap it with backward (all_reduce_callback on GPUs)." % share
        )
    return (
        text,
        "communication %.3f ms of the %.3f ms step%s, of it %.3f ms waiting (threshold %.0f%%)"
        % (
            f.comm_ms,
            f.step_ms,
            " on average over %d ranks" % f.ranks if f.ranks > 1 else "",
            f.wait_ms,
            100 * f.threshold,
        ),
    )


SAYS: Dict[type, Callable] = {
    facts.InputBound: _input_bound,
    facts.NoHalf: _no_half,
    facts.DominantLayer: _dominant,
    facts.SlowLayers: _slow,
    facts.BetweenLayers: _between,
    facts.HeavyUpdate: _heavy_update,
    facts.CostlyCheckpoint: _checkpoint,
    facts.CostlyEvaluation: _evaluation,
    facts.OwnPython: _own_python,
    facts.Straggler: _straggler,
    facts.RankInput: _rank_input,
    facts.Communication: _communication,
}
