"""The result of a profile: entries, sections and profiles as plain data, result.json, DataFrames."""
from .model import Entry, Profile, Section, format_ms, ms

__all__ = ["Entry", "Profile", "Section", "format_ms", "ms"]
