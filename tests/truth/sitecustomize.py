"""An instrument that is no part of nnprofile: what a program's steps take, measured on the program run without
nnprofile, to check nnprofile's figures against (tests/test_corpus.py, benchmarks/truth.py).

Loaded at the interpreter's start through PYTHONPATH where NNPROFILE_TRUTH names a file. Every solver the program
makes is a thin stand-in whose ``update()`` notes the clock as it returns (NNabla's factories, wherever bound, and
the program's own subclasses of ``Solver``, patched as their class statements finish). Where NNPROFILE_TRUTH_SOURCES
names the program's folder, its own modules (and its main script, run by ``truth_main.py``) are compiled with every
call of a ``forward``, ``backward`` or ``forward_all`` method made a call through ``__truth_pass__``, which notes the
clock around it when it runs on an NNabla variable (NNabla's ``Variable`` is a Cython class: its methods cannot be
wrapped, the program's calls of them can); nothing else of the program is touched. At the program's end the file
holds, for each solver in the order made, its class and the end of each update (ns of the thread's own clock:
``time.perf_counter_ns`` less the time the thread waited for a CPU, the kernel's count in its ``schedstat``, so that
a program measured beside other work reads as nnprofile's figures read it, other work's share left out); each pass as
the program called it (its place: file, line and method; its start and end); and what one update's and one pass's
note cost, measured here on stand-ins of nothing.

This file imports nothing of nnprofile's and never will: it is the truth nnprofile's figures are held to.
"""

import ast
import atexit
import builtins
import json
import os
import sys
import threading
import time

_PATH = os.environ.get("NNPROFILE_TRUTH")
_SOURCES = os.environ.get("NNPROFILE_TRUTH_SOURCES")
_WAITS = {}  # thread id -> its schedstat file (or -1: none)


def _waited():
    """The time this thread has waited for a CPU so far (ns; 0 where the kernel does not say)."""
    tid = threading.get_ident()
    fd = _WAITS.get(tid)
    if fd is None:
        try:
            fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            fd = -1
        _WAITS[tid] = fd
    if fd < 0:
        return 0
    try:
        return int(os.pread(fd, 64, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _clock():
    return time.perf_counter_ns() - _waited()


_SOLVERS = []  # [class name, [update ends]] in the order made
_SITES = []  # "file:line:method" of each call rewritten
_PASSES = []  # (site, start, end) of each pass the program called
_VARIABLE = []  # NNabla's Variable class, once loaded


class _Noted:
    """A solver whose ``update()`` notes when it returned; every other attribute is the solver's own."""

    __slots__ = ("_solver", "_ends")

    def __init__(self, solver, ends):
        object.__setattr__(self, "_solver", solver)
        object.__setattr__(self, "_ends", ends)

    @property
    def __class__(self):
        return type(self._solver)

    def update(self, *args, **kwargs):
        out = self._solver.update(*args, **kwargs)
        self._ends.append(_clock())
        return out

    def __getattr__(self, name):
        return getattr(self._solver, name)

    def __setattr__(self, name, value):
        setattr(self._solver, name, value)


def _factory(make, name):
    def made(*args, **kwargs):
        ends = []
        _SOLVERS.append([name, ends])
        return _Noted(make(*args, **kwargs), ends)

    made.__name__, made.__doc__ = getattr(make, "__name__", name), getattr(make, "__doc__", None)
    made._noting = True
    return made


def _own_update(cls):
    """A program's own solver class: its ``update`` notes too (one list per instance)."""
    original = cls.__dict__.get("update")
    if original is None or getattr(original, "_noted", False):
        return

    def update(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        ends = self.__dict__.get("_truth_ends") if hasattr(self, "__dict__") else None
        if ends is None:
            ends = []
            _SOLVERS.append([cls.__name__, ends])
            try:
                self.__dict__["_truth_ends"] = ends
            except Exception:
                pass
        ends.append(_clock())
        return out

    update._noted = True
    cls.update = update


_MADE = {}  # id(a factory) -> its stand-in


def _patch(module):
    """A solver module's factories made noting ones (as NNabla loads it: the program's import order stands)."""
    for name in dir(module):
        value = getattr(module, name)
        if getattr(value, "_noting", False):
            continue
        if name[:1].isupper() and callable(value) and not isinstance(value, type) and id(value) not in _MADE:
            _MADE[id(value)] = _factory(value, name)
        if id(value) in _MADE:
            setattr(module, name, _MADE[id(value)])
    if module.__name__ == "nnabla.solver":
        _watch(module.Solver)


class _After:
    """An import finder for NNabla's solver modules: each patched as soon as it has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in ("nnabla.solver", "nnabla.solvers"):
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader

        class Then:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                _patch(module)

        spec.loader = Then()
        return spec


def _install():
    sys.meta_path.insert(0, _After())
    if _SOURCES:
        builtins.__truth_pass__ = _pass
        sys.meta_path.insert(0, _Sources(os.path.abspath(_SOURCES)))


# -- the passes: the program's calls of forward() and backward() ---------------------------------------------------

_METHODS = ("forward", "backward", "forward_all")


def _pass(site, method, *args, **kwargs):
    """``method(*args, **kwargs)``, its time noted where it runs on an NNabla variable (or is ``nn.forward_all``)."""
    if not _VARIABLE:
        module = sys.modules.get("nnabla._variable")
        if module is None:
            return method(*args, **kwargs)
        _VARIABLE.append(module.Variable)
    owner = getattr(method, "__self__", None)
    if type(owner) is not _VARIABLE[0] and not (
        _SITES[site].endswith(":forward_all") and (getattr(method, "__module__", None) or "").startswith("nnabla")
    ):
        return method(*args, **kwargs)
    start = _clock()
    try:
        return method(*args, **kwargs)
    finally:
        _PASSES.append((site, start, _clock()))


class _Calls(ast.NodeTransformer):
    """``x.forward(...)`` -> ``__truth_pass__(site, x.forward, ...)``: the same evaluation, in the same order."""

    def __init__(self, name):
        self.name = name

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in _METHODS:
            _SITES.append("%s:%d:%s" % (self.name, node.lineno, f.attr))
            call = ast.Call(
                func=ast.Name("__truth_pass__", ast.Load()),
                args=[ast.Constant(len(_SITES) - 1), f] + node.args,
                keywords=node.keywords,
            )
            return ast.copy_location(call, node)
        return node


def compiled(source, path):
    """A program's file compiled with its passes noted (line numbers as they are)."""
    tree = ast.parse(source, path)
    name = os.path.relpath(path, _SOURCES) if _SOURCES else os.path.basename(path)
    tree = ast.fix_missing_locations(_Calls(name).visit(tree))
    return compile(tree, path, "exec", dont_inherit=True)


class _Sources:
    """An import finder for the program's own modules (under NNPROFILE_TRUTH_SOURCES): compiled by ``compiled``, never
    from or into a bytecode cache."""

    def __init__(self, folder):
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        origin = getattr(spec, "origin", None) if spec is not None else None
        if not origin or not origin.endswith(".py") or not os.path.abspath(origin).startswith(self.folder + os.sep):
            return None
        if "site-packages" in origin or os.sep + "compat" + os.sep in origin:
            return None

        class Loader(importlib.machinery.SourceFileLoader):
            def get_code(self, fullname):
                return compiled(self.get_data(self.path), self.path)

        spec.loader = Loader(fullname, origin)
        return spec


def _watch(base):
    """The program's own subclasses of ``base``, patched as each class statement finishes (``__build_class__``): before
    any of its instances can update, whatever the machine's load (a thread that looked for them now and then missed a
    fast program's first steps on a busy CI runner)."""
    for cls in _below(base):
        _own_update(cls)
    build = builtins.__build_class__

    def build_class(*args, **kwargs):
        cls = build(*args, **kwargs)
        try:
            if isinstance(cls, type) and issubclass(cls, base) and _programs(cls):
                _own_update(cls)
        except Exception:
            pass
        return cls

    builtins.__build_class__ = build_class


def _below(base):
    stack, out = list(base.__subclasses__()), []
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if _programs(cls):
            out.append(cls)
    return out


def _programs(cls):
    """Whether a class is the program's own (not one of NNabla's)."""
    return not (cls.__module__ or "").startswith("nnabla")


def _chain():
    """The next sitecustomize on the path (a program's own shims: numpy's aliases, NNabla's compatibility), run as
    Python would have run it had this one not been first."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        candidate = os.path.join(folder or ".", "sitecustomize.py")
        if os.path.abspath(folder or ".") != here and os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_chained_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


def _cost():
    """What one note costs (ns): a stand-in of a solver whose update does nothing, timed over many calls."""

    class Nothing:
        def update(self):
            return None

    ends = []
    noted, plain = _Noted(Nothing(), ends), Nothing()
    n = 20000
    best = []
    for target in (plain, noted) * 3:
        start = _clock()
        for _ in range(n):
            target.update()
        best.append(_clock() - start)
    return max(0.0, (min(best[1::2]) - min(best[0::2])) / n)


def _pass_cost():
    """What one pass's note costs (ns), as ``_cost``: a call of nothing through ``_pass`` and without it."""

    def nothing():
        return None

    n = 20000
    best = []
    _SITES.append("cost:0:forward")
    site = len(_SITES) - 1
    for noted in (False, True) * 3:
        start = _clock()
        if noted:
            for _ in range(n):
                _pass(site, nothing)
        else:
            for _ in range(n):
                nothing()
        best.append(_clock() - start)
    return max(0.0, (min(best[1::2]) - min(best[0::2])) / n)


def _write():
    if os.environ.get("NNPROFILE_TRUTH_OWNER") != str(os.getpid()):
        return  # a child the program started (its own interpreter): the file is its parent's
    try:
        passes = {"sites": list(_SITES), "calls": list(_PASSES)}
        data = {"solvers": _SOLVERS, "passes": passes, "note_ns": _cost(), "pass_ns": _pass_cost()}
        with open(_PATH, "w") as f:
            json.dump(data, f)
    except Exception as e:
        print("truth instrument: %s" % e, file=sys.stderr)


if _PATH:
    try:
        os.environ.setdefault("NNPROFILE_TRUTH_OWNER", str(os.getpid()))
        _install()
        atexit.register(_write)
    except Exception as e:  # the program runs as it is; the file will hold nothing
        print("truth instrument: %s" % e, file=sys.stderr)
_chain()
