"""report.html and compare.html: self-contained, and tested in a real browser (headless Chromium)."""

import os
import re
import shutil

import pytest

import nnprofile
from conftest import LENET, require, run_cli

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
EVIL = "<img src=x onerror=alert(1)>"


def _browser():
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401

        driver = True
    except ImportError:
        driver = False
    require(BROWSER and driver, "a Chromium browser (Debian's chromium package) and the playwright driver")
    from playwright.sync_api import sync_playwright

    return sync_playwright


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    nnprofile.profile(LENET, runs=2, outdir=out / "lenet")
    text = open(LENET).read()
    digits = os.path.join(os.path.dirname(LENET), "digits")
    for name in ("training", "validation"):
        text = text.replace('uri: "digits/%s.csv"' % name, 'uri: "%s"' % os.path.join(digits, name + ".csv"))
    evil = out / "evil.nntxt"
    evil.write_text(text.replace('"Convolution_2"', '"%s"' % EVIL))
    nnprofile.profile(evil, runs=1, outdir=out / "evil", inference=False)
    return out


@pytest.mark.slow
def test_the_report_is_one_file_under_a_megabyte_that_asks_for_nothing(reports):
    page = (reports / "lenet" / "report.html").read_text()
    assert len(page.encode()) < 1_000_000
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert '<script type="application/json" id="data">' in page


def _open(p, path):
    browser = p.chromium.launch(
        executable_path=BROWSER,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
        ],
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    seen = {"requests": [], "errors": [], "dialogs": []}
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.goto("file://%s" % path)
    page.wait_for_selector("body[data-ready='1']")
    return browser, page, seen


@pytest.mark.slow
def test_the_layer_table_sorts_and_filters_in_a_browser(reports, tmp_path):
    sync_playwright = _browser()
    profile = nnprofile.load(reports / "lenet")
    layers = [e.layer for e in profile.sections[0].entries_of("forward_function")]
    with sync_playwright() as p:
        browser, page, seen = _open(p, reports / "lenet" / "report.html")
        try:
            rows = page.locator("#layers-0 tbody tr")
            assert rows.count() == len(layers)
            names = lambda: page.locator("#layers-0 tbody tr td:first-child").all_text_contents()  # noqa: E731
            assert names() == layers  # forward order
            page.click("#layers-0 th[data-key='total_ms']")  # largest first
            # Found by its key: a column no layer has a figure for is left out, and the columns after it move left.
            keys = page.locator("#layers-0 thead th").evaluate_all("ths => ths.map(t => t.dataset.key)")
            cells = page.locator("#layers-0 tbody tr td:nth-child(%d)" % (keys.index("total_ms") + 1))
            totals = [float(t) for t in cells.all_text_contents()]
            assert totals == sorted(totals, reverse=True) and names() != layers
            page.click("#layers-0 th[data-key='layer']")
            assert names() == sorted(layers)
            page.fill("#filter-0", "conv")
            assert names() == ["Convolution", "Convolution_2"]
            assert page.locator("#section-1 h2").text_content().startswith("executor 'Executor'")
            assert page.locator("#lead-0 h3", has_text="Advice").count() == 1  # its rules' advice, or that none fired
            assert page.locator("#lead-0 .advice").count() + page.locator("#lead-0 p", has_text="None of").count() >= 1
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert all(url.startswith("file://") for url in seen["requests"]), seen["requests"]
    assert seen["errors"] == []


@pytest.mark.slow
def test_a_name_made_of_markup_is_shown_as_text(reports):
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser, page, seen = _open(p, reports / "evil" / "report.html")
        try:
            cells = page.locator("#layers-0 tbody tr td:first-child").all_text_contents()
            assert EVIL in cells
            assert page.locator("#layers-0 img").count() == 0 and page.locator("img").count() == 0
            page.wait_for_timeout(200)
        finally:
            browser.close()
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert all(url.startswith("file://") for url in seen["requests"])


@pytest.mark.slow
def test_an_incomplete_run_is_marked(tmp_path):
    profile = nnprofile.load(_incomplete(tmp_path))
    assert not profile.complete
    page = (tmp_path / "report.html").read_text()
    assert "INCOMPLETE" in page  # the banner is built from the data at load time
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser, page, seen = _open(p, tmp_path / "report.html")
        try:
            assert page.locator("#incomplete").text_content().startswith("INCOMPLETE: interrupted")
        finally:
            browser.close()


@pytest.mark.slow
def test_a_long_layer_table_shows_its_first_rows_until_asked(tmp_path):
    """Thousands of layers open quickly: the first 100 rows in the order chosen, then all on request."""
    from nnprofile.render import write_all
    from nnprofile.result import Entry, Profile, Section

    entries = [
        Entry(
            label="forward_function (L%d : Affine)" % i,
            phase="forward_function",
            samples_ns=[1000.0 * (i + 1)],
            layer="L%d" % i,
            layer_id=i,
            layer_type="Affine",
        )
        for i in range(150)
    ]
    write_all(Profile(sections=[Section("executor", "E", "N", entries, complete=True)], complete=True), str(tmp_path))
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser, page, seen = _open(p, tmp_path / "report.html")
        try:
            rows = page.locator("#layers-0 tbody tr")
            assert rows.count() == 100 and not page.locator("#layers-0").is_visible()  # a long table is folded
            page.click("#layers-fold-0 summary")
            assert page.locator("#more-0").text_content() == "Show all 150 layers (100 shown)"
            page.click("#layers-0 th[data-key='total_ms']")  # the slowest first: L149 down to L50
            assert page.locator("#layers-0 tbody tr td:first-child").first.text_content() == "L149"
            page.fill("#filter-0", "L14")  # L14 and L140..L149: all shown, the button gone
            assert rows.count() == 11 and not page.locator("#more-0").is_visible()
            page.fill("#filter-0", "")
            page.click("#more-0")
            assert rows.count() == 150 and not page.locator("#more-0").is_visible()
        finally:
            browser.close()
    assert seen["errors"] == []


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 1000])
def test_a_programs_report_opens_with_its_step_and_nothing_is_wider_than_the_window(tmp_path, width):
    """The step across the graphs, what each graph is for, the advice and the top layers fill the first
    screen; the layer tables come after, and no table, chart or line makes the page scroll sideways."""
    from nnprofile.assembly.assemble import assemble
    from nnprofile.assembly.capture_file import load
    from nnprofile.render import write_all
    from nnprofile.result import Profile

    capture = load(os.path.join(os.path.dirname(__file__), "events", "train_validate.json.gz"))
    a = assemble(capture, capture.costs, "train_validate.py")
    write_all(
        Profile(
            header={"kind": "program", "steps": a.how, "project": "/a/long/path/" * 20 + "train.py"},
            notes=a.notes,
            sections=a.sections,
            complete=True,
            timeline=a.timeline,
        ),
        str(tmp_path),
    )
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser, page, seen = _open(p, tmp_path / "report.html")
        try:
            page.set_viewport_size({"width": width, "height": 900})
            lead = page.locator("#lead-0")
            assert lead.locator("h2").text_content() == "Where the step goes: script 'train_validate.py'"
            assert lead.locator(".step-chart").bounding_box()["y"] < 900  # in the first screen
            graphs = lead.locator("table.graphs tr td:first-child").all_text_contents()
            assert graphs == ["loss", "vpred"]
            assert "an evaluation" in lead.locator("table.graphs").text_content()
            assert lead.locator("table.top tr").count() > 1
            # the lead comes before every section's layer table
            assert lead.bounding_box()["y"] < page.locator("#section-0").bounding_box()["y"]
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            page.click("#columns-0")  # every column: the table scrolls inside its box, the page does not
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        finally:
            browser.close()
    assert seen["errors"] == []


def _incomplete(folder):
    from nnprofile.render import write_all

    profile = nnprofile.load(os.path.join(os.path.dirname(__file__), "golden", "result_v2.json"))
    profile.complete, profile.failure = False, "interrupted by Ctrl-C"
    write_all(profile, str(folder))
    return folder


@pytest.mark.slow
def test_compare_writes_a_self_contained_html(reports, tmp_path):
    proc = run_cli("compare", str(reports / "lenet"), str(reports / "lenet"), "-o", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "cmp" / "compare.html").read_text()
    assert "data:image/png;base64," in page and "95% confidence intervals" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
