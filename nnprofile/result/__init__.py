"""The result model every room builds on: entries, sections and profiles as plain data, the layers
that give entries, result.json (versioned, every earlier version loads), and pandas DataFrames.

It imports nothing above it; how a result shows itself is filled in from above (``views``).
"""

from .model import Entry, Interference, Profile, Section, format_ms, ms
from . import frames  # noqa: F401  (registers the DataFrames a Profile gives: ``views``)

__all__ = ["Entry", "Interference", "Profile", "Section", "format_ms", "ms"]
