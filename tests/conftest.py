"""Suite-wide setup: the repository root on sys.path (for `tests.*` helper modules), and the test
tiers' rules (tests/tiers.py: the 5 s rule, what a unit test may not also be)."""

import sys
from pathlib import Path

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
