"""The Python API: profile a project, record a program, load a result; the command line and the
notebook magic are thin layers over it. ``nnprofile/__init__.py`` exports these names.

``projects``: ``profile``, ``load`` (and ``--repeat`` in fresh processes); ``programs``: ``record``,
``run``, ``step`` and ``Recording`` (rank folders and their merge under a launcher); ``guard``: a
rank ended by SIGTERM still writes what it recorded.
"""
from .. import render  # noqa: F401  (the renderers register how a result and a comparison show themselves)
from ..analysis import Analysis, analyze
from ..base.errors import Interrupted, ProfileError
from ..compare import Comparison, compare_results
from ..render.files import prepare_outdir
from ..result import Entry, Profile, Section
from .programs import Recording, record, run, run_recording, step
from .projects import load, profile

__all__ = ["profile", "load", "prepare_outdir", "record", "run", "run_recording", "step", "Recording", "analyze",
           "Analysis", "compare_results", "Comparison", "Entry", "Profile", "Section", "ProfileError", "Interrupted"]
