"""What a saved value may hold, by its field's declared type: result.json is input like any other, and a forged or
damaged value is named where it is read, never met later in a figure or a renderer.

``check_fields`` takes the fields of a dataclass (their types as declared, in text) and the values a file holds
for them; a field of a type it does not know (a nested record, read by its own loader) is left to that loader.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Callable, Dict, Iterable, List, Type

from ..base.errors import ProfileError

WHOLE_LIMIT = 1 << 62  # no count, size or time a result holds comes near
# How many of each a result holds at most: more than nnprofile writes (a recording keeps at most MAX_TIMELINE events
# on its timeline), and few enough that ``report`` and ``check`` of a file at every limit run in seconds.
LIMITS = {
    "sections": 4_096,
    "entries": 100_000,  # in all sections together
    "samples": 2_000_000,  # of all entries together
    "timeline events": 200_000,
    "windows": 10_000,
    "notes": 10_000,
}
MAX_TIMELINE = LIMITS["timeline events"]


def first_events(events: List[Any]) -> List[Any]:
    """A timeline as a result holds it: at most MAX_TIMELINE events, the first (by their start) where there are more."""
    return events if len(events) <= MAX_TIMELINE else sorted(events, key=lambda e: e.start)[:MAX_TIMELINE]


def bounded(what: str, count: int) -> None:
    """A list of ``count`` of ``what`` (``LIMITS``' names) holds no more than a result can."""
    if count > LIMITS[what]:
        raise ProfileError("it holds %d %s, more than a result holds (%d): not read" % (count, what, LIMITS[what]))


def number(x: Any, whole: bool = False) -> bool:
    """A finite JSON number (a whole one where asked), not a boolean."""
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return abs(x) <= WHOLE_LIMIT
    return not whole and isinstance(x, float) and math.isfinite(x)


def _text(x: Any) -> bool:
    return isinstance(x, str)


def _dict_of(value: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, dict) and all(isinstance(k, str) and value(v) for k, v in x.items())


def _list_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, list) and all(item(v) for v in x)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: x is None or check(x)


def _whole(x: Any) -> bool:
    return number(x, whole=True)


def _pair(x: Any) -> bool:
    return isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and number(x[1])


CHECKS: Dict[str, Callable[[Any], bool]] = {
    "str": _text,
    "Optional[str]": _optional(_text),
    "int": _whole,
    "Optional[int]": _optional(_whole),
    "float": number,
    "Optional[float]": _optional(number),
    "bool": lambda x: isinstance(x, bool),
    "List[str]": _list_of(_text),
    "List[int]": _list_of(_whole),
    "List[float]": _list_of(number),
    "List[Optional[float]]": _list_of(_optional(number)),
    "Dict[str, Any]": lambda x: isinstance(x, dict),
    "Dict[str, float]": _dict_of(number),
    "Optional[Dict[str, float]]": _optional(_dict_of(number)),
    "List[Tuple[str, float]]": _list_of(_pair),
}


def _check_of(declared_type: str) -> Any:
    """The check of a declared type; a list or record of records (read by their own loaders) is at least a list, or
    an object (or null where optional)."""
    if declared_type in CHECKS:
        return CHECKS[declared_type]
    if declared_type.startswith("List["):
        return lambda x: isinstance(x, list)
    if declared_type.startswith("Optional["):
        return lambda x: x is None or isinstance(x, dict)
    return None


def declared(cls: Type[Any]) -> Dict[str, str]:
    """A dataclass's fields and their types as declared (text)."""
    return {f.name: str(f.type) for f in fields(cls)}


def check_fields(types: Dict[str, str], values: Dict[str, Any], where: str, skip: Iterable[str] = ()) -> None:
    """Each value of a known field of a known type holds that type; else one error naming the field."""
    left_out = set(skip)
    for name, value in values.items():
        check = _check_of(types.get(name, "")) if name not in left_out else None
        if check is not None and not check(value):
            raise ProfileError("%s: %s holds %s, not a value of type %s" % (where, name, repr(value)[:40], types[name]))
