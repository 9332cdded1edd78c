"""A profile's notes as data: what kind of thing each says, and its figures.

The rooms that find something worth saying beside the figures (the assembly of a recording, the run's driver, a
project's context, a merge) make a ``Note``: a ``kind`` (``"own_work"``, ``"skip_shrunk"``, ...) and the figures
and names that kind needs, all JSON values. One module of the renderers (``nnprofile.render.notes``) says each kind
in words, so the log, the workbook, the report, the notebook and the terminal say it the same way.

A note of kind ``"text"`` holds its words as they are (``figures["text"]``): the notes of results written before
version 11, which were words, load as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict

from . import views
from .checks import number

TEXT = "text"


@dataclass
class Note:
    kind: str
    figures: Dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {"kind": self.kind, "figures": dict(self.figures)}

    @classmethod
    def from_json(cls, data: Any) -> "Note":
        """A note as the file holds it (a version 10 note, words, is read as one of kind "text"); ValueError where
        it is neither."""
        if isinstance(data, Note):  # made by hand, already one
            return data
        if isinstance(data, str):
            return cls(TEXT, {"text": data})
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("a note is an object with its kind")
        figures = data.get("figures", {})
        if not isinstance(figures, dict) or not all(isinstance(k, str) and _figure(v) for k, v in figures.items()):
            raise ValueError(
                "note %r: its figures are not names of numbers, words or lists of them" % data["kind"][:40]
            )
        return cls(data["kind"], dict(figures))

    @classmethod
    def text(cls, words: str) -> "Note":
        """A note of words (a user's own, or an earlier version's)."""
        return cls(TEXT, {"text": words})

    def __str__(self) -> str:
        """The note in words, as every output says it (the renderers, once loaded, say it)."""
        say = views.find("note_text")
        if say is not None:
            return str(say(self))
        if self.kind == TEXT:
            return str(self.figures.get("text", ""))
        return "%s: %s" % (self.kind, ", ".join("%s %s" % kv for kv in self.figures.items()))

    def __contains__(self, words: str) -> bool:
        """``"fewer than" in note``: whether its words hold these (as the notes of earlier versions, words, did)."""
        return words in str(self)


def _figure(x: Any) -> bool:
    """A JSON value a note's figure may be: words, a finite number, a truth, nothing, or a list or an object of
    them."""
    if x is None or isinstance(x, (str, bool)):
        return True
    if isinstance(x, (int, float)):
        return number(x)
    if isinstance(x, list):
        return all(_figure(v) for v in x)
    if isinstance(x, dict):
        return all(isinstance(k, str) and _figure(v) for k, v in x.items())
    return False
