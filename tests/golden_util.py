"""Turn a log into its skeleton: section headers and entry labels, times removed."""

from nnprofile.render.log import ENTRY_LINE

FOOTERS = (
    "Coverage:",
    "Sampling:",
    "Missed the",
    "Too few samples",
    "FLOPs not counted",
    "Step:",
    "Half precision:",
    "Top layers",
    "Advice:",
    "Drift:",
    "Repeat:",
    "Incomplete entries",
    "Memory",
    "Input:",
    "Interference:",
    "Layers:",
    "Note:",  # what this machine reaches, its own interference: machine-dependent
    # "About this run": how it was measured, after the sections
    "About this run:",
    "Timing:",
    "Schedule:",
    "Clock:",
    "Hooks",
    "Calls:",
    "Other:",
    "Written to",
)


def skeleton(log_text):
    lines = []
    started = False
    for line in log_text.splitlines():
        if line.startswith("Profiling "):
            started = True
        if not started:
            continue  # the header names paths, versions and dates
        if line.startswith(FOOTERS) or line.startswith("  "):
            continue  # figures that vary from run to run (and their wrapped continuations); tested elsewhere
        m = ENTRY_LINE.match(line)
        lines.append(m.group("label") if m else line)
    return lines


def section_labels(log_text, title_prefix):
    """Entry labels of the first section whose header starts with title_prefix."""
    out, inside = [], False
    for line in skeleton(log_text):
        if line.startswith("Profiling "):
            if inside:
                break
            inside = line.startswith(title_prefix)
            continue
        if inside and not line.startswith("Profile "):
            out.append(line)
    return out
