"""``nnprofile.record()``: a block of code recorded, the API's way into a ``Recording``
(``nnprofile.api.programs``), its schedule in torch.profiler's words."""

from __future__ import annotations

import sys
from typing import Any, Callable, MutableMapping, Optional, Sequence

from ..recording.schedule import Schedule, make_schedule
from ..result import Profile
from .programs import PathLike, Recording


def record(
    outdir: Optional[PathLike] = None,
    skip_first: Optional[int] = None,
    active: int = Schedule.active,
    save_events: bool = False,
    name: str = "recording",
    namespaces: Sequence[MutableMapping[str, Any]] = (),
    merge_wait: Optional[float] = None,
    wait: int = Schedule.wait,
    warmup: Optional[int] = None,
    repeat: int = Schedule.repeat,
    max_windows: int = Schedule.max_windows,
    on_window: Optional[Callable[[Profile], None]] = None,
    on_demand: bool = False,
    signal: str = Schedule.signal,
) -> Recording:
    """Record the NNabla work of a block of code: ``with nnprofile.record() as rec: ...; rec.profile``.

    The schedule is torch.profiler's: ``wait`` steps untouched, ``warmup`` (``skip_first``) recorded and
    set aside, ``active`` kept; ``repeat`` such windows (0: until the block ends), each written as it
    closes (to ``outdir/window-K`` where there are several) and handed to ``on_window(profile)``;
    ``on_demand``: a window each time the process gets ``signal`` (``nnprofile capture PID``).

    Solvers and communicators made before the block are timed too when they are global names of the
    module that calls ``record`` (a script's, or a notebook's), or in ``namespaces``. Under
    ``mpirun``, see ``Recording`` (``merge_wait``: how long rank 0 waits for the other ranks).
    """
    caller = sys._getframe(1).f_globals
    return Recording(
        outdir=outdir,
        name=name,
        save_events=save_events,
        namespaces=tuple(namespaces) + (caller,),
        merge_wait=merge_wait,
        on_window=on_window,
        schedule=make_schedule(
            wait=wait,
            warmup=warmup,
            skip_first=skip_first,
            active=active,
            repeat=repeat,
            max_windows=max_windows,
            on_demand=on_demand,
            signal=signal,
        ),
    )
