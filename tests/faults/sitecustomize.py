"""Faults injected into nnprofile's own code (tests/test_guest.py): NNPROFILE_TEST_FAULTS lists
``module:Class.method`` (or ``module:function``) that raise as soon as they are called, as a bug of nnprofile's
would. Loaded at the interpreter's start through PYTHONPATH, before the program runs."""
import importlib
import os


def _break(spec):
    module_name, _, path = spec.partition(":")
    module = importlib.import_module(module_name)
    owner, _, name = path.rpartition(".")
    target = getattr(module, owner) if owner else module

    def broken(*args, **kwargs):
        raise RuntimeError("injected fault in %s" % spec)
    setattr(target, name, broken)


for _spec in filter(None, os.environ.get("NNPROFILE_TEST_FAULTS", "").split(",")):
    _break(_spec.strip())
