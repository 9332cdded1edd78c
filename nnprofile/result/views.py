"""How a result shows itself (in a notebook, as a frame of ranks), filled in by the rooms above the model.

The result model is the lowest room that every other room builds on, so it imports none of
them: ``Profile._repr_html_`` and ``Profile.ranks_dataframe()`` look their makers up here, and
the renderers (``nnprofile.render.inline``) and the analysis (``nnprofile.analysis``) register
them when they load. ``import nnprofile`` and its API load both.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

_VIEWS: Dict[str, Callable[[Any], Any]] = {}


def register(name: str, maker: Callable[[Any], Any]) -> None:
    _VIEWS[name] = maker


def find(name: str) -> Optional[Callable[[Any], Any]]:
    return _VIEWS.get(name)


def make(name: str, value: Any) -> Any:
    """The view ``name`` of ``value``; a clear error where no room above has registered it."""
    maker = _VIEWS.get(name)
    if maker is None:
        raise RuntimeError(
            "%s is made by nnprofile's analysis and renderers: import nnprofile (the API loads "
            "them) before asking for it" % name
        )
    return maker(value)
