"""The text log, line for line in NNC's Profile format."""
from __future__ import annotations

import os
import re
from typing import List

from ..result import Entry, Profile, Section, format_ms

FILENAME = "profile.log"
ENTRY_LINE = re.compile(r"^(?P<label>.*) (?P<ms>-?\d+\.\d{6})\(ms\)$")


def header_lines(profile: Profile) -> List[str]:
    h = profile.header
    lines = ["nnprofile %s (nnabla %s): %s" % (h.get("nnprofile"), h.get("nnabla"), h.get("project"))]
    lines.append("Context: %s" % h.get("context"))
    for note in profile.notes:
        lines.append("Note: %s" % note)
    lines.append("Timing: %s; each figure is the mean time of one call" % h.get("sampling"))
    return lines


def section_line(section: Section) -> str:
    return "Profiling %s ..." % section.title


def entry_line(entry: Entry) -> str:
    return "%s %s(ms)" % (entry.label, format_ms(entry.mean_ms))


def footer_lines(profile: Profile) -> List[str]:
    if profile.complete:
        return ["Profile Completed."]
    return ["Profile incomplete: %s." % (profile.failure or "stopped")]


def render(profile: Profile) -> str:
    lines = header_lines(profile)
    for section in profile.sections:
        lines.append(section_line(section))
        lines.extend(entry_line(e) for e in section.entries)
    lines.extend(footer_lines(profile))
    return "\n".join(lines) + "\n"


def write(profile: Profile, outdir: str) -> List[str]:
    path = os.path.join(outdir, FILENAME)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(profile))
    return [path]
