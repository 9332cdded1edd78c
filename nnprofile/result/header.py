"""What a run states about itself: the typed header of a project's profile, a program's recording, or a
merged view of a distributed run's ranks.

Every renderer and analysis reads these fields by name; result.json saves them with the header's
``kind`` (format version 6 on; earlier files are upgraded, see ``nnprofile.result.file``). A field
an older file held that this version does not name is kept in ``extra`` and shown as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Dict, List, Optional, Tuple, Type, Union

from ..base.errors import ProfileError
from .checks import check_fields, declared
from .notes import Note

BatchSize = Union[None, int, Dict[str, int]]
# The fields a header holds as notes (a kind and its figures, said in words by the renderers): how each figure was
# sampled, and a program's how its steps were found and when its windows were recorded.
NOTED = ("sampling", "steps", "schedule")


@dataclass
class Header:
    """What every run states: what was profiled, where, when, and how it was sampled."""

    KIND: ClassVar[str] = ""

    nnprofile: str = ""
    nnabla: str = ""
    project: str = ""  # the project's files, or the program's command
    context: str = "cpu:float"  # the context that ran (backend:type_config)
    machine: str = ""
    date: str = ""
    mode: str = "isolated"  # isolated, graph (a project), record (a program)
    sampling: Note = field(default_factory=lambda: Note.text(""))  # how each figure was sampled (said by render)
    target_rse: Optional[float] = None
    drift_threshold: float = 0.10
    batch_size: BatchSize = None
    implementation_classes: List[str] = field(default_factory=list)
    # The function hooks' cost per function (graph mode, programs): to a pass, and inside a function.
    hook_overhead_ns: Optional[float] = None
    hook_inside_ns: Optional[float] = None
    # What this machine reaches (``nnprofile.base.machine``): {"gflops": ..., "gbytes_per_s": ...}.
    machine_rates: Dict[str, float] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in NOTED:  # made by hand with words, as earlier versions held them
            if isinstance(getattr(self, name, None), str):
                setattr(self, name, Note.text(getattr(self, name)))

    @property
    def kind(self) -> str:
        return self.KIND

    def items(self) -> List[Tuple[str, Any]]:
        """Every field in order (``extra``'s at the end), as the Info sheet lists them."""
        out = [(f.name, getattr(self, f.name)) for f in fields(self) if f.name != "extra"]
        return out + list(self.extra.items())

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind}
        out.update((k, v.to_json() if isinstance(v, Note) else v) for k, v in self.items())
        return out


@dataclass
class ProjectHeader(Header):
    """An NNC project's profile: which files, the context asked for, the data, the clock."""

    KIND: ClassVar[str] = "project"

    project_sha256: str = ""
    requested_context: str = ""
    data: str = "datasets"  # or "synthetic"
    memory_limit: Optional[int] = None
    repeat: int = 1  # fresh processes pooled (--repeat)
    clock: str = ""
    clock_resolution_ns: Optional[float] = None
    timing_overhead_ns: Optional[float] = None


@dataclass
class ProgramHeader(Header):
    """A recorded program: how its steps were found and which it kept, what the hooks cost, its rank."""

    KIND: ClassVar[str] = "program"

    mode: str = "record"
    steps: Note = field(default_factory=lambda: Note.text(""))  # how the steps were found (the rule: its figures)
    active_steps: int = 0
    skipped_steps: int = 0
    kept_steps: List[int] = field(default_factory=list)  # the kept steps' numbers (from 1); older: consecutive
    plain_steps: List[int] = field(default_factory=list)  # the steps run without the hooks (for their cost)
    schedule: Note = field(default_factory=lambda: Note.text(""))  # when windows were recorded (wait, warmup...)
    window: int = 0  # which window its sections are (from 1; 0: the only one)
    run_steps: Optional[int] = None  # the steps the whole run went through (its final files; None in a window's)
    call_overhead_ns: Optional[float] = None  # an auto_forward call's timing cost, in all
    call_inside_ns: Optional[float] = None  # and inside its own interval
    chain_hook_overhead_ns: Optional[float] = None
    hooks_in_program: Optional[Dict[str, float]] = None
    hook_eviction: Optional[float] = None
    # One rank of several (under a launcher, or told by the program's communicator).
    rank: Optional[int] = None
    world_size: Optional[int] = None
    launcher: str = ""
    launch: Optional[str] = None
    host: str = ""
    clock_origin_ns: Optional[int] = None
    started_unix: Optional[float] = None
    # nnprofile's own work outside the program's calls before these files, in s by kind: ``calibration`` (the
    # hooks' cost on a chain), ``replicas`` (on the program's functions: an earlier nnprofile's results only),
    # ``machine`` (its rates), ``windows`` (earlier windows' files). Empty in results before version 13.
    own_cost: Dict[str, float] = field(default_factory=dict)


@dataclass
class MergedHeader(ProgramHeader):
    """A merged view of a distributed run: a rank's header (no rank of its own), which ranks, on which hosts."""

    KIND: ClassVar[str] = "merged"

    ranks_merged: List[int] = field(default_factory=list)
    hosts: List[str] = field(default_factory=list)


KINDS: Dict[str, Type[Header]] = {h.KIND: h for h in (ProjectHeader, ProgramHeader, MergedHeader)}


def header_from_dict(data: Dict[str, Any]) -> Header:
    """A header as result.json (version 6 on) holds it: its kind, its fields, and what else it held."""
    kind = KINDS.get(str(data.get("kind", "project")), ProjectHeader)
    names = {f.name for f in fields(kind)} - {"extra"}
    known = {k: v for k, v in data.items() if k in names}
    check_fields(declared(kind), known, "header")
    for name in NOTED:
        if name in known:
            known[name] = _note(known[name], name)
    _check_batch_size(known.get("batch_size"))
    extra = dict(data.get("extra") or {})
    extra.update({k: v for k, v in data.items() if k not in names and k not in ("kind", "extra")})
    return kind(extra=extra, **known)


def _note(value: Any, name: str) -> Note:
    """A header's field that says something (a note: a kind and its figures; the words of an earlier version)."""
    try:
        return Note.from_json(value)
    except ValueError as e:
        raise ProfileError("header.%s: %s" % (name, e))


def _check_batch_size(size: Any) -> None:
    """A batch size is a whole number of 1 or more (one, or one per network)."""
    sizes = list(size.values()) if isinstance(size, dict) else [size]
    for n in sizes:
        if n is None and not isinstance(size, dict):
            continue
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ProfileError("header.batch_size must be a whole number of 1 or more, not %s" % repr(n)[:40])
        if n > 1 << 40:
            raise ProfileError("header.batch_size %s is larger than any batch (at most 2**40)" % repr(n)[:40])


def as_merged(rank: ProgramHeader, **changes: Any) -> MergedHeader:
    """A rank's header as the merged view's: the same fields, but those of one rank."""
    values = {
        f.name: getattr(rank, f.name) for f in fields(rank) if f.name not in ("rank", "clock_origin_ns", "started_unix")
    }
    values.update(changes)
    return MergedHeader(**values)
