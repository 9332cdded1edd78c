"""How usable a report.html is in headless Chromium: time to open, to filter and to sort its layer table.

    python benchmarks/html_timing.py OUTDIR/report.html     prints JSON: bytes, open_s, filter_s, sort_s

Open: from the navigation until the page's script has built every section (``data-ready``).
Filter, sort and "show all" (a long table shows its first 100 rows): the table's own event
handlers, then a forced layout, timed in the page.
Uses Debian's chromium through playwright (the test extra), as the tests do.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

FILTER = """() => {
  const input = document.getElementById("filter-0");
  const t = performance.now();
  input.value = "Affine";
  input.dispatchEvent(new Event("input"));
  document.body.offsetHeight;
  return (performance.now() - t) / 1000;
}"""
SORT = """() => {
  const th = document.querySelector('#layers-0 th[data-key="total"]');
  const t = performance.now();
  th.click();
  document.body.offsetHeight;
  return (performance.now() - t) / 1000;
}"""

SHOW_ALL = """() => {
  const button = document.getElementById("more-0");
  const t = performance.now();
  if (!button.hidden) button.click();
  document.body.offsetHeight;
  return (performance.now() - t) / 1000;
}"""


def timings(path: str) -> dict:
    from playwright.sync_api import sync_playwright

    browser_path = shutil.which("chromium") or shutil.which("chromium-browser")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto("file://%s" % os.path.abspath(path))
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            opened = time.perf_counter() - t0
            rows = page.evaluate("() => document.querySelectorAll('#layers-0 tbody tr').length")
            filtered = page.evaluate(FILTER)
            page.evaluate(
                "() => { const i = document.getElementById('filter-0'); i.value = '';"
                " i.dispatchEvent(new Event('input')); }"
            )
            sort = page.evaluate(SORT)
            show_all = page.evaluate(SHOW_ALL)
            every_row = page.evaluate("() => document.querySelectorAll('#layers-0 tbody tr').length")
        finally:
            browser.close()
    return {
        "bytes": os.path.getsize(path),
        "rows_shown": rows,
        "rows_all": every_row,
        "open_s": opened,
        "filter_s": filtered,
        "sort_s": sort,
        "show_all_s": show_all,
    }


if __name__ == "__main__":
    print(json.dumps(timings(sys.argv[1])))
