"""What other work on the machine took of a run, in words: one sentence every output says the same way."""

from __future__ import annotations

from typing import Optional

from ..result import Profile


def sentence(profile: Profile) -> Optional[str]:
    """``other processes took 23% of the measured time ...``; None for a result that did not measure it."""
    found = profile.interference()
    if found is None:
        return None
    if not found.measured:
        return (
            "not measured (the kernel's accounting of this thread is not available here): every figure includes "
            "what other work on the machine took"
        )
    share = found.share
    if share is None:
        taken = "other work's share of the measured time is not known (the kernel does not give this thread's wait)"
    else:
        taken = (
            "other processes took %.0f%% of the measured time (the profiled thread waited %.1f ms for a CPU in "
            "%.1f ms, the kernel's own count; %d involuntary context switches)"
            % (100 * share, (found.waited_ns or 0) / 1e6, found.timed_ns / 1e6, found.switches)
        )
    held = (
        "%d of %d timed samples were held up by it (their thread off its CPU): each counts the time it ran, what "
        "other work took of it taken off (a wait held up is left out)" % (found.disturbed, found.samples)
        if found.disturbed
        else "no timed sample was held up by it"
    )
    step = (
        "; a step's time has what it waited for a CPU taken off"
        if getattr(profile.header, "mode", "") == "record" and share
        else ""
    )
    return "%s; %s%s" % (taken, held, step)
