"""Command line: parse, call the API, and turn every failure into one line and an exit code.

Each command is a module with ``parser()`` and ``run(args)``; ``main`` picks one
by the first argument (a project file means the default command, profile).
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import List, Optional

from ..base.errors import ProfileError, ProgramDidNotCompile
from ..render.safe import safe_text
from . import capture_cmd, check_cmd, compare_cmd, merge_cmd, profile_cmd, report_cmd, run_cmd

EXIT_INTERNAL = 1
_RAN: list = []  # the command run (its module), for how the process ends
COMMANDS = {
    "run": run_cmd,
    "capture": capture_cmd,
    "report": report_cmd,
    "compare": compare_cmd,
    "check": check_cmd,
    "merge": merge_cmd,
}


def overview() -> str:
    """The top-level help: every command with its one line, then the default command's options."""
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: nnprofile PROJECT [PARAMETERS...] [options]   (the default command: profile a project)",
        "       nnprofile COMMAND [options]",
        "",
        "nnprofile: a layer-level profiler for NNabla and Neural Network Console.",
        "",
        "commands:",
        "  %-*s  %s" % (width, "PROJECT", profile_cmd.SUMMARY),
    ]
    lines += ["  %-*s  %s" % (width, name, module.SUMMARY) for name, module in COMMANDS.items()]
    lines += [
        "",
        "'nnprofile COMMAND --help' gives a command's options. The options of profiling a project follow.",
        "",
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    _standard_descriptors()
    try:
        status = _main(argv)
        if status == 130 and argv is None:  # the command itself, Ctrl-C'd: another Ctrl-C while Python shuts
            import os  # down ends it at once, without a traceback from an atexit handler, with the status it had
            import signal

            if _RAN and getattr(_RAN[-1], "ENDS_AS_PROGRAM", False):
                # A program ended by a KeyboardInterrupt dies by SIGINT, as under Python alone (a shell's loop stops
                # on it): Python does so after its own shutdown where the exception reaches the top, said by a hook
                # that says nothing (the program's traceback, or nnprofile's line, is said already).
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                sys.excepthook = lambda *_: None
                raise KeyboardInterrupt
            signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        return status
    except BrokenPipeError:  # the reader went away (nnprofile --help | head): quietly, as a filter ends
        try:
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError:
            pass
        return 0


def _main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    folder = _working_folder()
    if folder is not None:
        _error("nnprofile: error: %s" % folder)
        return 2
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(overview())
        profile_cmd.parser().print_help()
        return 0
    command = COMMANDS.get(argv[0]) if argv else None
    _RAN.append(command)
    if command is not None:
        args = command.parse(argv[1:]) if hasattr(command, "parse") else command.parser().parse_args(argv[1:])
    else:
        command = profile_cmd
        args = command.parser().parse_args(argv)
    logger = logging.getLogger("nnabla")
    previous = logger.level
    # NNabla logs INFO lines on import and restates its errors as log lines before raising them; nnprofile says
    # what matters once, in its own words (--debug lifts it). A program run under nnprofile logs as it does
    # alone: its logger is its own (nnprofile quiets only its own NNabla work: ``nnprofile.base.quiet``).
    if getattr(command, "QUIET_NNABLA", True):
        logger.setLevel(logging.INFO if args.debug else logging.CRITICAL + 1)
    try:
        return command.run(args)
    except ProgramDidNotCompile as e:  # Python's own lines, as python itself shows them
        _error(str(e))
        return e.exit_code
    except ProfileError as e:
        if args.debug:
            traceback.print_exc()
        _error("nnprofile: error: %s" % e)
        return getattr(command, "EXIT_ERROR", e.exit_code)
    except KeyboardInterrupt as e:  # Ctrl-C (130), or SIGTERM or SIGHUP turned into it: written files stay whole
        name = getattr(e, "signal_name", "")
        _error("nnprofile: interrupted%s" % (" by %s" % name if name else ""))
        return int(getattr(e, "exit_code", 130))
    except Exception as e:  # a bug, or an NNabla failure we do not know yet
        if args.debug:
            traceback.print_exc()
        text = " ".join(str(e).split())
        _error(
            "nnprofile: error: %s%s (run with --debug for the traceback)"
            % (type(e).__name__, (": " + text[:300]) if text else "")
        )
        return getattr(command, "EXIT_ERROR", EXIT_INTERNAL)
    finally:
        logger.setLevel(previous)


def _working_folder() -> Optional[str]:
    """Why the working folder cannot be worked in (deleted while the shell stood in it), None where it can."""
    import os

    try:
        os.getcwd()
        return None
    except OSError as e:
        where = os.environ.get("PWD") or "the working folder"
        return "%s: the working folder cannot be read (%s): cd to a folder that exists" % (where, e.strerror or e)


def _standard_descriptors() -> None:
    """Standard streams the shell closed (``>&- 2>&-``) stay closed for Python (``sys.stdout`` None: nothing is
    printed, as for the program alone), but their descriptors point at /dev/null: no file nnprofile or the program
    opens takes descriptor 1 or 2, where a C library's write to stdout or stderr would land in it."""
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
                if opened != fd:
                    os.dup2(opened, fd)
                    os.close(opened)
            except OSError:
                pass


def _error(line: str) -> None:
    try:
        print(safe_text(line), file=sys.stderr)  # a path or name in the message is data
    except (BrokenPipeError, ValueError):
        pass
