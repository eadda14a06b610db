"""Suite-wide setup: the repository root on sys.path (for `tests.*` helper modules), the test
tiers' rules (tests/tiers.py: the 5 s rule, what a unit test may not also be), and the groups the
whole run's two workers share the suite by (`--dist loadgroup`, scripts/test)."""

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


# scripts/test runs the whole suite on two workers with `--dist loadgroup`: the Docker tests as one
# group, so one worker runs them one after another (two at once would share one engine and time
# out each other's containers), and every other test module as its own group, so a module's
# fixtures are built once (what `--dist loadfile` does).
DOCKER_GROUP = "docker"


# Before xdist's own hook in each worker, which reads the groups to name each test's unit of work.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.has_plugin("xdist"):
        return  # no worker to share the run with, and `xdist_group` is xdist's marker
    for item in items:
        group = DOCKER_GROUP if item.get_closest_marker("docker") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
