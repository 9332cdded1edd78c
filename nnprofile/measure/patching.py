"""Replacing NNabla's callables while a program is recorded, wherever they are bound, and putting them back.

NNabla binds one factory under several names: ``nnabla.solver.Adam is
nnabla.solvers.Adam`` (``solvers.py`` is ``from .solver import *``), and the
communicators likewise. A program may reach a factory through any of them, or
through its own ``from nnabla.solvers import Adam``. So a factory is replaced
in every loaded module (and every namespace given, such as a notebook's) that
holds that very object, and each replacement is undone afterwards.
"""
from __future__ import annotations

import sys
from typing import Any, Dict, Iterable, List, MutableMapping, Tuple


class Patches:
    """The replacements made, so that ``undo`` restores every one of them."""

    def __init__(self) -> None:
        self._done: List[Tuple[Any, str, Any, bool]] = []  # (owner, name, original, owner is a mapping)

    def attribute(self, owner: Any, name: str, replacement: Any) -> None:
        """Replace one attribute (a class's method, a module's function)."""
        self._done.append((owner, name, getattr(owner, name), False))
        setattr(owner, name, replacement)

    def everywhere(self, replacements: Dict[int, Tuple[Any, Any]],
                   namespaces: Iterable[MutableMapping[str, Any]] = ()) -> int:
        """Replace each original (``id(original) -> (original, replacement)``) in every loaded module
        and every namespace given that holds it. Returns how many bindings were replaced."""
        count = 0
        owners: List[Tuple[Any, MutableMapping[str, Any], bool]] = []
        for module in list(sys.modules.values()):
            try:
                names: MutableMapping[str, Any] = vars(module)
            except TypeError:
                continue
            owners.append((module, names, False))
        owners += [(ns, ns, True) for ns in namespaces]
        for owner, names, is_mapping in owners:
            try:
                items = list(names.items())
            except Exception:  # a module whose namespace cannot be read while it changes
                continue
            for name, value in items:
                hit = replacements.get(id(value))
                if hit is None or hit[0] is not value:
                    continue
                if is_mapping:
                    self._done.append((owner, name, value, True))
                    owner[name] = hit[1]
                else:
                    try:
                        setattr(owner, name, hit[1])
                    except (AttributeError, TypeError):
                        continue
                    self._done.append((owner, name, value, False))
                count += 1
        return count

    def undo(self) -> None:
        """Put back every original, the last replacement first."""
        for owner, name, original, is_mapping in reversed(self._done):
            try:
                if is_mapping:
                    owner[name] = original
                else:
                    setattr(owner, name, original)
            except (AttributeError, TypeError):  # an owner that went away meanwhile
                pass
        self._done.clear()
