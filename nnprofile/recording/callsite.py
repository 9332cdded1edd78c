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
    """The name of what the method at ``index`` was loaded from: a plain name, the last attribute of a chain of
    them, or either subscripted by a constant or a name (``losses['train']``, ``accuracies[j]``)."""
    return _expression(instructions, index - 1, line_start)[0]


def _expression(instructions: Sequence[dis.Instruction], j: int, line_start: int, depth: int = 0) -> Tuple[str, int]:
    """The expression whose value the instruction at ``j`` leaves (a name, an attribute, a subscript of one), and
    where it begins; "" where it is none of these."""
    if j < line_start or depth > 4:
        return "", j
    ins = instructions[j]
    if ins.opname in _NAME_LOADS:
        return str(ins.argval), j
    if ins.opname == "LOAD_ATTR":
        return str(ins.argval), _expression(instructions, j - 1, line_start, depth + 1)[1]
    if ins.opname == "BINARY_SUBSCR" and j - 1 >= line_start:
        key = instructions[j - 1]
        if key.opname == "LOAD_CONST":
            index = repr(key.argval)
        elif key.opname in _NAME_LOADS:
            index = str(key.argval)
        else:
            return "", j
        base, at = _expression(instructions, j - 2, line_start, depth + 1)
        return ("%s[%s]" % (base, index), at) if base else ("", j)
    return "", j


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
    found = outside_frame(frame, skip)
    return (found.f_code.co_filename, line_of(found)) if found is not None else None


def outside_frame(frame: Any, skip: Sequence[str]) -> Any:
    """The first frame from ``frame`` outward that is the program's (``first_outside``), None where none is."""
    prefixes = tuple(skip) + tuple(s + "." for s in skip)
    while frame is not None:
        module = frame.f_globals.get("__name__", "") or ""
        name = frame.f_code.co_filename
        generated = not module and name.startswith("<")  # NNabla's generated wrappers: no module of their own
        if not (module in skip or module.startswith(prefixes) or generated) and not name.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None


def line_of(frame: Any) -> int:
    """The line a frame is on. Python 3.10 gives None for an instruction without a line of its own (one the
    compiler added: a jump back at a loop's end, a cleanup); it is then the line of the instruction before it,
    else the function's first line."""
    line = frame.f_lineno
    if line is not None:
        return int(line)
    best = None
    for start, _, n in frame.f_code.co_lines():
        if start > frame.f_lasti:
            break
        if n is not None:
            best = n
    return int(best if best is not None else frame.f_code.co_firstlineno)


_STORES = ("STORE_NAME", "STORE_FAST", "STORE_GLOBAL", "STORE_DEREF", "STORE_ATTR")


def stored_after(instructions: Sequence[dis.Instruction], k: int) -> str:
    """The name(s) the line stores the value of the call before instruction ``k`` in, through what it calls on it
    (``codes = encoder(x).get_unlinked_variable()``, ``self.itr0 = make()``): the line's first store after the call
    (``a, b`` of ``a, b = f()``); "" where the value is returned, dropped, or the line ends first."""
    while k < len(instructions) and instructions[k].starts_line is None:
        ins = instructions[k]
        if ins.opname in _STORES:
            return str(ins.argval)
        if ins.opname == "UNPACK_SEQUENCE" and isinstance(ins.arg, int):
            names = [instructions[k + 1 + i] for i in range(ins.arg) if k + 1 + i < len(instructions)]
            if len(names) == ins.arg and all(n.opname in _STORES for n in names):
                return ", ".join(str(n.argval) for n in names)
            return ""
        if ins.opname in ("RETURN_VALUE", "POP_TOP", "YIELD_VALUE") or ins.opname.startswith(("JUMP", "POP_JUMP")):
            return ""
        k += 1
    return ""


def assigned_name(frame: Any, depth: int = 3) -> str:
    """The name the call running in ``frame`` has its result stored under (``train_iter`` of ``train_iter =
    data_iterator(...)``, ``itr0`` of ``self.itr0 = ...``), through ``return`` to the caller (a helper that makes
    it); "" where it is stored under none."""
    while frame is not None and depth >= 0:
        instructions = _instructions(frame.f_code)
        k = next((i for i, ins in enumerate(instructions) if ins.offset > frame.f_lasti), len(instructions))
        if k < len(instructions) and instructions[k].opname == "RETURN_VALUE":
            frame, depth = frame.f_back, depth - 1
            continue
        return stored_after(instructions, k)
    return ""


def parameter_of(frame: Any, name: str) -> bool:
    """Whether ``name`` is a parameter of the function ``frame`` runs (a generic name its callers pass things as)."""
    code = frame.f_code
    return name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


@lru_cache(maxsize=16384)
def line_at(code: Any, lasti: int) -> int:
    """The line of the instruction at ``lasti`` (an instruction without a line of its own: the line before it)."""
    line = code.co_firstlineno
    for start, _, n in code.co_lines():
        if start > lasti:
            break
        if n is not None:
            line = n
    return line
