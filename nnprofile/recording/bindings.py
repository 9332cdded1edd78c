"""Where NNabla binds what the recorder replaces: its communicator factories, the parameters by full name, and
the places (a notebook's namespace, one level down) where a program keeps solvers and communicators made before
recording started."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

from .proxies import TimedCommunicator

COMMUNICATOR_FACTORIES = (
    "MultiProcessDataParallelCommunicator",
    "MultiProcessCommunicator",
    "MultiProcessDataParalellCommunicator",
    "Comm",
    "Dist",
    "DataParallelCommunicator",
)


def one_level_down(namespaces: Sequence[Any]) -> List[Any]:
    """The namespaces, and one level down in them: the dicts they hold and the attributes of the objects
    they hold (a notebook's ``trainer.solver``, ``solvers["gen"]``), where an earlier cell's solver may be."""
    import types

    places: List[Any] = list(namespaces)
    seen = {id(ns) for ns in places}
    for namespace in namespaces:
        for value in list(namespace.values()):
            if isinstance(value, (types.ModuleType, type, types.FunctionType, types.MethodType)):
                continue
            try:
                inner = value if isinstance(value, dict) else getattr(value, "__dict__", None)
            except Exception:  # a proxy that fails on being asked
                continue
            if isinstance(inner, dict) and id(inner) not in seen:
                seen.add(id(inner))
                places.append(inner)
    return places


def is_communicator(value: Any) -> bool:
    """An NNabla communicator (made before recording started): its type has the collectives."""
    kind = type(value)
    return (
        kind is not TimedCommunicator
        and not isinstance(value, type)
        and all(callable(getattr(kind, m, None)) for m in ("init", "all_reduce", "bcast", "barrier"))
    )


def communicator_factories() -> List[Callable]:
    """NNabla's communicator factories, each once: bound in nnabla.communicator and
    nnabla.communicators under several names (MultiProcessDataParallelCommunicator, its aliases Comm,
    Dist, MultiProcessCommunicator and the misspelled MultiProcessDataParalellCommunicator, and
    DataParallelCommunicator); none when NNabla cannot import its communicators."""
    try:
        import nnabla.communicators as communicators
    except Exception:
        return []
    seen: Dict[int, Callable] = {}
    for name in COMMUNICATOR_FACTORIES:
        value = getattr(communicators, name, None)
        if value is not None and callable(value):
            seen.setdefault(id(value), value)
    return list(seen.values())


def all_parameters() -> Dict[str, Any]:
    """Every parameter by its full name, whatever scope the program is in now (NNabla's own
    get_parameters names them relative to the current scope)."""
    from nnabla import parameter

    out: Dict[str, Any] = {}

    def walk(scope: Any, path: str) -> None:
        for key, value in list(scope.items()):
            name = "%s/%s" % (path, key) if path else key
            if isinstance(value, dict):
                walk(value, name)
            else:
                out[name] = value

    walk(parameter.root_scope, "")
    return out
