"""The house as its imports draw it: layers lowest first, no circles, no arrow running back up.

Every import of ``nnprofile/`` counts, also those inside functions and under ``TYPE_CHECKING``:
the modules are read with ``ast``, not imported. ARCHITECTURE.md draws the same layers.
"""

import ast
import os

import pytest

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "nnprofile")

# Lowest first; a module may import only from its own layer or a lower one.
LAYERS = [
    ("base", ["nnprofile._version", "nnprofile.base"]),
    ("result", ["nnprofile.result"]),
    ("project", ["nnprofile.project"]),
    ("measure and recording", ["nnprofile.measure", "nnprofile.recording", "nnprofile.assembly"]),
    ("analysis", ["nnprofile.analysis"]),
    ("merging", ["nnprofile.merging"]),
    ("compare", ["nnprofile.compare"]),
    ("render", ["nnprofile.render"]),
    (
        "api, notebook, testing and cli",
        [
            "nnprofile",
            "nnprofile.__main__",
            "nnprofile.api",
            "nnprofile.notebook",
            "nnprofile.testing",
            "nnprofile.cli",
        ],
    ),
]
# Two pipelines side by side: a project is measured, a program recorded; neither reads the other.
APART = [
    ("nnprofile.measure", "nnprofile.recording"),
    ("nnprofile.recording", "nnprofile.measure"),
    ("nnprofile.measure", "nnprofile.assembly"),
    ("nnprofile.assembly", "nnprofile.measure"),
    ("nnprofile.assembly", "nnprofile.recording"),
]  # assembly reads data only: it never records
API_NAMES = ("record", "run", "step", "profile", "load")


def modules():
    """Module name -> file, for every .py file of the package."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imports(name, path, known):
    """The package modules that ``name`` imports, wherever the import statement is."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("nnprofile"):
                continue
            for alias in node.names:
                sub = "%s.%s" % (source, alias.name)
                if sub in known:  # "from . import x": the module x
                    found.add(sub)
                elif source in known:
                    found.add(source)
    found.discard(name)
    return found


def layer_of(module):
    best, index = "", None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, index = prefix, i
    return index


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_has_a_layer(graph):
    assert [m for m in graph if layer_of(m) is None] == []


def test_no_import_runs_back_up(graph):
    upward = [
        "%s (%s) imports %s (%s)" % (m, LAYERS[layer_of(m)][0], t, LAYERS[layer_of(t)][0])
        for m, targets in sorted(graph.items())
        for t in sorted(targets)
        if layer_of(t) > layer_of(m)
    ]
    assert upward == []


def test_a_project_is_measured_and_a_program_recorded_apart(graph):
    crossing = [
        "%s imports %s" % (m, t)
        for m, targets in graph.items()
        for t in targets
        for a, b in APART
        if m.startswith(a) and t.startswith(b)
    ]
    assert crossing == []


def test_no_import_circles(graph):
    """Tarjan's strongly connected components: any of more than one module is a circle."""
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def test_no_folder_holds_more_than_a_fifth_of_the_package():
    known = modules()
    total = sum(_lines(p) for p in known.values())
    folders = {}
    for name, path in known.items():
        parts = name.split(".")
        if len(parts) > 2 or path.endswith("__init__.py") and len(parts) == 2:
            folders[parts[1]] = folders.get(parts[1], 0) + _lines(path)
    big = {f: n for f, n in folders.items() if n > total / 5}
    assert big == {}, "of %d lines" % total


def test_each_room_says_what_it_holds():
    """Every folder opens with a docstring (what it holds, and where it sits), and no folder takes the
    name of an API function."""
    for name, path in modules().items():
        if not path.endswith("__init__.py"):
            continue
        with open(path, encoding="utf-8") as f:
            doc = ast.get_docstring(ast.parse(f.read()))
        assert doc and len(doc.split()) >= 8, "%s has no opening docstring" % name
        assert name.rsplit(".", 1)[-1] not in API_NAMES, name


def test_every_module_a_docstring_names_is_there():
    """A reference such as ``nnprofile.base.stats.summarize_rounds`` names a module (and a name in it) that exists:
    moved code leaves no reader at a dead end."""
    import importlib
    import re

    refs = set()
    for path in modules().values():
        with open(path, encoding="utf-8") as f:
            refs.update(re.findall(r"``(nnprofile(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", f.read()))
    dead = []
    for ref in sorted(refs):
        parts = ref.split(".")
        for i in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            for name in parts[i:]:
                found = getattr(found, name, None)
            if found is None:
                dead.append(ref)
            break
    assert dead == []


def test_every_module_stays_under_500_lines():
    """Small modules with one job (STYLE.md): a module that grows past 500 lines is split by what it does."""
    big = {name: _lines(path) for name, path in modules().items() if _lines(path) > 500}
    assert big == {}


def test_every_function_stays_under_60_lines():
    """Functions that do one thing (STYLE.md): one over 60 lines (its docstring counted) is split by what it does."""
    big = []
    for name, path in modules().items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        big += [
            "%s.%s (%d lines)" % (name, node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60
        ]
    assert big == []


def test_no_class_is_split_across_files():
    """A class owns its parts (STYLE.md): no method annotates ``self`` with another type, the mark of a mix-in typed by
    a Protocol of its host's members, and no Protocol holds more than 20 members (a header file for such a class)."""
    annotated, wide = [], []
    for name, path in modules().items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.args.args:
                    first = method.args.args[0]
                    if first.arg == "self" and first.annotation is not None:
                        annotated.append("%s.%s.%s" % (name, node.name, method.name))
            if any((isinstance(b, ast.Name) and b.id == "Protocol") for b in node.bases):
                members = [
                    n for n in node.body if isinstance(n, (ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef))
                ]
                if len(members) > 20:
                    wide.append("%s.%s (%d)" % (name, node.name, len(members)))
    assert annotated == [] and wide == []


def test_the_house_is_described_briefly_and_its_style_is_in_the_repository():
    """ARCHITECTURE.md stays a picture, not a second copy of the code: under 1,500 words, lines under 120
    characters; STYLE.md, which the tests above cite, is in the repository."""
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.split()) < 1500
    assert [line for line in text.splitlines() if len(line) > 120] == []
    with open(os.path.join(ROOT, "STYLE.md"), encoding="utf-8") as f:
        style = f.read()
    assert "500 lines" in style and "60" in style  # the limits the module and function tests hold
