"""The program's main script run as ``python SCRIPT ARGS`` runs it, its passes noted (``sitecustomize.compiled``):
``python truth_main.py SCRIPT ARGS``, with tests/truth first on PYTHONPATH. The script's folder is first on
``sys.path``, ``sys.argv`` is the script's, and it runs as ``__main__``; its exit is its own."""

import builtins
import os
import sys
import types

import sitecustomize


def main():
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    with open(script, "rb") as f:
        code = sitecustomize.compiled(f.read(), script)
    module = types.ModuleType("__main__")
    module.__file__ = script
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    exec(code, module.__dict__)


if __name__ == "__main__":
    main()
