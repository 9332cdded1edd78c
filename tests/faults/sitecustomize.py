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


def _interrupt_once(spec):
    """NNPROFILE_TEST_INTERRUPT=module:Class.method: its first call raises KeyboardInterrupt before it runs (a
    Ctrl-C landing there), later calls run as they are. ``module:Class.method@NAME``: its first call from the
    program's code (a file whose name holds NAME, below it on the stack)."""
    import sys
    spec, _, within = spec.partition("@")
    module_name, _, path = spec.partition(":")
    owner, _, name = path.rpartition(".")
    target = getattr(importlib.import_module(module_name), owner) if owner else importlib.import_module(module_name)
    original, calls = getattr(target, name), []

    def below(frame):
        while frame is not None and within not in frame.f_code.co_filename:
            frame = frame.f_back
        return frame is not None

    def interrupted(*args, **kwargs):
        if not calls and below(sys._getframe(1)):
            calls.append(1)
            raise KeyboardInterrupt
        return original(*args, **kwargs)
    setattr(target, name, interrupted)


if os.environ.get("NNPROFILE_TEST_INTERRUPT"):
    _interrupt_once(os.environ["NNPROFILE_TEST_INTERRUPT"])


def _disk_full(marker):
    """NNPROFILE_TEST_FULL=TEXT: writing any file whose path holds TEXT fails as a full disk does;
    ``result.json@rewrite``: only a record that lists more than itself (the disk fills before the record is rewritten
    to list the files written after it)."""
    import errno
    import re
    from nnprofile.base import outdir

    original = outdir.write_whole
    marker, _, when = marker.partition("@")

    def write_whole(path, data):
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
        listing = re.search(r'"files": *\[([^\]]*)\]', text)
        if marker in path and (when != "rewrite" or (listing and listing.group(1).count(",") > 0)):
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return original(path, data)
    outdir.write_whole = write_whole
    import nnprofile.render.files as files
    import nnprofile.result.file as result_file
    files.write_whole = result_file.write_whole = write_whole


if os.environ.get("NNPROFILE_TEST_FULL"):
    _disk_full(os.environ["NNPROFILE_TEST_FULL"])


def _mark_sections(path):
    """NNPROFILE_TEST_MARK_SECTIONS=FILE: a line (the section's kind) appended to FILE as each section of a
    project's profile begins: a state a test can wait for (the log is printed once it is measured)."""
    from nnprofile.cli import profile_cmd

    original = profile_cmd.LiveLog.section

    def section(self, s):
        with open(path, "a") as f:
            f.write("%s\n" % s.kind)
        return original(self, s)
    profile_cmd.LiveLog.section = section


if os.environ.get("NNPROFILE_TEST_MARK_SECTIONS"):
    _mark_sections(os.environ["NNPROFILE_TEST_MARK_SECTIONS"])
