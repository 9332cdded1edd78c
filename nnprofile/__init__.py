"""nnprofile: a layer-level profiler for NNabla and Neural Network Console projects.

    import nnprofile
    profile = nnprofile.profile("projects/lenet/lenet.nntxt", outdir="results/lenet")
    layers = profile.layers()               # pandas: one row per layer, forward and backward paired
    frame = profile.to_dataframe()          # pandas: one row per entry, in log order
    same = nnprofile.load("results/lenet")  # a saved profile, of any format version
    comparison = nnprofile.compare_results("results/a", "results/b")

    with nnprofile.record(outdir="results/mine") as rec:   # any NNabla code
        for batch in data:
            train_step(batch)                              # a step ends at solver.update()
    rec.profile.to_dataframe()

In Jupyter or IPython: ``%load_ext nnprofile``, then a cell that starts with
``%%nnprofile``. In tests: ``nnprofile.testing.assert_layer_order``.

Importing nnprofile is light: it loads nothing (NNabla, numpy, pandas) until a
name of its API is used, so that its pytest plugin costs nothing in a session
that does not use it. It changes nothing in NNabla (its logger included); the
command line quiets NNabla's log for its own run only.
"""

from typing import TYPE_CHECKING, Any, List

from ._version import __version__

# name -> the module that defines it, imported on first use (PEP 562).
# (every name through nnprofile.api, which also loads the renderers that show a result in a notebook)
_API = {
    name: "api"
    for name in (
        "profile",
        "load",
        "record",
        "run",
        "step",
        "Recording",
        "capture",
        "analyze",
        "Analysis",
        "compare_results",
        "Comparison",
        "Interrupted",
        "ProfileError",
        "Entry",
        "Note",
        "Profile",
        "Section",
    )
}

__all__ = [
    "__version__",
    "profile",
    "load",
    "record",
    "run",
    "step",
    "Recording",
    "capture",
    "compare_results",
    "analyze",
    "Analysis",
    "Comparison",
    "Entry",
    "Note",
    "Profile",
    "Section",
    "ProfileError",
    "Interrupted",
    "testing",
    "LayerOrderError",
]

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from . import testing
    from .api import (
        Analysis,
        Comparison,
        Entry,
        Note,
        Interrupted,
        Profile,
        ProfileError,
        Recording,
        Section,
        analyze,
        capture,
        compare_results,
        load,
        profile,
        record,
        run,
        step,
    )


def __getattr__(name: str) -> Any:
    import importlib

    if name == "testing":
        return importlib.import_module(".testing", __name__)
    if name == "LayerOrderError":  # the golden layer order's failure (nnprofile.testing), pickled by this name
        return importlib.import_module(".testing.order", __name__).LayerOrderError
    module = _API.get(name)
    if module is None:
        raise AttributeError("module 'nnprofile' has no attribute %r" % name)
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext nnprofile``: the ``%%nnprofile`` cell magic (see ``nnprofile.notebook``)."""
    from .notebook import load_ipython_extension as load_extension

    load_extension(ipython)
