"""A profile's notes in words: each kind of note (``nnprofile.result.notes``) said from its figures, the same way in
the log, the workbook, the report, the notebook and on the terminal.

``SAY`` holds one function per kind; a kind this version does not know (a newer nnprofile's) is said as its kind
and figures, never dropped.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

from ..result import views
from ..result.notes import TEXT, Note
from . import rules
from .words import plural, through

Figures = Dict[str, Any]


def text(note: Note) -> str:
    """The note in words; a kind this version does not say, or figures it cannot read (a newer or a hand-made
    file), as its kind and figures."""
    say = SAY.get(note.kind)
    if say is not None:
        try:
            return say(note.figures)
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError):
            pass
    return "%s: %s" % (note.kind, ", ".join("%s %s" % kv for kv in note.figures.items()))


def texts(notes: Sequence[Note]) -> List[str]:
    return [text(n) for n in notes]


def said(value: Any) -> Any:
    """A header's value as an output shows it: a note in words, anything else as it is."""
    return text(value) if isinstance(value, Note) else value


def _first(items: Sequence[str]) -> str:
    """The first five of a list, and how many more."""
    more = "; and %d more" % (len(items) - 5) if len(items) > 5 else ""
    return "; ".join(items[:5]) + more


# -- a recording's assembly ----------------------------------------------------------------


def _fault(f: Figures) -> str:
    return "could not be recorded at %s (%d %s); the program's calls there went on unrecorded" % (
        f["where"],
        f["times"],
        plural(f["times"], "time"),
    )


def _own_work(f: Figures) -> str:
    own, step = f["own_ms"], f["step_ms"]
    return (
        "nnprofile's own work between the program's calls took %.3f ms of each kept step (the median), %.0f%% "
        "of the step's %.3f ms: it is left out of every figure, but in steps this short the program's own code "
        "after it runs from colder caches, so that 'other' (and the step) can read higher than the program "
        "runs without nnprofile" % (own, 100.0 * own / step, step)
    )


def _held_to_parts(f: Figures) -> str:
    return (
        "in %d of the %d kept steps the hooks' cost as estimated left less than the step's timed parts; "
        "there the step is the sum of its parts (the program's own time reads 0)" % (f["steps"], f["kept"])
    )


def _lean_step(f: Figures) -> str:
    steps = f["plain_steps"]
    factors = ", ".join("%s %.3f" % (k, v) for k, v in f["factors"].items()) or "none"
    return (
        "the step and its passes are as the program ran without the function hooks: %d steps run without them "
        "(steps %d to %d) took %.3f ms a step, where the kept steps' %d of their shape read %.3f ms with the hooks' "
        "cost as estimated taken off; each pass was scaled to them (%s), its layers keeping their shares, %s%s%s"
        % (
            len(steps),
            min(steps),
            max(steps),
            f["step_ms"],
            f["typical"],
            f["estimated_ms"],
            factors,
            "the %s passes to the time of the program's own calls of them" % " and ".join(f["timed"])
            if f.get("timed")
            else "each to its share of the time between the program's calls (its passes' own calls were not timed)",
            "; %s ran only in steps of another shape: estimated" % ", ".join(f["estimated"])
            if f.get("estimated")
            else "",
            "; the rest of the %d kept steps of another shape (beyond their passes and the program's own calls) was "
            "scaled as that of the others, by %.3f" % (f["kept"] - f["typical"], f["rest"])
            if f.get("rest") is not None and f["kept"] > f["typical"]
            else "",
        )
    )


def _hooks_estimated(f: Figures) -> str:
    off = f.get("off_ms")
    return (
        "the step and its passes are the kept steps' less the hooks' cost as estimated%s: %d steps ran without the "
        "hooks after them, where %d like the kept steps (as many calls, no pass seen) are needed to measure the "
        "program without them (the first window's kept steps are followed by 20, as long as the program runs)"
        % (" (%.3f ms a step)" % off if off is not None else "", f["plain_steps"], f["needed"])
    )


def _every_step_counts(f: Figures) -> str:
    return (
        "every kept step counts, also those the machine ran slow in (steps %s): leaving them out "
        "would leave out every call of %s" % (", ".join(str(s) for s in f["slow_steps"]), "; ".join(f["emptied"]))
    )


def _unresolved(f: Figures) -> str:
    entries = [
        "%s, %.3f us a call against %.3f us" % (label, mean / 1e3, cost / 1e3) for label, mean, cost in f["entries"]
    ]
    return (
        "shorter than the timing's own cost estimated inside them, so shown at a tenth of what was "
        "measured (an upper bound; the rest of that cost taken off): %s" % _first(entries)
    )


def _spoiled(f: Figures) -> str:
    return (
        "few calls ran undisturbed by other work for these figures (they stand on those few, or on "
        "every call where none did): %s" % _first(f["entries"])
    )


def _after_the_loop(f: Figures) -> str:
    ran = [
        "graph '%s' %s, %.3f ms in all"
        % (
            g["graph"],
            " and ".join(
                "%d %s pass%s" % (n, phase, "" if n == 1 else "es")
                for phase, n in sorted(g["passes"].items(), reverse=True)
            ),
            g["ms"],
        )
        for g in f["graphs"]
    ]
    return "after the last step (work after the loop: a final evaluation, saving), in no figure: %s" % "; ".join(ran)


INPUT = (
    "input (load_dataset) is the time the program waited in DataIterator.next(); NNabla's "
    "iterators load the next batch in a thread while the step runs (use_thread, the default), so "
    "it is the wait, not the loading"
)
CALLBACK = (
    "the program reduces its gradients with all_reduce_callback: NNabla's backward runs that "
    "communication itself, where no hook sees it, so it is inside backward_all and the "
    "backward_function entries, not separated from them (the call that sets it up is timed)"
)
HOOKS_OFF = (
    "the program ended while steps ran without the hooks (those after the kept steps, the program "
    "as it runs alone): what it did after its last step (a final evaluation, saving) was not seen"
)


def _undetermined(f: Figures) -> str:
    return (
        "under auto_forward, functions that no backward reached are in the graph '%s': the rule "
        "(a function belongs to the graph whose backward reaches it) cannot tell their graph" % f["graph"]
    )


# -- the run: how it went, and what it wrote -----------------------------------------------


def _skip_shrunk(f: Figures) -> str:
    return "the program ran %d %s, fewer than --skip-first %d and one active step: the skip was shrunk to %d" % (
        f["steps"],
        plural(f["steps"], "step"),
        f["skip_first"],
        f["skip"],
    )


NO_STEPS = (
    "no steps were found (no solver update seen, no nnprofile.step(), no repeating pass): "
    "the whole run is one step; mark the end of each step with nnprofile.step()"
)
NOTHING = (
    "nothing was recorded: the program ran no NNabla function in this process (one that "
    "trains in a child process, as multiprocessing starts it, is recorded by "
    "nnprofile.record() inside that child)"
)
UNCOUNTED = (
    "the program's steps show only as passes (no solver update, no nnprofile.step()), "
    "which only the hooks see: after the first window its steps could not be counted, "
    "so no other window was recorded; call nnprofile.step() at each step's end"
)
# Kinds no run makes any more, said for the records that hold them: "written_early", a window's record written as its
# kept steps were done, before it was assembled once, after the steps that measure the hooks' cost (issue 59).
RETIRED = frozenset({"written_early"})
EARLY = (
    "written when the window's kept steps were done, this record alone; the steps that measure what "
    "the hooks cost in this program were still to come (the whole window's files replace it; "
    "'nnprofile report' renders the others from it meanwhile)"
)


def _other_thread(f: Figures) -> str:
    return (
        "the program's NNabla work ran in another thread (%d functions there): nnprofile records "
        "the thread that started it, so none of it is in these figures; put nnprofile.record() "
        "around the loop inside that thread" % f["functions"]
    )


def _window_unfilled(f: Figures) -> str:
    return "the program ended before window %d filled: it holds %s" % (f["window"], rules.span(f["kept_steps"]))


def _no_window(f: Figures) -> str:
    return "no window was recorded: the program ended first (%d steps%s)" % (
        f["steps"],
        ", waiting for a signal" if f["on_demand"] else "",
    )


def _ended(f: Figures) -> str:
    """How the program ended: its failure, its own exit status, or normally."""
    if f.get("failure"):
        return str(f["failure"])
    if f.get("status") is not None:
        return "it exited with status %s" % f["status"]
    return "it ended normally"


def _after_windows(f: Figures) -> str:
    measured = f.get("measured_steps") or 0  # (after the window's kept steps, without the hooks)
    where = (
        "window %d and the %d steps after it without the hooks" % (f["window"], measured)
        if measured
        else "the end of window %d" % f["window"]
    )
    return (
        "after step %d (%s) the program ran %d more %s unrecorded, then %.3f s after its last step (work after the "
        "loop: a final evaluation, saving), and %s"
        % (f["last_step"], where, f["more_steps"], plural(f["more_steps"], "step"), f["tail_s"], _ended(f))
    )


def _window_not_written(f: Figures) -> str:
    return "window %d could not be written (%s)" % (f["window"], f["reason"])


# -- a project's run, and a merge ------------------------------------------------------------


def _backend_missing(f: Figures) -> str:
    return "the project asks for %s, but nnabla-ext-cuda is not installed: running on the CPU" % f["backend"]


def _dataset_cache(f: Figures) -> str:
    return "dataset '%s' was read from the project's cache %s, as NNabla reads it (complete, and newer than %s)" % (
        f["dataset"],
        f["cache"],
        f["uri"],
    )


def _left_out(f: Figures) -> str:
    sources = ["%s %d" % (f["source"], n) for n in f["numbers"]]
    their = "their" if len(sources) > 1 else "its"
    return (
        "%s: every round of %s ran more than the drift threshold slower than the others' usual speed "
        "and is left out of the pooled figures, as the drift rule leaves out slow rounds; %s own "
        "figures are in %s own result" % (f["section"], " and ".join(sources), their, their)
    )


def _merged_ranks(f: Figures) -> str:
    folders, ranks = f["folders"], f["ranks"]
    where = through("%s/" % folders[0], "%s/" % folders[-1], ranks)
    return (
        "a merged view of %d %s: each figure pools every rank's calls (the average rank); each rank's "
        "own result is in %s" % (ranks, plural(ranks, "rank"), where)
    )


def _pooled(f: Figures) -> str:
    """A merged view's sampling: the first run's or rank's, then how they were pooled."""
    said = text(Note.from_json(f["of"]))
    if "ranks" in f:
        ranks = f["ranks"]
        over = "%s %s" % (plural(len(ranks), "rank"), through(str(ranks[0]), str(ranks[-1]), len(ranks)))
        return "%s; pooled over %s, each rank's steps a round" % (said, over)
    return "%s; in %d fresh processes, rounds pooled" % (said, f["runs"])


def _clock_collective(f: Figures) -> str:
    return (
        "aligned at the end of the first %s of step %d, which every rank leaves together (the ranks "
        "ran on %d hosts)" % (f["collective"], f["step"], f["hosts"])
    )


def _parameters_unread(f: Figures) -> str:
    return (
        "the parameter files (%s) gave %d of the %d parameters the networks use: the rest are fresh, as the network "
        "initialises them (a damaged file, or one of another network): the times hold, the values are not the "
        "project's" % (", ".join(str(x) for x in f["files"]), f["loaded"], f["used"])
    )


def _hooks_shared(f: Figures) -> str:
    return (
        "another thread of the program ran NNabla functions (%d seen; they are in no figure): NNabla's global "
        "function hooks crash a process whose threads run functions together, so they came off at the next step's "
        "end and stayed off: from then on no function is timed (the steps, solvers and inputs are)" % f["functions"]
    )


def _fixed(words: str) -> Callable[[Figures], str]:
    return lambda f: words


# Notes that warn: what could not be recorded or written, a run whose steps went unseen. A command run with --quiet
# still says them on stderr (``nnprofile.cli.common.warnings``).
WARNINGS = frozenset(
    (
        "fault",
        "other_thread",
        "hooks_shared",
        "parameters_unread",
        "nothing_recorded",
        "assembly_failed",
        "no_steps_found",
        "window_not_written",
        "no_window",
        "steps_uncounted",
    )
)

SAY: Dict[str, Callable[[Figures], str]] = {
    TEXT: lambda f: str(f.get("text", "")),
    "fault": _fault,
    "input_is_wait": _fixed(INPUT),
    "callback_reduce": _fixed(CALLBACK),
    "undetermined_graph": _undetermined,
    "every_step_counts": _every_step_counts,
    "unresolved": _unresolved,
    "own_work": _own_work,
    "held_to_parts": _held_to_parts,
    "lean_step": _lean_step,
    "hooks_estimated": _hooks_estimated,
    "spoiled": _spoiled,
    "after_the_loop": _after_the_loop,
    "hooks_off_at_end": _fixed(HOOKS_OFF),
    "skip_shrunk": _skip_shrunk,
    "no_steps_found": _fixed(NO_STEPS),
    "other_thread": _other_thread,
    "hooks_shared": _hooks_shared,
    "parameters_unread": _parameters_unread,
    "nothing_recorded": _fixed(NOTHING),
    "assembly_failed": lambda f: (
        "%s; its %d recorded calls are in no figure (the program's run, its exit status and these files are not "
        "touched by it; --save-events keeps them for a bug report)" % (f["error"], f["events"])
    ),
    "window_unfilled": _window_unfilled,
    "no_window": _no_window,
    "exit_status": lambda f: "the program exited with status %s" % f["status"],
    "after_windows": _after_windows,
    "steps_uncounted": _fixed(UNCOUNTED),
    "written_early": _fixed(EARLY),
    "window_not_written": _window_not_written,
    "backend_missing": _backend_missing,
    "dataset_cache": _dataset_cache,
    "no_layers": _fixed("per-layer entries were skipped (--no-layers)"),
    "zero_weights": _fixed("weights and biases were zeroed (--zero-weights), as nnabla_cli profile does"),
    "synthetic": _fixed(
        "the data was synthetic (--synthetic): random batches of the declared "
        "shapes; load_dataset does not measure reading a dataset"
    ),
    "left_out": _left_out,
    "merged_ranks": _merged_ranks,
    "sampling_pooled": _pooled,
    "clock_one_host": lambda f: "the ranks ran on one host (%s) and share its monotonic clock" % f["host"],
    "clock_collective": _clock_collective,
    "clock_not_aligned": lambda f: (
        "not aligned: the ranks ran on %d hosts and share no collective in a common "
        "step; each rank's timeline starts at its first kept step" % f["hosts"]
    ),
    **rules.SAY,  # how a run was measured (its header's ``sampling``, ``schedule`` and ``steps``)
}

views.register("note_text", text)
