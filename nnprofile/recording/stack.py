"""The program's frames at a call, as data: the stack the steps are read from (``nnprofile.assembly.iterations``).

Each timed call of the program's that can begin a step (a pass, a solver call, a read, a monitor, a
mark) keeps its stack: the program's frames from the outermost in, each as (token, code, instruction).
NNabla's and nnprofile's own frames are left out. The token tells one call of a function from the
next: the frames of the last stack are held (so that no new frame can take one's address), and a frame
that is the very one held keeps its token. Each code object is described once, with its loops read
from its bytecode (a jump back to an earlier instruction). The frames that were running when the
recording started (a launcher's, a notebook kernel's loop over cells) are not the program's either.
"""

from __future__ import annotations

import dis
from typing import Any, Dict, List, Tuple

from ..assembly.iterations import CodeInfo, Stack
from .callsite import stored_after

SKIP = ("nnabla", "nnabla_ext", "nnprofile")
# What runs a program without being it: a notebook's kernel and its event loop, and Python's own library.
HOSTS = ("IPython", "ipykernel", "tornado", "zmq", "jupyter_client", "traitlets")
_PREFIXES = SKIP + HOSTS + tuple(s + "." for s in SKIP + HOSTS)


def _stdlib() -> Tuple[str, ...]:
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple(p + "/" for p in {paths.get("stdlib", ""), paths.get("platstdlib", "")} if p)


_STDLIB = _stdlib()
MAX_DEPTH = 64  # frames walked at most (a deep recursion is cut at its outer end)


def describe_code(code: Any) -> CodeInfo:
    """A code object's place and loops: a loop runs from a jump's target to the last jump back to it."""
    ends: Dict[int, int] = {}
    lines: List[Tuple[int, int]] = []
    stores: List[Tuple[int, str]] = []
    jumps = set(dis.hasjabs) | set(dis.hasjrel)
    instructions = list(dis.get_instructions(code))
    for k, ins in enumerate(instructions):
        if ins.starts_line is not None:
            lines.append((ins.offset, ins.starts_line))
        if ins.opcode in jumps and isinstance(ins.argval, int) and ins.argval <= ins.offset:
            ends[ins.argval] = max(ends.get(ins.argval, 0), ins.offset)
        if ins.opname.startswith("CALL_"):
            name = stored_after(instructions, k + 1)
            if name:
                stores.append((ins.offset, name))
    return CodeInfo(code.co_filename, code.co_name, code.co_firstlineno, sorted(ends.items()), lines, stores)


_DESCRIBED: Dict[Any, CodeInfo] = {}  # code object -> its description, shared by every recording of the process
_DESCRIBED_MAX = 4096


def described(code: Any) -> CodeInfo:
    """``describe_code``, once per code object (a calibration's recorders meet the program's code again)."""
    info = _DESCRIBED.get(code)
    if info is None:
        if len(_DESCRIBED) >= _DESCRIBED_MAX:
            _DESCRIBED.clear()
        info = _DESCRIBED[code] = describe_code(code)
    return info


class Stacks:
    """Takes the program's stack at a call; holds the code descriptions the stacks refer to."""

    def __init__(self) -> None:
        self.outer: set = set()  # ids of the frames around the recording's start: not the program's
        self.codes: List[CodeInfo] = []
        self.objects: List[Any] = []  # the code objects, by index
        self._index: Dict[Any, int] = {}  # code object -> index (None: not the program's)
        self._program: Dict[Any, bool] = {}
        self._frames: List[Any] = []  # the last stack's frames, held
        self._tokens: List[int] = []
        self._next = 0

    def _is_program(self, frame: Any) -> bool:
        code = frame.f_code
        known = self._program.get(code)
        if known is None:
            module = frame.f_globals.get("__name__", "") or ""
            name = code.co_filename
            generated = not module and name.startswith("<")
            known = self._program[code] = not (
                module.startswith(_PREFIXES)
                or module in SKIP + HOSTS
                or generated
                or name.startswith("<frozen")
                or (name.startswith(_STDLIB) and "site-packages" not in name)
            )
        return known

    def _code(self, code: Any) -> int:
        index = self._index.get(code)
        if index is None:
            index = self._index[code] = len(self.codes)
            self.objects.append(code)
            try:
                self.codes.append(described(code))
            except Exception:  # a code object dis cannot read: no loops known in it
                self.codes.append(
                    CodeInfo(str(getattr(code, "co_filename", "?")), str(getattr(code, "co_name", "?")), 0)
                )
        return index

    def take(self, frame: Any) -> Stack:
        """The program's stack from ``frame`` outward."""
        frames: List[Any] = []
        depth = 0
        outer = self.outer
        while frame is not None and depth < MAX_DEPTH:
            if id(frame) in outer:
                break  # what ran the recording (a launcher, a notebook's kernel): no loop of the program's
            if self._is_program(frame):
                frames.append(frame)
            frame = frame.f_back
            depth += 1
        frames.reverse()
        previous, tokens = self._frames, self._tokens
        out: List[Tuple[int, int, int]] = []
        new_tokens: List[int] = []
        same = True
        for level, f in enumerate(frames):
            if same and level < len(previous) and previous[level] is f:
                token = tokens[level]
            else:
                same = False
                self._next += 1
                token = self._next
            new_tokens.append(token)
            out.append((token, self._code(f.f_code), f.f_lasti))
        self._frames, self._tokens = frames, new_tokens
        return tuple(out)

    def around(self, frame: Any) -> None:
        """The frames from ``frame`` outward are not the program's: what started the recording runs them
        (its own frame, the first of the program's, is kept: ``with nnprofile.record():`` around a loop)."""
        while frame is not None and not self._is_program(frame):
            frame = frame.f_back
        self.outside(frame.f_back if frame is not None else None)

    def outside(self, frame: Any) -> None:
        """``frame`` and those around it run the program (a launcher's): the walk for a stack stops there."""
        while frame is not None:
            self.outer.add(id(frame))
            frame = frame.f_back

    def held(self) -> List[Any]:
        """The last stack's frames, outermost first."""
        return list(self._frames)

    def release(self) -> None:
        """Let the held frames go (a window closed): the next stack's tokens are all new."""
        self._frames, self._tokens = [], []
