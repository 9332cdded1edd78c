"""nnprofile's pytest plugin (the ``pytest11`` entry point): ``--nnprofile-update`` rewrites the golden
files of ``nnprofile.testing.assert_layer_order`` instead of comparing with them.

pytest loads this module in every session wherever nnprofile is installed: it imports nothing but
``nnprofile.testing.golden``.
"""

from typing import Any

from . import golden


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("nnprofile")
    group.addoption(
        "--nnprofile-update",
        action="store_true",
        default=False,
        help="rewrite nnprofile's golden layer-order files (assert_layer_order) instead of comparing with them",
    )


def pytest_configure(config: Any) -> None:
    if config.getoption("nnprofile_update", default=False):
        golden.UPDATE = True


def pytest_report_header(config: Any) -> Any:
    return ["nnprofile: golden layer-order files are rewritten (--nnprofile-update)"] if golden.UPDATE else []


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    """With --nnprofile-update: which golden files were written."""
    if golden.UPDATE:
        written = sorted(set(golden.WRITTEN))
        terminalreporter.section("nnprofile: golden layer-order files written")
        for path in written:
            terminalreporter.write_line(path)
        if not written:
            terminalreporter.write_line("none (no test called assert_layer_order)")
