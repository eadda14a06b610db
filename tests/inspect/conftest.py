"""The sandbox `auto` picks here, for the Inspect tests that run a task (tests/report's)."""

from tests.report.conftest import sandbox_kind  # noqa: F401
