"""The Python API: profile a project, record a program, load a result; the command line and the
notebook magic are thin layers over it. ``nnprofile/__init__.py`` exports these names.

``projects``: ``profile``, ``load`` (and ``--repeat`` in fresh processes); ``programs``: ``record``,
``step`` and ``Recording`` (rank folders and their merge under a launcher); ``launch``: ``run`` a
script or a module as Python does; ``windows``: a long training's windows and the view over them;
``ondemand``: ``capture`` a window of a running program; ``guard``: a rank ended by SIGTERM still
writes what it recorded.
"""

from .. import render  # noqa: F401  (the renderers register how a result and a comparison show themselves)
from ..analysis import Analysis, analyze
from ..base.errors import Interrupted, ProfileError
from ..compare import Comparison, compare_results
from ..render.files import prepare_outdir
from ..result import Entry, Profile, Section
from ..result.notes import Note
from ..render import notes as _notes  # noqa: F401 (says a Note in words: str(note))
from .launch import run, run_recording
from .ondemand import capture
from .programs import Recording, step
from .block import record
from .projects import load, profile

__all__ = [
    "profile",
    "load",
    "prepare_outdir",
    "record",
    "run",
    "run_recording",
    "step",
    "Recording",
    "capture",
    "analyze",
    "Analysis",
    "compare_results",
    "Comparison",
    "Entry",
    "Note",
    "Profile",
    "Section",
    "ProfileError",
    "Interrupted",
]
