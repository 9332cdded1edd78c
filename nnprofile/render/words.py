"""Small words every renderer uses: a share as a percentage, an interval, a layer's name with its copies, what a
program's graph is for, how the program's own lines were sampled."""

from __future__ import annotations

from typing import Sequence, Tuple, Union

from ..analysis.breakdown import MIN_SHARE_SAMPLES, LayerTime
from ..analysis.facts import LayerName
from ..base.stats import Drift
from ..result.details import SectionInfo


def pct(x: float) -> str:
    return "%.1f%%" % (100 * x)


def bracket(bounds: Tuple[float, float], percent: bool = False) -> str:
    """``[31.0%, 36.1%]`` or ``[1.520, 1.740]``: an interval as the evidence prints it."""
    lo, hi = max(0.0, bounds[0]), bounds[1]
    if percent:
        return "[%.1f%%, %.1f%%]" % (100 * lo, 100 * hi)
    return "[%.3f, %.3f]" % (lo, hi)


def named(l: Union[LayerTime, LayerName]) -> str:
    """A layer's name, with how many unrolled copies it sums."""
    return l.layer if l.copies == 1 else "%s (%d copies)" % (l.layer, l.copies)


def listed(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else "%s and %s" % (", ".join(items[:-1]), items[-1])


def _quoted(names: Sequence[str]) -> str:
    return listed(["'%s'" % n for n in names])


def plural(n: int, word: str) -> str:
    """``word`` as ``n`` of it says it: step, steps."""
    return word if n == 1 else word + "s"


def through(first: str, last: str, count: int) -> str:
    """A run of ``count`` numbered things by its ends: ``first``, ``first and last``, ``first to last``."""
    return first if count == 1 else "%s %s %s" % (first, "and" if count == 2 else "to", last)


def purpose(info: SectionInfo) -> str:
    """What a recorded program's graph is for, from its section's ``info`` (older results: what it ran)."""
    trained = list(info.trained_by or [])
    role = info.role
    if trained:
        return "trained by %s" % ", ".join(trained)
    if role == "backward" or (role is None and info.backward_per_step):
        return "forward and backward, no solver update after its backward"
    if role == "feeds":
        return "forward only, part of training: feeds %s" % _quoted(list(info.feeds or []))
    if role == "updates":
        return "forward only, part of training: updates parameters of %s (F.assign)" % _quoted(list(info.writes or []))
    if role == "evaluation":
        return "forward only: an evaluation, no graph run backward reads its outputs"
    if role == "forward":
        return "forward only: no evaluation, no graph run backward reads its outputs (an inference, an acting policy)"
    return "forward only"


CLOCK_WORDS = {
    "cpu": "one every %g ms of the thread's CPU time",
    "timer": "the profiling timer, at the kernel's tick",
    "thread": "one every %g ms of the wall clock, from a thread of nnprofile's",
}


def clock_words(clock: Tuple[str, float]) -> str:
    """How the samples were taken, in words ("" where that is not known)."""
    words = CLOCK_WORDS.get(clock[0], "")
    return words % clock[1] if "%g" in words else words


# What a step's ``other`` is, in every output's words (the log, the report, the notebook, the advice).
OTHER = "the program's own Python between NNabla's calls"
OTHER_OPENING = OTHER[0].upper() + OTHER[1:]  # (as a sentence begins with it)


def sampled(samples: int, clock: Tuple[str, float]) -> str:
    """``412 samples, one every 1 ms of the thread's CPU time``: how many samples show the program's own lines."""
    how = clock_words(clock)
    return "%s%s" % (counted(samples, "sample"), ", %s" % how if how else "")


def counted(n: int, word: str) -> str:
    """``1 sample``, ``12 samples``."""
    return "%d %s" % (n, plural(n, word))


def own_lines_note(samples: int, clock: Tuple[str, float]) -> str:
    """What a table of the program's own lines shows (with fewer than MIN_SHARE_SAMPLES samples, their counts only:
    said only then)."""
    if samples < MIN_SHARE_SAMPLES:
        return "%s, sampled (%s, fewer than %d: each line's count only, too few for a share)." % (
            OTHER_OPENING,
            sampled(samples, clock),
            MIN_SHARE_SAMPLES,
        )
    return "%s, sampled (%s): each line's share of them (with its 95%% interval), and of other's time per step." % (
        OTHER_OPENING,
        sampled(samples, clock),
    )


def drift_words(d: Drift) -> str:
    """One line for the log's footer, the Info sheet and the notes (empty when steady)."""
    slow_kept = [r for r in d.exempt if r < len(d.levels) and d.levels[r] > 1 + d.threshold]
    if d.levels and len(d.exempt) == len(d.levels):  # a recorded program: every step kept
        return (
            (
                "%d of %d steps ran more than %g%% slower than the usual step (up to %+.0f%%); every step is "
                "kept: a program's steps vary on their own (an input that falls behind, a validation), and "
                "the figures are what it ran" % (len(slow_kept), len(d.levels), d.threshold * 100, (d.high - 1) * 100)
            )
            if slow_kept
            else ""
        )
    if not d.dropped and not d.flagged:
        return ""
    what = (
        "%d of %d rounds ran more than %g%% slower than the machine's usual speed in this "
        "section (up to %+.0f%%)" % (len(d.dropped), len(d.levels), d.threshold * 100, (d.high - 1) * 100)
    )
    kept = (
        (
            "; %d more ran as slow but are kept: they hold work most rounds do not (a validation), whose "
            "share leaving them out would take away" % len(slow_kept)
        )
        if slow_kept
        else ""
    )
    if d.flagged:
        spread = max(d.high - 1, 1 - min(d.levels))
        return (
            "the machine's speed drifted: %s%s; its usual speed is in doubt, so every figure of "
            "this section may be off by up to %.0f%%" % (what, kept, spread * 100)
        )
    return "%s; those rounds are left out of every figure%s" % (what, kept)
