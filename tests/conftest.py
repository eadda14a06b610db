"""Suite-wide setup: the repository root on sys.path (for `tests.*` helper modules), and the test
tiers' rules (tests/tiers.py: the 5 s rule, what a unit test may not also be)."""

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


def pytest_configure(config: pytest.Config) -> None:
    # A plugin module rather than hooks here, so tests/test_tiers.py can load the same rules into
    # an inner pytest run (`-p tests.tiers`).
    if not config.pluginmanager.has_plugin("tests.tiers"):
        config.pluginmanager.import_plugin("tests.tiers")
    # The `pytester` fixture, for tests/test_tiers.py.
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


def _printable(text: str) -> str:
    """`text` with lone surrogates written as `\\udXXX`: what a report can carry."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """A failing test of hostile replies (tests/security/test_hostile_replies_bytes.py) captures
    the lone surrogates it sends; pytest-xdist cannot send such a report to the controller
    (execnet wants UTF-8), and the whole run ended in an INTERNALERROR that hid which test failed
    and left the tests after it unrun. The report's text is made printable instead."""
    outcome = yield
    report = outcome.get_result()
    report.sections = [(title, _printable(text)) for title, text in report.sections]
    if report.longrepr is not None:
        shown = str(report.longrepr)
        if _printable(shown) != shown:
            report.longrepr = _printable(shown)
