"""nnprofile's version: one place, read by the package, its results' headers and setup.cfg."""

__version__ = "0.3.0"
