"""The logged layer order of a project or a result, and its comparison with a golden file."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

from . import golden

if TYPE_CHECKING:
    from ..result import Profile

PathLike = Union[str, "os.PathLike[str]"]
PROJECT_SUFFIXES = (".nntxt", ".nnp", ".prototxt")
# A label: phase (layer name : class[ : in_place]); whole-step entries have no parentheses.
ORDERLESS = ("engine",)
SCRIPT_LINE = "Profiling the program's step ..."
_LABEL = re.compile(r"^(?P<phase>\S+) \((?P<name>.+) : (?P<cls>[^:()]+?)(?P<in_place> : in_place)?\)$")


class LayerOrderError(AssertionError):
    """The logged order differs from the golden file (or there is no golden file yet)."""


LayerOrderError.__module__ = "nnprofile"  # pytest's summary line: nnprofile.LayerOrderError: <golden file>: ...


def layer_order(source: Union["Profile", PathLike], synthetic: bool = True) -> List[str]:
    """The log's skeleton: each section's header line, its entries' labels in log order, and the last line.

    ``source``: a project (.nntxt, .nnp: set up, and every entry run once, no timing rounds;
    ``synthetic`` feeds generated batches, so no dataset is read), a result folder or
    result.json (``nnprofile run`` or a profile), or a ``Profile``.
    """
    from ..render.log import footer_lines, section_line
    from ..result import Profile

    if isinstance(source, Profile):
        profile = source
    else:
        path = os.fspath(source)
        if path.lower().endswith(PROJECT_SUFFIXES):
            from ..api import profile as run_profile

            profile = run_profile(path, runs=1, warmup=0, synthetic=synthetic)
        else:
            from ..result import file as result_file

            profile = result_file.load(path)
    lines: List[str] = []
    for section in profile.sections:
        # A program's step is named after its script's file: a renamed script is the same program.
        lines.append(SCRIPT_LINE if section.kind == "script" else section_line(section))
        # The engine's time between functions is measured, not a layer: its entry comes and goes with coverage.
        lines.extend(e.label for e in section.entries if e.phase not in ORDERLESS)
    lines.append("Profile Completed." if profile.complete else footer_lines(profile)[-1].split(":")[0] + ".")
    return lines


_SECTION = re.compile(r"^Profiling (?P<title>.+?)(?: \(.*\))? \.\.\.$")


def _keys(lines: List[str]) -> List[Tuple[str, str, str]]:
    """What identifies each line across two orders: its section (by its title: what its header says of it besides,
    its solver, its passes, may change), its phase and its layer's name (not its class, which may change); a line of
    no layer (``update (Adam)``), its phase and how many of that phase came before it in its section."""
    keys = []
    section = ""
    seen: Dict[str, int] = {}
    for line in lines:
        if line.startswith("Profiling "):
            m = _SECTION.match(line)
            section = m.group("title") if m else line
            seen = {}
            keys.append((section, "", ""))
            continue
        m = _LABEL.match(line)
        if m:
            keys.append((section, m.group("phase"), m.group("name")))
            continue
        phase = line.split(" ", 1)[0]
        seen[phase] = seen.get(phase, 0) + 1
        keys.append((section, phase, "#%d" % seen[phase]))
    return keys


def _class(line: str) -> Optional[str]:
    m = _LABEL.match(line)
    return m.group("cls") if m else None


@dataclass
class Difference:
    """How an order differs from the golden one; empty lists where it does not."""

    added: List[Tuple[int, str]] = field(default_factory=list)  # (line in the new order, label)
    removed: List[Tuple[int, str]] = field(default_factory=list)  # (line in the golden order, label)
    moved: List[Tuple[int, int, str]] = field(default_factory=list)  # (golden line, new line, label)
    changed: List[Tuple[int, str, str, str]] = field(default_factory=list)  # (new line, label, old class, new class)
    relabeled: List[Tuple[int, str, str]] = field(default_factory=list)  # (new line, golden label, new label)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.moved or self.changed or self.relabeled)

    def lines(self) -> List[str]:
        out = ["  added:   line %d: %s" % (i + 1, label) for i, label in self.added]
        out += ["  removed: line %d: %s" % (i + 1, label) for i, label in self.removed]
        out += ["  moved:   %s: from line %d to line %d" % (label, a + 1, b + 1) for a, b, label in self.moved]
        out += ["  class:   line %d: %s: %s -> %s" % (i + 1, label, old, new) for i, label, old, new in self.changed]
        out += ["  changed: line %d: %s -> %s" % (i + 1, old, new) for i, old, new in self.relabeled]
        return out


def order_difference(expected: List[str], actual: List[str]) -> Difference:
    """Layers added, removed, moved (out of the longest common order), and implementation classes changed."""
    diff = Difference()
    old_keys, new_keys = _keys(expected), _keys(actual)
    old_at = {k: i for i, k in enumerate(old_keys)}
    new_at = {k: i for i, k in enumerate(new_keys)}
    common_old = [k for k in old_keys if k in new_at]
    common_new = [k for k in new_keys if k in old_at]
    in_order = set()
    for block in difflib.SequenceMatcher(None, common_old, common_new, autojunk=False).get_matching_blocks():
        in_order.update(common_old[block.a : block.a + block.size])
    for i, k in enumerate(new_keys):
        if k not in old_at:
            diff.added.append((i, actual[i]))
        elif k not in in_order:
            diff.moved.append((old_at[k], i, actual[i]))
    diff.removed = [(i, expected[i]) for i, k in enumerate(old_keys) if k not in new_at]
    for i, k in enumerate(new_keys):
        if k in old_at:
            old, new = _class(expected[old_at[k]]), _class(actual[i])
            if old != new:
                diff.changed.append((i, actual[i], str(old), str(new)))
            elif old is None and expected[old_at[k]] != actual[i]:  # a section's header, an update's solver
                diff.relabeled.append((i, expected[old_at[k]], actual[i]))
    return diff


def assert_layer_order(source: Union["Profile", PathLike], golden_path: PathLike, synthetic: bool = True) -> None:
    """Fail (``LayerOrderError``, an AssertionError) unless ``layer_order(source)`` is the golden file's.

    With ``pytest --nnprofile-update`` (or ``NNPROFILE_UPDATE_GOLDEN=1``) the golden file is written
    instead. A missing golden file fails, and the message says how to write it.
    """
    __tracebackhide__ = True  # pytest shows the difference, not nnprofile's frames
    actual = layer_order(source, synthetic=synthetic)
    path = os.fspath(golden_path)
    if golden.UPDATE:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(actual) + "\n")
        golden.WRITTEN.append(path)
        return
    if not os.path.isfile(path):
        raise LayerOrderError("no golden layer order at %s: write it with pytest --nnprofile-update" % path)
    __tracebackhide__ = True
    with open(path, encoding="utf-8") as f:
        expected = f.read().splitlines()
    if expected == actual:
        return
    diff = order_difference(expected, actual)
    lines = (
        diff.lines()
        if diff
        else ["  the same layers in the same order, but lines differ:"]
        + ["  " + line for line in difflib.unified_diff(expected, actual, lineterm="", n=0)][2:]
    )
    raise LayerOrderError(
        "%s: the layer order differs (intended? rewrite it: pytest --nnprofile-update):\n%s" % (path, "\n".join(lines))
    )
