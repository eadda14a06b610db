"""Shared fixtures for the scorer tests: a short symbolic deadline where a test needs a timeout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from smoldataenvs_tasks.scorers import grader, symbolic


@pytest.fixture
def short_symbolic_deadline() -> Iterator[float]:
    """The default pool with a 1 s deadline (a fresh pool), restored to 5 s afterwards."""
    symbolic.configure(deadline_s=1.0)
    grader.clear_memo()
    yield 1.0
    symbolic.configure(deadline_s=symbolic.DEFAULT_DEADLINE_S)
    grader.clear_memo()
