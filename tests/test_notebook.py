"""Notebooks: %load_ext nnprofile and a %%nnprofile cell in IPython's own InteractiveShell, and what a
Profile (and a comparison) shows below a cell: no script, every name escaped, rendered in Chromium."""

import os
import re

import pytest

from conftest import require
from nnprofile.result import Entry, Profile, Section
from test_html import BROWSER, EVIL, _browser

SETUP = """
import numpy as np
import nnabla as nn, nnabla.functions as F, nnabla.parametric_functions as PF, nnabla.solvers as S
nn.clear_parameters()
x = nn.Variable((16, 1, 12, 12)); t = nn.Variable((16, 1))
with nn.parameter_scope("conv1"):
    h = F.max_pooling(F.relu(PF.convolution(x, 4, (3, 3))), (2, 2))
with nn.parameter_scope("fc"):
    y = PF.affine(h, 10)
loss = F.mean(F.softmax_cross_entropy(y, t))
"""


@pytest.fixture
def shell():
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:
        InteractiveShell = None
    require(InteractiveShell is not None, "IPython (the test extra)")
    s = InteractiveShell.instance()
    assert s.run_cell("%load_ext nnprofile").success
    assert s.run_cell(SETUP).success
    yield s
    s.run_cell("nn.clear_parameters()")
    InteractiveShell.clear_instance()


def _value(shell, cell):
    """Run a cell; the value it displayed (what a notebook shows as Out)."""
    shell.user_ns.pop("_", None)
    outcome = shell.run_cell(cell)
    return outcome, shell.user_ns.get("_")


@pytest.mark.slow
def test_a_cell_is_recorded_and_its_value_is_the_profile(shell, tmp_path):
    # The solver is made in an earlier cell, before recording starts, and held by an object.
    assert shell.run_cell(
        "class Trainer: pass\ntrainer = Trainer()\ntrainer.solver = S.Adam(1e-3)\n"
        "trainer.solver.set_parameters(nn.get_parameters())"
    ).success
    outcome, profile = _value(
        shell,
        "%%%%nnprofile --skip-first 1 --active 3 -o %s\n"
        "for i in range(6):\n"
        "    x.d = np.random.rand(*x.shape); t.d = np.random.randint(0, 10, t.shape)\n"
        "    loss.forward(); trainer.solver.zero_grad(); loss.backward()\n"
        "    trainer.solver.update()\n" % (tmp_path / "out"),
    )
    assert outcome.success
    from nnprofile import Profile as P

    assert isinstance(profile, P)
    assert profile.header.active_steps == 3 and str(profile.header.steps).startswith(
        "one step per iteration of the program's loop at In ["
    )  # the cell, as IPython names it
    program = profile.sections[-1]
    assert "update (Adam)" in [e.label for e in program.entries]  # the earlier cell's solver, timed
    assert [s.name for s in profile.sections[:-1]] == ["loss"]
    assert (tmp_path / "out" / "report.html").exists() and profile.location == str(tmp_path / "out")
    # After the cell, the program's own solver is back in place.
    assert type(shell.user_ns["trainer"].solver).__module__.startswith("nnabla")
    assert "report.html" in profile._repr_html_()


@pytest.mark.slow
def test_a_solver_made_earlier_in_the_namespace_is_seen_and_a_cell_without_steps_says_how_to_mark_them(shell):
    assert shell.run_cell("solver = S.Sgd(0.1)\nsolver.set_parameters(nn.get_parameters())").success
    _, profile = _value(
        shell,
        "%%nnprofile --skip-first 0 --active 2\n"
        "for i in range(3):\n"
        "    loss.forward(); solver.zero_grad(); loss.backward(); solver.update()\n",
    )
    assert "update (Sgd)" in [e.label for e in profile.sections[-1].entries]
    _, single = _value(shell, "%%nnprofile --skip-first 0\nloss.forward()\n")
    assert any("nnprofile.step()" in n for n in single.notes)
    assert "nnprofile.step()" in single._repr_html_()


@pytest.mark.slow
def test_a_failing_cell_shows_its_own_error_and_keeps_what_was_recorded(shell, capsys):
    outcome, _ = _value(shell, "%%nnprofile --skip-first 0\nloss.forward()\nraise ValueError('bad batch')\n")
    out = capsys.readouterr().out
    assert out.count("Traceback") == 1 and "bad batch" in out  # IPython showed the cell's own traceback, once
    assert "%%nnprofile: the cell raised ValueError" in out
    assert not outcome.success  # the magic's cell fails with it: Run All and papermill stop there
    profile = outcome.error_in_exec.profile  # what was recorded, kept
    assert not profile.complete and profile.failure == "the program raised ValueError: bad batch"
    assert "forward_all" in [e.label for e in profile.sections[0].entries]
    assert "INCOMPLETE: the program raised ValueError: bad batch" in profile._repr_html_()


def test_a_wrong_magic_line_is_one_line_of_usage(shell, capsys):
    outcome = shell.run_cell("%%nnprofile --active zero\nloss.forward()\n")
    assert not outcome.success
    assert "%%nnprofile" in str(outcome.error_in_exec) and "--active" in str(outcome.error_in_exec)


def _evil_profile():
    f = Entry(
        "forward_function (%s : Convolution)" % EVIL,
        "forward_function",
        [2e6, 2e6],
        layer=EVIL,
        layer_id=0,
        layer_type="Convolution",
        impl_class="Convolution",
        round_sizes=[1, 1],
    )
    b = Entry(
        "backward_function (%s : Convolution)" % EVIL,
        "backward_function",
        [3e6, 3e6],
        layer=EVIL,
        layer_id=0,
        layer_type="Convolution",
        impl_class="Convolution",
        round_sizes=[1, 1],
    )
    whole = [
        Entry("forward_all", "forward_all", [2.2e6, 2.2e6], round_sizes=[1, 1]),
        Entry("backward_all", "backward_all", [3.1e6, 3.1e6], round_sizes=[1, 1]),
    ]
    graph = Section(
        "graph",
        EVIL,
        "",
        [f, b] + whole,
        complete=True,
        info={"graph": EVIL, "trained_by": ["Adam: %s" % EVIL], "forward_per_step": 1, "backward_per_step": 1},
    )
    script = Section(
        "script",
        "cell",
        "",
        [
            Entry("update (Adam: %s)" % EVIL, "update", [1e6, 1e6], round_sizes=[1, 1]),
            Entry("step", "step", [8e6, 8e6], round_sizes=[1, 1]),
        ],
        complete=True,
    )
    return Profile(
        header={"project": EVIL, "nnprofile": "0", "context": "cpu:float"},
        notes=["note " + EVIL],
        sections=[graph, script],
        complete=True,
    )


def test_the_inline_html_has_no_script_and_escapes_every_name():
    page = _evil_profile()._repr_html_()
    assert "<script" not in page.lower() and "<style" not in page.lower()
    assert EVIL not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert not re.search(r"\son\w+\s*=", page.replace("onerror=alert(1)&gt;", ""))  # no event handler attribute
    assert "top layer" in page and "step 8.000 ms" in page


@pytest.mark.slow
def test_the_inline_html_renders_in_chromium_without_a_console_error(tmp_path, shell):
    _, profile = _value(
        shell,
        "%%%%nnprofile --skip-first 1 --active 3 -o %s\n"
        "solver = S.Adam(1e-3); solver.set_parameters(nn.get_parameters())\n"
        "for i in range(6):\n"
        "    x.d = np.random.rand(*x.shape); t.d = np.random.randint(0, 10, t.shape)\n"
        "    loss.forward(); solver.zero_grad(); loss.backward(); solver.update()\n" % (tmp_path / "out"),
    )
    cells = [profile._repr_html_(), _evil_profile()._repr_html_()]
    page = tmp_path / "notebook.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>%s</body></html>" % "<hr>".join(cells)
    )
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=BROWSER, args=["--no-sandbox", "--disable-gpu"])
        view = browser.new_page(viewport={"width": 1200, "height": 900})
        errors, dialogs = [], []
        view.on("console", lambda m: m.type == "error" and errors.append(m.text))
        view.on("pageerror", lambda e: errors.append(str(e)))
        view.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        view.goto("file://%s" % page)
        assert view.evaluate("document.querySelectorAll('script').length") == 0
        assert view.evaluate("document.querySelectorAll('img').length") == 0  # the evil name is text
        assert "top layer" in view.inner_text("body")
        view.screenshot(path=str(tmp_path / "notebook.png"), full_page=True)
        browser.close()
    assert not errors and not dialogs
    assert os.path.getsize(tmp_path / "notebook.png") > 10_000


def test_a_comparison_shows_its_ratios_inline(tmp_path):
    from nnprofile.compare import Comparison
    from nnprofile.compare.metrics import Metric, metric_rows

    m = Metric("training step", "ms")
    m.values = {"float": [10.0, 10.5, 9.8], EVIL: [5.0, 5.2, 4.9]}
    c = Comparison(
        ["float", EVIL],
        ["nnprofile compare: " + EVIL],
        metric_rows([m], ["float", EVIL]),
        ["%s is 0.5x float" % EVIL],
        [m],
        "runs",
    )
    page = c._repr_html_()
    assert "<script" not in page and EVIL not in page and "&lt;img" in page and "0.498" in page
