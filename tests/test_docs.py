"""Every command the README and docs/ show is run: their `sh` and `python` blocks, page by page, in
document order, in a scratch folder that holds the repository's projects, examples and tests.

Blocks tagged `text` are outputs and usage lines, and are not run; every block carries a tag.
`make` lines are the quick start, which CI itself runs. A `python` block's `test_*` functions are
called after it, as pytest would. `nnprofile check` may exit 1 (slower), its documented meaning.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, require

PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^\s*```(\w*)\s*$")  # a block may be indented, inside a list item
LANGUAGES = ("sh", "python", "text")
LINKED = ("projects", "examples", "tests")


def blocks(page):
    """(language, code, line) of each fenced block of a page."""
    out, lang, start, lines = [], None, 0, []
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            m = FENCE.match(line.rstrip("\n"))
            if m and lang is None:
                lang, start, lines = m.group(1), number, []
            elif line.strip() == "```" and lang is not None:
                out.append((lang, textwrap.dedent("".join(lines)), start))
                lang = None
            elif lang is not None:
                lines.append(line)
    assert lang is None, "%s: a block opened at line %d is not closed" % (page, start)
    return out


def commands(code):
    """The commands of an sh block: continuation lines joined, comments and blank lines left out."""
    joined = code.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_every_block_says_what_it_is():
    for page in PAGES:
        for lang, _, line in blocks(page):
            assert lang in LANGUAGES, "%s:%d: a block tagged %r (use sh, python or text)" % (page, line, lang)


def test_the_readme_is_a_front_page_that_links_every_page():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert len(readme.splitlines()) <= 150
    for page in PAGES[1:]:
        assert "(%s)" % page in readme, "the README does not link %s" % page
    assert "![" in readme and os.path.exists(os.path.join(ROOT, "docs", "report.png"))


def _scratch(folder):
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), os.path.join(str(folder), name))


def _environment():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _needs(command):
    if command.split()[0].endswith("mpirun") or " mpirun " in " %s " % command:
        try:
            import mpi4py  # noqa: F401

            available = shutil.which("mpirun") is not None
        except ImportError:
            available = False
        require(available, "mpirun (Debian's openmpi-bin) with mpi4py")


RUN_TESTS = """

for _name, _value in list(globals().items()):
    if _name.startswith("test_") and callable(_value):
        _value()
"""


def _runnable(page):
    return [(lang, code, line) for lang, code, line in blocks(page) if lang in ("sh", "python")]


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)])
def test_the_commands_of_the_page_run(page, tmp_path):
    runnable = _runnable(page)
    _scratch(tmp_path)
    env = _environment()
    for number, (lang, code, line) in enumerate(runnable):
        if lang == "python":
            script = tmp_path / ("block_%d.py" % number)
            script.write_text(code + RUN_TESTS)
            done = subprocess.run(
                [sys.executable, str(script)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900
            )
            assert done.returncode == 0, "%s:%d (python): %s" % (page, line, (done.stderr or done.stdout)[-3000:])
            continue
        for command in commands(code):
            if command.startswith("make "):
                continue
            _needs(command)
            done = subprocess.run(
                ["bash", "-c", command], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=900
            )
            allowed = (0, 1, 3) if re.search(r"\bnnprofile check\b", command) else (0,)  # every verdict
            assert done.returncode in allowed, "%s:%d: %s\n%s" % (
                page,
                line,
                command,
                (done.stderr or done.stdout)[-3000:],
            )
            assert "Traceback" not in done.stderr, "%s:%d: %s\n%s" % (page, line, command, done.stderr[-3000:])
