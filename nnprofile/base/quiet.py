"""NNabla's INFO log kept quiet while nnprofile does its own NNabla work, as the command line keeps it.

NNabla logs INFO lines as it starts and as it loads a project or makes a data source ("Initializing CPU
extension...", "DataSource with shuffle(False)"): the command line hides them, and ``nnprofile.profile()``
and a recording's own calibration do likewise, putting the logger's level back after. A program's own
NNabla work, recorded, logs as it always does: that is the program's. Likewise the process's parts a program may
change (``own_process``: the module search path, the modules loaded, ``open``, the recursion limit): nnprofile's own
work uses them as they were when it started.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, Iterator, Optional


@contextlib.contextmanager
def quiet_nnabla(level: int = logging.WARNING) -> Iterator[None]:
    logger = logging.getLogger("nnabla")
    previous = logger.level
    if previous < level:
        logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


# Recursion nnprofile's own work may need beyond the frames already on the stack (a JSON encoder, a workbook writer).
OWN_DEPTH = 3000


class Saved:
    """What of the process nnprofile relies on, as it was when a recording began: the module search path, the
    modules loaded, ``open`` (the builtin and ``io``'s), the recursion limit. A program may change any of them."""

    def __init__(self) -> None:
        import builtins
        import io

        self.path = list(sys.path)
        self.modules = dict(sys.modules)
        self.open = (builtins.open, io.open)
        self.limit = sys.getrecursionlimit()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while nnprofile assembles and writes a window (the program's thread
    waits for it then): that work allocates hundreds of thousands of objects, and each full collection it set off
    walked the program's heap and the window's events (s4-fasttext: 7 collections, 2 s of its 10 s of files). What it
    allocates is freed as it goes (few cycles); the collector's state is the program's again after, as it was."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def own_process(saved: Optional[Saved]) -> Iterator[None]:
    """While nnprofile makes and writes its files, the process as it began (``saved``): a program that rewrites
    ``sys.path``, takes modules out of ``sys.modules`` (nnprofile would import a second copy of them, whose classes
    are not its objects'), replaces ``open`` or lowers the recursion limit takes nothing away that nnprofile uses
    then. The program's own are put back after, as they were."""
    if saved is None:
        yield
        return
    import builtins
    import io

    path, opened, limit = list(sys.path), (builtins.open, io.open), sys.getrecursionlimit()
    changed = {k: sys.modules.get(k) for k, v in saved.modules.items() if sys.modules.get(k) is not v}
    if path != saved.path:
        sys.path[:] = saved.path
    sys.modules.update({k: saved.modules[k] for k in changed})
    builtins.open, io.open = saved.open
    sys.setrecursionlimit(max(limit, saved.limit, _depth() + OWN_DEPTH))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)
        builtins.open, io.open = opened
        for k, module in changed.items():
            if module is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = module
        if sys.path != path:
            sys.path[:] = path


def _depth() -> int:
    frame: Optional[Any] = sys._getframe()
    n = 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


class DeferredLogSetup:
    """NNabla's logging set up where the program imports NNabla, not where nnprofile did before it.

    NNabla's import calls ``logging.basicConfig`` (INFO, on the root logger): from then on any library's INFO lines
    print. A program alone imports NNabla at its own line; under ``nnprofile run`` nnprofile imported it first, and a
    library the program imports before NNabla logged what it logs alone to no one (matplotlib's "generated new
    fontManager", its first run in a fresh home). So what NNabla's import did to the root logger is undone
    (``imported``), and done again where the program, or a library of its, first imports NNabla (``replay``), as
    ``basicConfig`` would: only where the root logger has no handler by then."""

    def __init__(self) -> None:
        root = logging.getLogger()
        self.first = "nnabla" not in sys.modules  # nnprofile's own import is the process's first
        self.before = (root.level, list(root.handlers))
        self.added: list = []
        self.level = root.level
        self._original: Any = None
        self._watching: Any = None

    def imported(self) -> None:
        """nnprofile has imported NNabla: its logging undone until the program imports it."""
        if not self.first:
            return
        root = logging.getLogger()
        level, handlers = self.before
        self.added, self.level = [h for h in root.handlers if h not in handlers], root.level
        if not self.added and self.level == level:
            return
        for h in self.added:
            root.removeHandler(h)
        root.setLevel(level)
        self._watch()

    def _watch(self) -> None:
        import builtins

        original = builtins.__import__

        def watching(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
            if level == 0 and (name == "nnabla" or name.startswith("nnabla.")) and builtins.__import__ is watching:
                importer = (globals or {}).get("__name__", "") or ""
                if not importer.startswith(("nnprofile", "nnabla")):  # (their own imports are not the program's)
                    builtins.__import__ = original
                    self.replay()
            return original(name, globals, locals, fromlist, level)

        self._original, self._watching = original, watching
        builtins.__import__ = watching

    def replay(self) -> None:
        """The program imports NNabla: its logging set up now, as its import would have."""
        root = logging.getLogger()
        if not root.handlers:
            for h in self.added:
                root.addHandler(h)
            root.setLevel(self.level)

    def end(self) -> None:
        """The recording ends: the watcher gone (a program that never imported NNabla)."""
        import builtins

        if self._watching is not None and builtins.__import__ is self._watching:
            builtins.__import__ = self._original
