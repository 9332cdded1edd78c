import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LENET = os.path.join(ROOT, "projects", "lenet", "lenet.nntxt")
FIXTURES = os.path.join(ROOT, "tests", "projects")
GOLDEN = os.path.join(ROOT, "tests", "golden")
# The 17 NNC sample projects: CI points NNPROFILE_CORPUS at ../shared/nnc-samples; a
# user's clone has no shared/ beside it, and the tests that need them skip there.
SAMPLES = os.environ.get("NNPROFILE_CORPUS") or os.path.join(os.path.dirname(ROOT), "shared", "nnc-samples")
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_terminal_summary(terminalreporter):
    """After a session that ran corpus tests: what their programs took alone and under nnprofile."""
    from corpus import summary

    said = summary(r for reports in terminalreporter.stats.values() for r in reports)
    for line in (said or "").splitlines():
        terminalreporter.write_line(line)


def require(available, what):
    """Skip a test whose material is missing, naming it; under CI=true a missing one fails instead,
    so that CI never skips silently. Every skip rule of the suite goes through here."""
    if available:
        return
    if IN_CI:
        pytest.fail("%s is missing, and CI=true: CI must run this test" % what)
    pytest.skip("%s is missing" % what)


class FakeClock:
    """Each reading advances by the next step (cycled): exact, repeatable times."""

    def __init__(self, steps=(1000,)):
        self.t = 0
        self.steps = list(steps)
        self.readings = 0

    def now_ns(self):
        self.t += self.steps[self.readings % len(self.steps)]
        self.readings += 1
        return self.t

    def advance(self, ns):
        self.t += ns


def interruptible():
    """Popen's preexec_fn for a child that a test interrupts with SIGINT: a shell without job
    control starts background commands with SIGINT ignored, and Python keeps that, so a suite run
    in the background (`make test &`, some CI runners) would see Ctrl-C do nothing."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args, cwd=None, timeout=600):
    """python -m nnprofile as a user runs it; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "nnprofile", *args], cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def fake_clock():
    return FakeClock()


def lenet_with_validation(folder, uri):
    """LeNet moved into ``folder``, its training data where it is, its validation data at ``uri``."""
    text = open(LENET).read()
    digits = os.path.join(ROOT, "projects", "lenet", "digits")
    text = text.replace('uri: "digits/training.csv"', 'uri: "%s"' % os.path.join(digits, "training.csv"))
    text = text.replace('uri: "digits/validation.csv"', 'uri: "%s"' % uri)
    path = folder / "moved.nntxt"
    path.write_text(text)
    return path


def lenet_with_wrong_size_validation(folder, images=3):
    """LeNet whose validation images are 20x20 instead of 28x28: training runs, inference fails."""
    from PIL import Image

    (folder / "small").mkdir()
    rows = ["x:image,y:label"]
    for i in range(images):
        Image.new("L", (20, 20), 128).save(folder / "small" / ("%d.png" % i))
        rows.append("./small/%d.png,%d" % (i, i))
    (folder / "small.csv").write_text("\n".join(rows) + "\n")
    return lenet_with_validation(folder, "small.csv")
