"""Wrappers that are on while a window is open, and between windows only where they are needed.

Between windows the program should run as NNabla's own: a monitor's ``add`` and an iterator's ``next``
are put back to the originals there, unless the steps can only be counted by them (``counting``).
Each wrapper belongs to a group (``"monitors"``, ``"reads"``), switched as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List

from .patching import Patches


@dataclass
class Toggled:
    """One method wrapped: where it lives, the original and its wrapper."""

    owner: Any
    name: str
    original: Any
    wrapper: Any


class Toggles:
    """The groups of switchable wrappers, and whether each is on now."""

    def __init__(self, patches: Patches) -> None:
        self._patches = patches  # where each wrapper is set, so that the recording's end puts every original back
        self.groups: Dict[str, List[Toggled]] = {}
        self.on: Dict[str, bool] = {}

    def add(self, group: str, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Wrap the class ``owner``'s method ``name`` (``make(original)``), on from now."""
        original = vars(owner)[name]
        wrapper = make(original)
        self._patches.attribute(owner, name, wrapper)
        self.groups.setdefault(group, []).append(Toggled(owner, name, original, wrapper))
        self.on[group] = True

    def set(self, group: str, on: bool) -> None:
        """The group's wrappers on (or the originals back); nothing where it is so already, or never wrapped."""
        if self.on.get(group, on) == on:
            return
        self.on[group] = on
        for t in self.groups[group]:
            setattr(t.owner, t.name, t.wrapper if on else t.original)

    def is_on(self, group: str) -> bool:
        return self.on.get(group, False)
