"""Running a program as its user runs it, recorded: a script (``python train.py``) or a module
(``python -m package.train``), as ``__main__``, with ``sys.argv`` and ``sys.path`` as Python sets them.

For a script, ``sys.argv[0]`` is its path and its folder is first on ``sys.path``; for a module,
``sys.argv[0]`` is the module's file and the working folder is first on ``sys.path`` (a package's
``__main__`` runs for ``-m package``). From the command line, the entry Python put first for nnprofile
itself (the working folder of ``python -m nnprofile``, the folder of the ``nnprofile`` script) is
taken off where nnprofile is not imported from it: every import that fails (NNabla runs a few each
step) looks in every entry, and the program's own ``sys.path`` has no such entry. The program's
output passes through; its exit status is returned; its own exception prints its own traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, List, Optional, Tuple

from ..base import signals as owned
from ..base.errors import HungUp, ProfileError, ProgramDidNotCompile, Terminated
from ..recording import passtimes
from ..recording.schedule import Schedule
from ..result import Profile
from .outcome import exit_code, shorten
from .programs import PathLike, Recording, interrupted, make_schedule, terminated


def run(
    script: PathLike,
    *args: str,
    outdir: Optional[PathLike] = None,
    skip_first: Optional[int] = None,
    save_events: bool = False,
    active: int = Schedule.active,
    merge_wait: Optional[float] = None,
    module: bool = False,
    wait: int = Schedule.wait,
    warmup: Optional[int] = None,
    repeat: int = Schedule.repeat,
    max_windows: int = Schedule.max_windows,
    on_window: Optional[Callable[[Profile], None]] = None,
) -> Tuple[Profile, int]:
    """Run a Python program unmodified as ``__main__`` (its own ``sys.argv``), recording it; ``module``:
    ``script`` names a module to run as ``python -m`` does. The schedule's options are ``record``'s.

    Returns the profile (with several windows, the view over them) and the program's exit status. The
    program's output passes through; an exception in it prints its own traceback (it is the user's
    code) and gives status 1 (130 for Ctrl-C); what was recorded is kept, marked incomplete. A program
    that does not compile raises ``ProgramDidNotCompile`` (Python's own lines, status 1) before
    anything is written. Under ``mpirun`` each rank returns its own profile (``Recording.merged``,
    through ``run_recording``, holds rank 0's merged view).
    """
    schedule = make_schedule(
        wait=wait, warmup=warmup, skip_first=skip_first, active=active, repeat=repeat, max_windows=max_windows
    )
    recording, status = run_recording(
        script,
        *args,
        outdir=outdir,
        schedule=schedule,
        merge_wait=merge_wait,
        save_events=save_events,
        module=module,
        on_window=on_window,
    )
    assert recording.profile is not None
    return recording.profile, status


def _module_path(name: str) -> str:
    """The file ``python -m name`` runs (a package's ``__main__``); one clear error where there is none."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        raise ProfileError("no module named %s (%s)" % (name, e))
    if spec is None:
        raise ProfileError("no module named %s" % name)
    if spec.submodule_search_locations is not None:  # a package: its __main__
        main = importlib.util.find_spec(name + ".__main__")
        if main is None or not main.origin:
            raise ProfileError("%s is a package and cannot be run: it has no __main__ module" % name)
        return main.origin
    if not spec.origin or not os.path.isfile(spec.origin):
        raise ProfileError("%s is not a module Python can run (it has no source file)" % name)
    return spec.origin


def _provides_nnprofile(entry: str) -> bool:
    """Whether nnprofile's own package is imported from this ``sys.path`` entry (a source folder)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        return os.path.samefile(entry or os.curdir, os.path.dirname(package))
    except OSError:
        return False


def _program(target: str, module: bool, saved_path: List[str]) -> Tuple[str, str, str]:
    """Where the program is (a script, or ``-m``'s module), its name and how the command shows it; its folder put
    first on ``sys.path`` as Python does (the working folder for ``-m``)."""
    if module:
        sys.path.insert(0, os.getcwd())  # as python -m: the working folder first, before the module is found
        try:
            path = _module_path(target)
        except BaseException:
            sys.path[:] = saved_path
            raise
        return path, target, "-m %s" % target
    _check_script(target)
    sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    return target, os.path.basename(target), target


def run_recording(
    script: PathLike,
    *args: str,
    outdir: Optional[PathLike] = None,
    skip_first: Optional[int] = None,
    save_events: bool = False,
    active: int = Schedule.active,
    merge_wait: Optional[float] = None,
    progress: Callable[[str], None] = lambda line: None,
    module: bool = False,
    schedule: Optional[Schedule] = None,
    on_window: Optional[Callable[[Profile], None]] = None,
    launched: bool = False,
) -> Tuple[Recording, int]:
    """``run``, returning the ``Recording`` itself (its profile, its rank's folder, the merged view).
    ``launched``: called from nnprofile's command line, whose own first ``sys.path`` entry is not the program's."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    if launched and sys.path and not _provides_nnprofile(sys.path[0]):
        del sys.path[0]
    target = os.fspath(script)
    path, name, shown = _program(target, module, saved_path)
    schedule = schedule or make_schedule(skip_first=skip_first, active=active)
    recording = Recording(
        outdir=outdir,
        save_events=save_events,
        name=name,
        command=" ".join([shown] + list(args)),
        merge_wait=merge_wait,
        progress=progress,
        schedule=schedule,
        on_window=on_window,
    )
    sys.argv = [path] + list(args)
    recording.__enter__()  # a folder in use, or one that cannot be written: said before the program runs
    previous = _take_signals(recording)
    execs = _write_before_exec(recording)
    try:
        status = _run_program(recording, module, target, os.path.abspath(path))
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        _give_back_signals(previous)
        os.execv, os.execve = execs
    if recording.forked:  # a child the program forked ran to its end here: it ends as it would alone
        raise SystemExit(status)
    return recording, status


def _run_program(recording: Recording, module: bool, target: str, path: str) -> int:
    """The program run as ``python`` runs it, inside the recording (``path``: its file, absolute); its exit status,
    as its own end says it."""
    import runpy

    status = 0
    remove = passtimes.install(recording.recorder.pass_times, os.path.dirname(path) if not module else os.getcwd())
    try:
        with _entered(recording):
            try:
                recording.runs_program_below(sys._getframe())
                if module:
                    runpy.run_module(target, run_name="__main__", alter_sys=True)
                else:  # its __file__ absolute, as Python sets it (the program may change folder, then read beside it)
                    _run_path(path)
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if e.code not in (None, 0) and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
                raise
            except BaseException as e:
                status = _program_raised(recording, e, path)
                raise
    except BaseException:  # the program's own end (whatever it raised): its status says it
        pass
    finally:
        remove()
    return status


def _run_path(path: str) -> None:
    """``runpy.run_path(path, run_name="__main__")``, the script compiled with its pass calls noted (``passtimes``)
    where it can be; as Python compiles it where not."""
    import runpy

    code = passtimes.script_code(path)
    if code is None:
        runpy.run_path(path, run_name="__main__")
        return
    runpy._run_module_code(code, None, "__main__", pkg_name="", script_name=path)  # type: ignore[attr-defined]


def _program_raised(recording: Recording, e: BaseException, path: str) -> int:
    """The status of a program that raised ``e``, its traceback said as Python says it (a SIGTERM or SIGHUP ends it
    silently); a KeyboardInterrupt with no Ctrl-C behind it is the program's own exception."""
    if terminated(e):
        return exit_code(e)
    ctrl_c = interrupted(e) and bool(_SIGINTS)
    if interrupted(e) and not ctrl_c:
        recording.raised_interrupt = True
    if not ctrl_c:  # (a Ctrl-C is said by nnprofile's one line: where it landed is no error of the program's)
        _report(path)
    # Python ends a program by SIGINT (130 to a shell) where KeyboardInterrupt itself, not a subclass, reached the top.
    return 130 if ctrl_c or type(e) is KeyboardInterrupt else 1


def _check_script(path: str) -> None:
    """A script that can run: a file, readable, that compiles (else one clear error, before any work)."""
    if os.path.isdir(path):
        raise ProfileError(
            "%s is a folder, not a program: give its script (nnprofile run %s/train.py), or "
            "-m MODULE" % (path, path.rstrip("/"))
        )
    if not os.path.isfile(path):
        raise ProfileError("%s: no such file" % path)
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec")
    except SyntaxError as e:
        raise ProgramDidNotCompile("".join(traceback.format_exception_only(type(e), e)).rstrip("\n"))
    except (OSError, ValueError) as e:
        raise ProfileError("%s: cannot read the program (%s)" % (path, e))


class _entered:
    """``with`` over a recording already entered: its end only (its start's errors are the caller's to see)."""

    def __init__(self, recording: Recording):
        self.recording = recording

    def __enter__(self) -> Recording:
        return self.recording

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        self.recording.__exit__(kind, error, tb)


_SIGINTS = owned.CTRL_C  # the Ctrl-Cs that came while a program ran (a KeyboardInterrupt without one is its own)


def _take_signals(recording: Recording) -> List[Tuple[int, Any]]:
    """SIGTERM, and SIGHUP where its default would end the program, as a Ctrl-C is (``Terminated``, ``HungUp``): the
    program unwinds, what was recorded is written, marked interrupted, and the run exits with 143 (129). A Ctrl-C is
    counted, then raised as Python raises it. Only in the main thread of a single process (ranks have their own
    guard, ``nnprofile.api.guard``); a handler the program installs itself replaces these."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        recording.world is not None and recording.world.several
    ):
        return []
    del _SIGINTS[:]

    def ends(kind: type) -> Callable[[int, Any], None]:
        def handle(number: int, frame: Any) -> None:
            raise kind()

        return handle

    def counted(number: int, frame: Any) -> None:
        _SIGINTS.append(number)
        signal.default_int_handler(number, frame)

    taken: List[Tuple[int, Any]] = []
    wanted: List[Tuple[int, Any, Any]] = [
        (signal.SIGTERM, ends(Terminated), None),
        (signal.SIGINT, counted, signal.default_int_handler),
    ]
    if hasattr(signal, "SIGHUP"):
        wanted.append((signal.SIGHUP, ends(HungUp), signal.SIG_DFL))
    for number, handler, only_over in wanted:
        try:
            if only_over is None or signal.getsignal(number) is only_over:
                taken.append((number, owned.take(number, handler)))
        except (ValueError, OSError):
            pass
    return taken


def _give_back_signals(taken: List[Tuple[int, Any]]) -> None:
    for number, previous in taken:
        try:
            owned.give_back(number, previous)
        except (ValueError, OSError, TypeError):
            pass


def _write_before_exec(recording: Recording) -> Tuple[Any, Any]:
    """``os.execv`` and ``os.execve`` (every ``os.exec*`` ends in one of them) write what was recorded before the
    program's process is replaced, and let the folder go; the originals, to put back."""
    originals = (os.execv, os.execve)

    def writing_first(original: Callable[..., Any], name: str) -> Callable[..., Any]:
        def exec_(*args: Any, **kwargs: Any) -> Any:
            try:
                recording.end_now("the program replaced its process (os.%s %s)" % (name, shorten(str(args[0]), 80)))
            except Exception:
                pass
            return original(*args, **kwargs)

        return exec_

    os.execv, os.execve = writing_first(os.execv, "execv"), writing_first(os.execve, "execve")
    return originals


def _report(path: str) -> None:
    """The program's uncaught exception said as Python says it: by the program's own ``sys.excepthook``, where it set
    one (given the traceback from its own first frame), else by ``_print_user_traceback``."""
    kind, error, tb = sys.exc_info()
    hook = sys.excepthook
    if hook is not sys.__excepthook__ and kind is not None:
        target = os.path.abspath(path)
        first = tb
        while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != target:
            first = first.tb_next
        try:
            hook(kind, error or kind(), first or tb)
            return
        except Exception:
            if sys.stderr is not None:
                sys.stderr.write("Error in sys.excepthook:\n%s\nOriginal exception was:\n" % traceback.format_exc())
    _print_user_traceback(path)


def _print_user_traceback(path: str) -> None:
    """The program's traceback as Python shows it, with its chain (an exception's cause and context), each from
    the program's own first frame on: nnprofile's and runpy's frames are not the user's concern (--debug keeps
    them all)."""
    kind, error, tb = sys.exc_info()
    target = os.path.abspath(path)
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

    def frames_of(e: BaseException) -> List[Any]:
        frames = traceback.extract_tb(e.__traceback__)
        first = next((i for i, f in enumerate(frames) if os.path.abspath(f.filename) == target), 0)
        return [f for f in frames[first:] if not os.path.abspath(f.filename).startswith(ours)]

    chain: List[Tuple[BaseException, str]] = []
    seen = set()
    e: Optional[BaseException] = error
    while e is not None and id(e) not in seen and len(chain) < 8:
        seen.add(id(e))
        chain.append((e, ""))
        if e.__cause__ is not None:
            chain[-1] = (e, "\nThe above exception was the direct cause of the following exception:\n\n")
            e = e.__cause__
        elif e.__context__ is not None and not e.__suppress_context__:
            chain[-1] = (e, "\nDuring handling of the above exception, another exception occurred:\n\n")
            e = e.__context__
        else:
            e = None
    lines: List[str] = []
    for e, joint in reversed(chain):
        lines.append(joint)  # how it follows the one above ("" for the first)
        frames = frames_of(e)
        if frames:
            lines += ["Traceback (most recent call last):\n"] + traceback.format_list(frames)
        said = traceback.format_exception_only(type(e), e)
        if type(e).__module__ == "__main__":  # as Python's own hook names it (the traceback module leaves it out)
            said[-1] = "__main__." + said[-1]
        lines += said
    if sys.stderr is not None:  # (closed by the shell: nothing to say it on)
        sys.stderr.write("".join(lines))
