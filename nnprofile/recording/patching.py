"""Replacing NNabla's callables while a program is recorded, wherever they are bound, and putting them back.

NNabla binds one factory under several names: ``nnabla.solver.Adam is
nnabla.solvers.Adam`` (``solvers.py`` is ``from .solver import *``), and the
communicators likewise. A program may reach a factory through any of them, or
through its own ``from nnabla.solvers import Adam``. So a factory is replaced
in every loaded module (and every namespace given, such as a notebook's) that
holds that very object, and each replacement is undone afterwards, also where
the replacement was copied to meanwhile (a module first imported while the
program was recorded, such as ``nnabla.solvers`` copying ``nnabla.solver``'s
names, holds the replacements: it gets the originals back too).

A module the program may never import (``nnabla.utils.data_iterator`` brings SciPy, 17,000 objects that every full
garbage collection of the program would then walk) is patched once the program imports it (``after_import``).
"""

from __future__ import annotations

import importlib.machinery
import sys
from typing import Any, Callable, Dict, Iterable, List, MutableMapping, Optional, Tuple


class Patches:
    """The replacements made, so that ``undo`` restores every one of them."""

    def __init__(self) -> None:
        self._done: List[Tuple[Any, str, Any, bool]] = []  # (owner, name, original, owner is a mapping)
        self._originals: Dict[int, Tuple[Any, Any]] = {}  # id(replacement) -> (replacement, original)
        self._namespaces: List[MutableMapping[str, Any]] = []
        self._finders: List["AfterImport"] = []

    def after_import(self, name: str, patch: Callable[[Any], None]) -> None:
        """``patch(module)`` now, where the module is loaded already; else as soon as it is (until ``undo``)."""
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
            return
        finder = AfterImport(name, patch)
        self._finders.append(finder)
        sys.meta_path.insert(0, finder)

    def attribute(self, owner: Any, name: str, replacement: Any) -> None:
        """Replace one attribute (a class's method, a module's function)."""
        inherited = isinstance(owner, type) and name not in vars(owner)
        self._done.append((owner, name, _INHERITED if inherited else getattr(owner, name), False))
        setattr(owner, name, replacement)

    def everywhere(
        self, replacements: Dict[int, Tuple[Any, Any]], namespaces: Iterable[MutableMapping[str, Any]] = ()
    ) -> int:
        """Replace each original (``id(original) -> (original, replacement)``) in every loaded module
        and every namespace given that holds it. Returns how many bindings were replaced."""
        count = 0
        for original, replacement in replacements.values():
            self._originals[id(replacement)] = (replacement, original)
        self._namespaces += [ns for ns in namespaces if all(ns is not n for n in self._namespaces)]
        for owner, names, is_mapping in _owners(namespaces):
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
        """Put back every original, the last replacement first; then wherever a replacement was copied."""
        for finder in self._finders:
            finder.remove()
        self._finders.clear()
        for owner, name, original, is_mapping in reversed(self._done):
            _put(owner, name, original, is_mapping)
        self._done.clear()
        if self._originals:
            for owner, names, is_mapping in _owners(self._namespaces):
                try:
                    items = list(names.items())
                except Exception:
                    continue
                for name, value in items:
                    hit = self._originals.get(id(value))
                    if hit is not None and hit[0] is value:
                        _put(owner, name, hit[1], is_mapping)
        self._originals.clear()
        self._namespaces.clear()


def _owners(namespaces: Iterable[MutableMapping[str, Any]]) -> List[Tuple[Any, MutableMapping[str, Any], bool]]:
    """Every loaded module's namespace, and the namespaces given."""
    owners: List[Tuple[Any, MutableMapping[str, Any], bool]] = []
    for module in list(sys.modules.values()):
        try:
            names: MutableMapping[str, Any] = vars(module)
        except TypeError:
            continue
        owners.append((module, names, False))
    owners += [(ns, ns, True) for ns in namespaces]
    return owners


_INHERITED = object()  # a class's attribute it inherited: put back by deleting the replacement


def _put(owner: Any, name: str, value: Any, is_mapping: bool) -> None:
    try:
        if value is _INHERITED:
            delattr(owner, name)
        elif is_mapping:
            owner[name] = value
        else:
            setattr(owner, name, value)
    except (AttributeError, TypeError):  # an owner that went away meanwhile, or that cannot be set
        pass


class AfterImport:
    """An import finder for one module: its spec is Python's own, its loader runs ``patch(module)`` after the module
    ran; it takes itself off the import path once it has (or when removed)."""

    def __init__(self, name: str, patch: Callable[[Any], None]) -> None:
        self.name, self.patch = name, patch

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, fullname: str, path: Optional[Any] = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _ThenPatch(spec.loader, self)  # type: ignore[assignment]
        return spec


class _ThenPatch:
    """A module's own loader, its module patched once it has run (a failing patch leaves the module as it is)."""

    def __init__(self, loader: Any, finder: AfterImport) -> None:
        self._loader, self._finder = loader, finder

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._finder.remove()
        try:
            self._finder.patch(module)
        except Exception:  # nnprofile's failure: the program's import stands, its reads go untimed
            pass

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, is_package...: the loader's own
        return getattr(self._loader, name)
