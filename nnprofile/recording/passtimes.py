"""The program's own calls of a pass (``loss.forward()``, ``loss.backward()``, ``nn.forward_all(...)``), timed where it
makes them, in the steps without the function hooks too.

A static pass is seen through NNabla's function hooks only, and they cost some microseconds a function: the steps run
without them (``recorder.CALIBRATION``) are the program as it runs alone, and their passes unseen. So the program's
own files (its script, and the modules under its folder) are compiled with every call of a method named ``forward``,
``backward`` or ``forward_all`` read as ``__nnprofile_pass__(__nnprofile_clock__(site), phase, <the call>, site)``:
the call itself is the same bytecode in the same frame (the hooks read the call site from that frame; a traceback
shows the same lines), evaluated in the same order, its result handed back. The note takes the clock as it returns
and keeps (start, end, phase) where the call returned None (NNabla's passes do; a method of the program's own that
builds a graph returns what it built) on the recorded thread while a window is open. Between windows and after the
recording, a note is a clock read and a call. In the steps without the hooks, a call at a site the window's hooked
steps seldom called (a validation every few steps) puts the hooks back on before it runs, until its step ends
(``PassTimes.unusual``): what the steps without the hooks would hide is recorded, outside the kept steps. The
compiled code is never written to the program's ``__pycache__``: a run without nnprofile compiles the program as it
always does. Where a file cannot be parsed or compiled so, it runs as Python compiles it.
"""

from __future__ import annotations

import ast
import builtins
import importlib.machinery
import os
import sys
import threading
from typing import Any, Callable, Dict, Optional, Sequence, Set

NOTE, CLOCK = "__nnprofile_pass__", "__nnprofile_clock__"
SELDOM = 4  # a site called in fewer than 1 in this many of the hooked steps is no usual work of a step (``unusual``)
METHODS = {"forward": "forward", "backward": "backward", "forward_all": "forward"}
_OUTSIDE = ("site-packages", "dist-packages")  # (a virtual environment inside the program's folder)
_NNPROFILE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Python's own library and the environment's (a program run from "/" or from the folder above a venv)
_PYTHON = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)})


class PassTimes:
    """The notes of the program's pass calls (``note``), into the open window's ``passes``; and, as a call begins in
    the steps without the hooks, whether its site is one the window's hooked steps call (``begin``)."""

    def __init__(self, host: Any) -> None:
        self.host = host  # the recorder: capturing, program_thread, window, clock, hooks_on, steps, _switch_hooks
        self.window: Any = None  # the window the sites below are of
        self.sites: Dict[str, Set[int]] = {}  # a site -> the hooked steps (their count) that called it
        self.steps: Set[int] = set()  # the hooked steps that called a pass

    def names(self) -> Dict[str, Any]:
        """What the compiled code calls (by name, among the builtins)."""
        host, ident = self.host, threading.get_ident
        clock = host.clock

        def begin(site: str = "") -> Any:
            if host.capturing and not host.hooks_on:
                try:
                    if ident() == host.program_thread:
                        self.unusual(site, sys._getframe(1))
                except Exception:  # a guest: the program's call goes on
                    pass
            return clock()

        def note(start: int, phase: str, result: Any, site: str = "") -> Any:
            if result is None and host.capturing:
                try:
                    if ident() == host.program_thread:
                        host.window.passes.append((start, clock(), phase, site))
                        if host.hooks_on:
                            self.seen(site)
                except Exception:  # a guest: the program's call has returned, and its result goes back
                    pass
            return result

        return {NOTE: note, CLOCK: begin}

    def seen(self, site: str) -> None:
        """A pass called at ``site`` in a hooked step of the open window."""
        if self.window is not self.host.window:
            self.window, self.sites, self.steps = self.host.window, {}, set()
        step = self.host.steps.done
        self.steps.add(step)
        self.sites.setdefault(site, set()).add(step)

    def unusual(self, site: str, frame: Any) -> None:
        """A pass about to be called at ``site`` in a step without the hooks: where the window's hooked steps called
        it in fewer than a quarter of them (a validation every 5 steps or fewer often, an evaluation between epochs:
        work the steps without the hooks would hide), the hooks go on until the step ends, so that its passes are
        recorded, and the step (switched within) is neither kept nor one without the hooks. A site called every
        other step (a generator trained every second step) or third is the steps' usual work: its steps stay plain,
        as those of the kept steps' shapes. A call outside the step loop (``frame``: the program's, making it) is
        work past the loop, which ``Recorder.past_the_loop`` puts the hooks back on for, once the last step ended."""
        host = self.host
        if self.window is not host.window or not self.steps or not host.calibrate:
            return
        if SELDOM * len(self.sites.get(site, ())) < len(self.steps) and not host._outside_loop(frame):
            host._switch_hooks(True)


class _Calls(ast.NodeTransformer):
    """``x.forward(...)`` -> ``__nnprofile_pass__(__nnprofile_clock__(), "forward", x.forward(...), "file:line:col")``
    (the call's site: which of the program's calls of a pass it was)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in METHODS:
            return node
        site = ast.Constant("%s:%d:%d" % (self.path, node.lineno, node.col_offset))
        clock = ast.Call(ast.Name(CLOCK, ast.Load()), [site], [])
        wrapped = ast.Call(ast.Name(NOTE, ast.Load()), [clock, ast.Constant(METHODS[func.attr]), node, site], [])
        return ast.copy_location(wrapped, node)


def compiled(source: bytes, path: str) -> Optional[Any]:
    """The program's file compiled with its pass calls noted; None where it cannot be (it is compiled as is)."""
    try:
        tree = compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        tree = ast.fix_missing_locations(_Calls(path).visit(tree))
        return compile(tree, path, "exec", dont_inherit=True)
    except Exception:
        return None


def own_file(path: str, root: str) -> bool:
    """A file of the program's own: under its folder, outside any installed packages, Python's library and
    nnprofile."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return False
    parts = real.split(os.sep)
    return (
        real.startswith(root.rstrip(os.sep) + os.sep)
        and not any(p in _OUTSIDE for p in parts)
        and not any(real.startswith(p.rstrip(os.sep) + os.sep) for p in [_NNPROFILE] + _PYTHON)
    )


class _Loader(importlib.machinery.SourceFileLoader):
    """A module of the program's own: compiled with its pass calls noted, never from or into its bytecode cache."""

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        data = self.get_data(path)
        return compiled(data, path) or compile(data, path, "exec", dont_inherit=True)


class Finder:
    """An import finder for the program's own modules: Python's own finding, this loader. The program's own are under
    its folder (``root``), or under a folder on ``sys.path`` that holds that folder (a project's root, as a script's
    ``sys.path.append("../..")`` puts it there, its shared modules beside the script's folder)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._seen: Any = None
        self._roots = [self.root]
        self._entries: Dict[str, bool] = {}

    def roots(self) -> Sequence[str]:
        """The program's folders, as ``sys.path`` stands (read again where it changed)."""
        key = tuple(sys.path)  # (compared at each import: NNabla's functions import, and fail, at each call)
        if key != self._seen:
            folders = [_folder(p) for p in key if isinstance(p, str)]
            self._seen, self._roots = key, [self.root] + [r for r in folders if r and _holds(r, self.root)]
            self._entries = {}
        return self._roots

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Any:
        try:
            roots = self.roots()
            # Only where the module may be found in the program's folders: an import elsewhere (a library's, a
            # failing one that NNabla makes at each function call) costs no second search.
            where = [e for e in (sys.path if path is None else path) if isinstance(e, str) and self._own_entry(e)]
            if not where:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, where, target)
            if spec is None or (path is None and where != [e for e in sys.path if isinstance(e, str)]):
                # (found among the program's folders: where Python finds it first, it must be there too)
                spec = importlib.machinery.PathFinder.find_spec(fullname, path, target) if spec is not None else None
            loader = getattr(spec, "loader", None)
            if spec is None or type(loader) is not importlib.machinery.SourceFileLoader:
                return None
            if not spec.origin or not any(own_file(spec.origin, r) for r in roots):
                return None
            spec.loader = _Loader(loader.name, loader.path)
            return spec
        except Exception:  # Python finds it as it would
            return None

    def _own_entry(self, entry: str) -> bool:
        """Whether a folder of the path may hold the program's own modules (under one of its folders), cached."""
        own = self._entries.get(entry)
        if own is None:
            folder = _folder(entry)
            own = self._entries[entry] = folder is not None and any(_holds(r, folder) for r in self.roots())
        return own


def _folder(entry: str) -> Optional[str]:
    """A ``sys.path`` entry as a folder that may hold the program's own (never the file system's root, nor Python's
    own: neither is a project's)."""
    try:
        real = os.path.realpath(entry or os.getcwd())
    except (OSError, ValueError):
        return None
    if real == os.sep or any(_holds(p, real) for p in _PYTHON + [_NNPROFILE]):
        return None
    return real


def _holds(folder: str, path: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def install(times: PassTimes, root: str) -> Callable[[], None]:
    """The program's own modules compiled so from now on (what their code calls put among the builtins, where it
    stays: a thread of the program's may run it after the recording; the note is then a clock read and a call);
    returns the undoing of the finder."""
    names = times.names()
    for name, value in names.items():
        setattr(builtins, name, value)
    finder = Finder(root)
    sys.meta_path.insert(0, finder)

    def remove() -> None:
        try:
            sys.meta_path.remove(finder)
        except ValueError:
            pass
        # What stays among the builtins holds nothing of the recording: its closures held the recorder, and through
        # it every event and the program's graphs, alive until the process ended (400,000 objects on fastText,
        # 0.3 s of the interpreter's own end)
        for name, value in names.items():
            if getattr(builtins, name, None) is value:
                setattr(builtins, name, _DETACHED[name])

    return remove


def _passed(start: int, phase: str, result: Any, site: str = "") -> Any:
    return result


def _unclocked(site: str = "") -> int:
    return 0


# What the compiled code calls once its recording is over: the call's result goes back, nothing is noted
_DETACHED: Dict[str, Any] = {NOTE: _passed, CLOCK: _unclocked}


def script_code(path: str) -> Optional[Any]:
    """The program's script compiled so (None: as Python compiles it)."""
    try:
        with open(path, "rb") as f:
            return compiled(f.read(), path)
    except OSError:
        return None
