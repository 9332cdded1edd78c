"""What a program's line called, read from its bytecode: the method and the name it was called on.

NNabla runs a pass in C++; its function hooks see the calling Python frame,
whose code and current instruction say which method was called (``forward``
or ``backward``) and on what (``loss`` in ``loss.backward()``, ``vloss`` in
``self.vloss.forward()``). The same reading names a solver (``solver_dis`` in
``solver_dis.update()``) and a data iterator (``data`` in ``data.next()``).
Python 3.10's bytecode: a method is loaded with LOAD_METHOD (LOAD_ATTR when the
call has keyword arguments) right after the expression it belongs to.
"""
from __future__ import annotations

import dis
from functools import lru_cache
from typing import Any, Optional, Sequence, Tuple

_NAME_LOADS = ("LOAD_NAME", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLASSDEREF")


@lru_cache(maxsize=4096)
def _instructions(code: Any) -> Tuple[dis.Instruction, ...]:
    return tuple(dis.get_instructions(code))


def call_at(code: Any, lasti: int, methods: Sequence[str]) -> Tuple[str, str]:
    """(method, receiver) of the call running at ``lasti``: the last of ``methods`` loaded on that
    line up to it, and the name it was loaded from (the last part of ``a.b.c``); "" where the
    bytecode does not say (a method called on a call's result, say)."""
    return _call_at(code, lasti, tuple(methods))


@lru_cache(maxsize=4096)
def _call_at(code: Any, lasti: int, methods: Tuple[str, ...]) -> Tuple[str, str]:
    instructions = _instructions(code)
    line_start = 0
    for i, ins in enumerate(instructions):
        if ins.starts_line is not None:
            line_start = i
        if ins.offset >= lasti:
            for j in range(i, line_start - 1, -1):
                previous = instructions[j]
                if previous.opname in ("LOAD_METHOD", "LOAD_ATTR") and previous.argval in methods:
                    return previous.argval, _receiver(instructions, j, line_start)
                if previous.opname in _NAME_LOADS and previous.argval in methods:  # forward_all(...) itself
                    return previous.argval, ""
            break
    return "", ""


def _receiver(instructions: Sequence[dis.Instruction], index: int, line_start: int) -> str:
    """The name of what the method at ``index`` was loaded from: a plain name, or the last
    attribute of a chain of them."""
    j = index - 1
    if j < line_start:
        return ""
    ins = instructions[j]
    if ins.opname in _NAME_LOADS:
        return str(ins.argval)
    if ins.opname == "LOAD_ATTR":
        return str(ins.argval)
    return ""


def receiver_path(frame: Any, methods: Sequence[str]) -> str:
    """The dotted name a calling frame called one of ``methods`` on: ``self.itr0`` for
    ``self.itr0.next()``, ``di`` for ``di.next()``; "" when unreadable."""
    if frame is None:
        return ""
    return _path_at(frame.f_code, frame.f_lasti, tuple(methods))


@lru_cache(maxsize=4096)
def _path_at(code: Any, lasti: int, methods: Tuple[str, ...]) -> str:
    instructions = _instructions(code)
    line_start = 0
    for i, ins in enumerate(instructions):
        if ins.starts_line is not None:
            line_start = i
        if ins.offset >= lasti:
            for j in range(i, line_start - 1, -1):
                previous = instructions[j]
                if previous.opname in ("LOAD_METHOD", "LOAD_ATTR") and previous.argval in methods:
                    parts = []
                    k = j - 1
                    while k >= line_start and instructions[k].opname == "LOAD_ATTR":
                        parts.append(str(instructions[k].argval))
                        k -= 1
                    if k >= line_start and instructions[k].opname in _NAME_LOADS:
                        parts.append(str(instructions[k].argval))
                    else:
                        parts = parts[:1]
                    return ".".join(reversed(parts))
            break
    return ""


def receiver_of_caller(frame: Any, methods: Sequence[str]) -> str:
    """The name a calling frame called one of ``methods`` on ("" when unreadable)."""
    if frame is None:
        return ""
    return call_at(frame.f_code, frame.f_lasti, methods)[1]


FORWARD_NAMES: Tuple[str, ...] = ("forward", "forward_all")
BACKWARD_NAMES: Tuple[str, ...] = ("backward", "backward_all")


def first_outside(frame: Any, skip: Sequence[str]) -> Optional[Tuple[str, int]]:
    """(file, line) of the first frame from ``frame`` outward whose module is not one of ``skip``
    or inside them, nor code NNabla generated (``<convolution>``, ``<string>``: no module at all)."""
    prefixes = tuple(skip) + tuple(s + "." for s in skip)
    while frame is not None:
        module = frame.f_globals.get("__name__", "") or ""
        name = frame.f_code.co_filename
        generated = not module and name.startswith("<")  # NNabla's generated wrappers: no module of their own
        if not (module in skip or module.startswith(prefixes) or generated) and not name.startswith("<frozen"):
            return name, frame.f_lineno
        frame = frame.f_back
    return None
