"""Every third-party module nnprofile/ imports is declared, pinned, in setup.cfg."""

import pytest
import ast
import configparser
import os
import re
import sys

from conftest import ROOT

# Import name -> the distribution that provides it.
DISTRIBUTIONS = {
    "yaml": "PyYAML",
    "google": "protobuf",
    "PIL": "pillow",
    "nnabla_ext": "nnabla-ext-cuda120",
    "IPython": "ipython",
}
# Imported only where they are already there: nnabla_ext behind a check (the 'cuda' extra), IPython
# by the cell magic, which only IPython loads (the 'notebook' extra), matplotlib by compare's box plots,
# which say what is missing without it (the 'plots' extra).
OPTIONAL = {"nnabla_ext", "IPython", "matplotlib"}


def _imported_modules():
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "nnprofile")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        found.update(a.name.split(".")[0] for a in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"nnprofile"}


def _requirements(value):
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def _name(requirement):
    return re.split(r"[<>=!~;\s]", requirement, maxsplit=1)[0].lower()


@pytest.mark.slow
def test_every_imported_module_is_declared_as_a_range_with_its_exact_version_in_the_constraints():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    required = _requirements(config["options"]["install_requires"])
    # Ranges, so that nnprofile installs beside a user's own packages: a lower bound, never a pin.
    assert all(">=" in r and "==" not in r for r in required), required
    declared = {_name(r) for r in required}
    extras = {_name(line) for value in config["options.extras_require"].values() for line in _requirements(value)}
    modules = _imported_modules()
    assert modules >= {"nnabla", "numpy", "pandas", "openpyxl", "tqdm"}
    for module in modules:
        dist = DISTRIBUTIONS.get(module, module).lower()
        assert dist in (extras if module in OPTIONAL else declared), "%s (from %s) is not declared" % (dist, module)
    # What only compare's plots need is an extra, and nothing needs SciPy: a user's own matplotlib and scipy are
    # not nnprofile's to move. The lower bounds admit a NNabla user's pandas 2.1.
    assert "pandas" in declared and not {"matplotlib", "scipy"} & declared and "matplotlib" in extras
    assert "scipy" not in modules
    lowest = {_name(r): r.split(">=")[1].split(",")[0] for r in required}
    assert tuple(map(int, lowest["pandas"].split(".")[:2])) <= (2, 1)
    # The exact versions of the demo and CI: every dependency and tool, pinned once, inside its range.
    with open(os.path.join(ROOT, "constraints.txt")) as f:
        pins = dict(line.strip().split("==") for line in f if line.strip() and not line.startswith("#"))
    pinned = {name.lower(): version for name, version in pins.items()}
    for r in required:
        name = _name(r)
        assert name in pinned, "%s is not pinned in constraints.txt" % name
        assert tuple(map(int, pinned[name].split(".")[:2])) >= tuple(map(int, lowest[name].split(".")[:2])), name
    assert extras <= set(pinned), extras - set(pinned)
    assert config["options"]["python_requires"].strip() == ">=3.10, <3.11"


def test_the_makefile_installs_with_the_constraints_and_can_test_the_lowest_versions():
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    assert "-c constraints.txt" in makefile and "test-oldest:" in makefile


@pytest.mark.slow
def test_the_pytest_plugin_loads_nothing_heavy():
    import subprocess

    code = (
        "import sys, nnprofile.testing.plugin, nnprofile.testing; "
        "heavy = [m for m in ('nnabla', 'numpy', 'pandas', 'scipy', 'matplotlib') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
