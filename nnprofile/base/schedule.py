"""A recorded program's schedule, as torch.profiler's (wait, warmup, active, repeat), and its options: one block
of ``nnprofile run``'s parser and ``%%nnprofile``'s, and the signals that ask for a window on demand.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from .options import non_negative_int, positive_int

SCHEDULE_EXAMPLE = (
    "a long training: a window of 20 steps every 500 or so, until the program ends, the last 10 windows "
    "kept:  nnprofile run --wait 480 --warmup 0 --active 20 --repeat 0 --max-windows 10 train.py; "
    "or when asked:  nnprofile run --on-demand train.py  then  nnprofile capture PID"
)


STATUS_FILE = "on-demand.json"  # where a run recording on demand says it listens (its pid, its signal)


@dataclass(frozen=True)
class Schedule:
    """How many steps each phase of a window holds, and how many windows."""

    wait: int = 0
    warmup: int = 1
    active: int = 10
    repeat: int = 1  # windows; 0: one after the other until the program ends
    max_windows: int = 0  # the files of the last N windows are kept (0: all)
    on_demand: bool = False  # a window only when asked (a signal), as many times as asked
    signal: str = "USR1"

    def __post_init__(self) -> None:
        for name in ("wait", "warmup", "active", "repeat", "max_windows"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError("%s must be a whole number, not %r" % (name, value))
            if value < (1 if name == "active" else 0):
                raise ValueError(
                    "%s must be %s, not %d" % (name, "1 or more" if name == "active" else "0 or more", value)
                )
        if self.on_demand and self.repeat not in (0, 1):
            raise ValueError(
                "on demand, a window comes each time it is asked for: --repeat %d means nothing with "
                "--on-demand" % self.repeat
            )
        if self.on_demand and self.wait:
            raise ValueError(
                "on demand, a window begins when asked for: --wait %d means nothing with --on-demand" % self.wait
            )

    @property
    def windowed(self) -> bool:
        """Whether each window gets a folder of its own (OUTDIR/window-K): several windows, or on demand."""
        return self.on_demand or self.repeat != 1


# The signals that may ask for a window: the user-defined ones. Any other (TERM, INT, SEGV, ...) is one a program
# or its launcher depends on for its own handling.
WINDOW_SIGNALS = ("USR1", "USR2")


def window_signal(text: str) -> str:
    """USR1 or USR2 (SIGUSR1, usr2, ... as well)."""
    name = text.upper()
    name = name[3:] if name.startswith("SIG") else name
    if name not in WINDOW_SIGNALS:
        raise argparse.ArgumentTypeError("%r: a window is asked for by USR1 or USR2 only" % text)
    return name


def add_schedule(parser: Any, on_demand: bool = True) -> None:
    """The schedule's options (``nnprofile.recording.schedule.Schedule``) as one group of a parser."""
    group = parser.add_argument_group(
        "schedule (as torch.profiler's: wait, warmup, active, repeat)",
        "Each window: --wait steps untouched (no hook), --warmup recorded and set aside, --active kept; "
        "--repeat windows. One window: its files in OUTDIR. Several (or on demand): window K in OUTDIR/window-K "
        "as soon as it closes, and in OUTDIR the view over all of them. Example, " + SCHEDULE_EXAMPLE,
    )
    group.add_argument(
        "--wait",
        type=non_negative_int,
        default=Schedule.wait,
        metavar="N",
        help="steps the program runs untouched before each window (default 0)",
    )
    group.add_argument(
        "--warmup",
        "--skip-first",
        dest="warmup",
        type=non_negative_int,
        default=Schedule.warmup,
        metavar="N",
        help="steps recorded and set aside first in each window, while buffers are built "
        "(default 1; --skip-first is its older name)",
    )
    group.add_argument(
        "--active",
        type=positive_int,
        default=Schedule.active,
        metavar="N",
        help="steps kept in each window (default 20)",
    )
    group.add_argument(
        "--repeat",
        type=non_negative_int,
        default=Schedule.repeat,
        metavar="N",
        help="windows, 0: one after the other until the program ends (default 1). Not the "
        "project profile's --repeat, which runs fresh processes",
    )
    group.add_argument(
        "--max-windows",
        type=non_negative_int,
        default=Schedule.max_windows,
        metavar="N",
        help="keep the files of the last N windows only (default 0: all); the view keeps every window's figures",
    )
    if on_demand:
        _add_on_demand(group)


def _add_on_demand(group: Any) -> None:
    """Windows on demand: the flag, and the signal that asks for one."""
    group.add_argument(
        "--on-demand",
        action="store_true",
        help="no window until asked: run untouched, then record a window each time the process "
        "gets the signal (nnprofile capture PID), as many times as asked",
    )
    group.add_argument(
        "--signal",
        default=None,
        type=window_signal,
        metavar="USR1|USR2",
        help="the signal that asks for a window on demand (default USR1; USR2 where the program handles USR1 itself)",
    )
