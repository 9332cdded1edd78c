"""A recorder's raw events turned into data: the ``Capture`` the assembly reads (``nnprofile.assembly``).

NNabla's functions and variables become descriptions with ids (``nnprofile.base.functions``), in
the order the events first name them; each call site the code line it is and what its bytecode
says it called on what; each solver its type, its name in the program, its parameters' ids and
the state it keeps; an eager call's function the arrays it ran on.
"""

from __future__ import annotations

import dis
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

from ..assembly.events import EAGER, Call, Capture, SiteInfo, SolverInfo
from ..base.buffers import solver_state_bytes
from ..base.functions import Describer, FunctionInfo, VariableInfo
from ..base.hookcost import HookCosts
from .callsite import BACKWARD_NAMES, FORWARD_NAMES, call_at


@lru_cache(maxsize=4096)
def _line(code: Any, lasti: int) -> int:
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        if ins.starts_line is not None:
            line = ins.starts_line
        if ins.offset >= lasti:
            break
    return line


def site_info(site_id: int, code: Any, lasti: int) -> SiteInfo:
    method, receiver = call_at(code, lasti, FORWARD_NAMES + BACKWARD_NAMES)
    phase = "backward" if method in BACKWARD_NAMES else "forward" if method else ""
    if method in ("forward_all", "backward_all"):  # nn.forward_all([...]): called on a module
        receiver = ""
    return SiteInfo(
        site_id, code.co_filename, _line(code, lasti), code.co_name, phase, receiver, _clears(code, _line(code, lasti))
    )


@lru_cache(maxsize=4096)
def _clears(code: Any, line: int) -> str:
    """Which clearing the call on this line asks for (its keyword arguments' names, read off the bytecode)."""
    current, names = code.co_firstlineno, set()  # type: int, set
    for ins in dis.get_instructions(code):
        if ins.starts_line is not None:
            current = ins.starts_line
        if current == line and ins.opname == "LOAD_CONST" and isinstance(ins.argval, tuple):
            names.update(str(x) for x in ins.argval)
    for name in ("clear_buffer", "clear_no_need_grad"):
        if name in names:
            return name
    return ""


def capture_of(recorder: Any, costs: Optional[HookCosts] = None) -> Capture:
    """The recorder's events and what they refer to, as data."""
    describer = Describer(parameter_names=recorder.parameter_names, created=recorder.functions.created)
    sites: Dict[Any, SiteInfo] = {}
    eager: Dict[Any, FunctionInfo] = {}
    events = []
    window = recorder.window
    for e in window.events:
        if not isinstance(e, Call):
            events.append(e)
            continue
        if e.kind == EAGER:
            info = eager.get(e.function)
            if info is None:
                info = eager[e.function] = _eager_info(describer, recorder.functions.eager[e.function])
            events.append(Call(info.id, e.start_ns, e.end_ns, None, EAGER, e.depth, e.stack, e.m0, e.m1))
            continue
        site = None
        if e.site is not None:
            known = sites.get(e.site)
            if known is None:
                known = sites[e.site] = site_info(len(sites), e.site[0], e.site[1])
            site = known.id
        f = describer.function(e.function).id
        events.append(Call(f, e.start_ns, e.end_ns, site, e.kind, e.depth, e.stack, e.m0, e.m1, e.entered_ns, e.frames))
    solvers = []
    for s in recorder.solvers:
        ids = [describer.variable(v).id for v in s.parameters.values()]
        state = 0 if s.own else solver_state_bytes(s.solver)  # a solver of the program's own: its state unknown
        module = str(getattr(type(s.solver), "__module__", "") or "")
        solvers.append(SolverInfo(s.type_name, s.variable, ids, state, s.created, s.made_ns, module))
    return Capture(
        events=events,
        graph=describer.graph(),
        sites={s.id: s for s in sites.values()},
        solvers=solvers,
        iterators=list(recorder.inputs.iterators),
        communicators=list(recorder.solver_calls.communicators),
        started_ns=window.started_ns,
        stopped_ns=window.stopped_ns or window.started_ns,
        excluded=list(window.excluded),
        comm_rank=recorder.solver_calls.comm_rank,
        callback_used=recorder.solver_calls.callback_used,
        skip_first=recorder.skip_first,
        active=recorder.active,
        costs=costs,
        codes=list(recorder.stacks.codes),
        faults=recorder.faults.counted(),
        marks=recorder.cpu.kind,
        waits=list(window.readings),
        pass_calls=list(window.passes),
        **sampled(recorder),
    )


def sampled(recorder: Any) -> Dict[str, Any]:
    """The sampler's samples, and each line's text (read here, not while the program ran)."""
    import linecache

    s = getattr(recorder, "sampler", None)
    if s is None:
        return {}
    sites = [(f, int(n or 0), fn, linecache.getline(f, n).strip()[:160] if n else "") for f, n, fn in s.wheres]
    return {
        "samples": list(recorder.window.samples),
        "sample_sites": sites,
        "sampled": recorder.window.taken,
        "sample_clock": (str(s.clock[0]), float(s.clock[1])),
        "handled": list(recorder.window.handled),
        "blocked": list(recorder.window.blocked),
    }


def _eager_info(describer: Describer, raw: Any) -> FunctionInfo:
    """An eager call's function: no graph holds it, its arrays are its own."""

    def variables(arrays: Any) -> list:
        out = []
        for shape, dtype in arrays:
            v = VariableInfo(len(describer.variables), tuple(shape), dtype, False, None)
            describer.add(("eager", v.id), v)
            out.append(v.id)
        return out

    ins, outs = variables(raw.inputs), variables(raw.outputs)
    info = FunctionInfo(
        len(describer.functions),
        raw.type_name,
        raw.type_name,
        dict(raw.args),
        ins,
        outs,
        [None] * len(ins),
        [False] * len(outs),
        [],
        raw.source,
    )
    describer.add(("eager", info.id), info)
    return info


def solver_parameters(capture: Capture) -> Dict[int, Tuple[str, ...]]:
    """Solver index -> the names of the parameters it updates (for naming it)."""
    params = capture.graph.variables
    return {i: tuple(params[v].parameter or "" for v in s.parameters) for i, s in enumerate(capture.solvers)}
