"""Mutated and truncated projects end in a profile or one clear line, never a traceback."""

import pytest
import os
import re
import sys

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES
from nnprofile import cli

BASES = {
    name: open(os.path.join(FIXTURES, name)).read() for name in ("shared_types.nntxt", "elman.nntxt", "repeat.nntxt")
}
NUMBER = re.compile(r"-?\d+(\.\d+)?")
QUOTED = re.compile(r'"[^"]*"')
EXAMPLES = int(os.environ.get("NNPROFILE_FUZZ_EXAMPLES", "60"))


@st.composite
def mutated(draw):
    """(base name, text): a base project with one to three random edits."""
    name = draw(st.sampled_from(sorted(BASES)))
    lines = BASES[name].splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "swap", "number", "string"]))
        if kind == "truncate":
            text = "".join(lines)
            cut = draw(st.integers(0, len(text)))
            lines = text[:cut].splitlines(keepends=True)
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "number" and NUMBER.search(lines[i]):
            value = draw(st.sampled_from(["0", "-1", "1", "7", "100000", "-3.5", "1e9"]))
            lines[i] = NUMBER.sub(value, lines[i], count=1)
        elif kind == "string" and QUOTED.search(lines[i]):
            others = QUOTED.findall(BASES[name])
            lines[i] = QUOTED.sub(
                lambda m, others=others: draw(st.sampled_from(others + ['""', '"x"'])), lines[i], count=1
            )
    return Case(name, "".join(lines))


class Case(tuple):
    """(base name, mutated text), shown in reports as a diff against the base."""

    def __new__(cls, name, text):
        return super().__new__(cls, (name, text))

    def __repr__(self):
        import difflib

        name, text = self
        diff = difflib.unified_diff(BASES[name].splitlines(True), text.splitlines(True), name, "mutated")
        return "Case(%r, diff:\n%s)" % (name, "".join(diff))


def run_isolated(argv):
    """cli.main in a forked child: a crash inside NNabla fails one example, not pytest."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        # Both levels: pytest's capture replaced sys.stderr, C code writes to fd 2.
        os.dup2(w, 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        sys.stderr = os.fdopen(2, "w")
        sys.stdout = open(os.devnull, "w")
        code = 99
        try:
            code = cli.main(argv)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as f:
        err = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), err


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
@given(case=mutated())
def test_mutated_project_profiles_or_fails_cleanly(case, tmp_path_factory):
    name, text = case
    folder = tmp_path_factory.mktemp("fuzz")
    project = folder / name
    project.write_text(text)
    out = folder / "out"
    code, err = run_isolated([str(project), "--synthetic", "--runs", "1", "--warmup", "0", "-q", "-o", str(out)])
    assert code >= 0, "crashed with signal %d" % -code
    assert "Traceback" not in err
    if code == 0:
        # -q keeps one line, on stderr: where the files went
        assert err.startswith("Written to ") and err.count("\n") == 1, err
        assert (out / "profile.log").read_text().rstrip().endswith("Profile Completed.")
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("nnprofile: error: "), err
        assert code == 2, "unclassified failure: " + lines[0]
