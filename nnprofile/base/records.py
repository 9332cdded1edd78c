"""Typed records that a result file holds as JSON objects: each field under its own name, checked for its kind as a
file is read, and read by name as the plain dicts of earlier versions were (``record["role"]``, ``.get``).

A record subclass is a dataclass whose ``KINDS`` say what each field is in the file (a tuple of types: a number
may be written as an integer). A sparse record (``SPARSE``) writes only the fields it has (not None); a dense one
writes every field, None as null, unless it is empty (``EMPTY``: no field set), which it writes as ``{}``. A name
the class does not know is kept as read (``extra``) and written back; ``encode``/``decode`` turn a field that is
a record or a tuple of its own into what the file holds and back.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar, Dict, FrozenSet, Iterator, Tuple, Type, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    KINDS: ClassVar[Dict[str, Any]] = {}
    SPARSE: ClassVar[bool] = True
    extra: Dict[str, Any]

    def encode(self, name: str, value: Any) -> Any:
        return value

    @classmethod
    def decode(cls, name: str, value: Any) -> Any:
        return value

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) in (None, [], {}) for f in fields(self) if f.name != "extra")  # type: ignore[arg-type]

    def to_json(self) -> Dict[str, Any]:
        if not self.SPARSE and self.is_empty():
            return dict(self.extra)
        out: Dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "extra" or (value is None and self.SPARSE):
                continue
            out[f.name] = None if value is None else self.encode(f.name, value)
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls: Type[R], data: Dict[str, Any]) -> R:
        """The record as a file holds it; ValueError (naming the field) where a field is not of its kind."""
        values: Dict[str, Any] = {k: v for k, v in data.items() if k in cls.KINDS and v is not None}
        for name, value in values.items():
            kind = cls.KINDS[name]
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise ValueError("%s is %s" % (name, type(value).__name__))
            values[name] = cls.decode(name, value)
        return cls(**values, extra={k: v for k, v in data.items() if k not in cls.KINDS})  # type: ignore[call-arg]

    # -- read by name, as the dicts of earlier versions ----------------------------------

    def _read(self, name: object) -> Tuple[bool, Any]:
        """(whether ``to_json`` would hold ``name``, the value it would hold), from that one field alone (a read by
        name once made the whole record's JSON)."""
        if name in _field_names(type(self)):
            value = getattr(self, str(name))
            if value is None:
                return not self.SPARSE and not self.is_empty(), None
            return True, self.encode(str(name), value)
        return (True, self.extra[name]) if name in self.extra else (False, None)

    def __getitem__(self, name: str) -> Any:
        value = self._read(name)[1]
        if value is None:
            raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        value = self._read(name)[1]
        return default if value is None else value

    def __contains__(self, name: object) -> bool:
        return self._read(name)[0]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __bool__(self) -> bool:
        return bool(self.to_json())


_NAMES: Dict[type, FrozenSet[str]] = {}


def _field_names(cls: type) -> FrozenSet[str]:
    """A record class's own fields (``extra`` aside), found once per class."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = frozenset(f.name for f in fields(cls) if f.name != "extra")
    return names
