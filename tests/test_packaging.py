"""Every third-party module nnprofile/ imports is declared, pinned, in setup.cfg."""
import ast
import configparser
import os
import sys

from conftest import ROOT

# Import name -> the distribution that provides it.
DISTRIBUTIONS = {"yaml": "PyYAML", "google": "protobuf", "PIL": "pillow", "nnabla_ext": "nnabla-ext-cuda120"}
OPTIONAL = {"nnabla_ext"}  # imported only behind a check, from the 'cuda' extra


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


def test_every_imported_module_is_declared():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    required = [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]
    assert all("==" in r for r in required), "pin every dependency"
    declared = {r.split("==")[0].lower() for r in required}
    extras = {line.strip().split("==")[0].lower() for value in config["options.extras_require"].values()
              for line in value.splitlines() if line.strip()}
    modules = _imported_modules()
    assert modules >= {"nnabla", "numpy", "pandas", "openpyxl"}
    for module in modules:
        dist = DISTRIBUTIONS.get(module, module).lower()
        assert dist in (extras if module in OPTIONAL else declared), "%s (from %s) is not declared" % (dist, module)
    assert config["options"]["python_requires"].strip() == ">=3.10, <3.11"
