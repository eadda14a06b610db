"""Fixtures for the sandbox tests: a staged table and a bwrap session with small limits."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.sandboxes.docker_support import leftovers_guard  # noqa: E402
from tests.sandboxes.helpers import SMALL_LIMITS, make_stage, require_kind  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Skips without Docker; fails the test if it left a container, volume or compose project."""
    yield from leftovers_guard()


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, Path]:
    """(read-only table in a stand-in for the content cache, stage dir hard-linking it)."""
    return make_stage(tmp_path)


@pytest.fixture
def stage_dir(staged: tuple[Path, Path]) -> Path:
    return staged[1]


@pytest.fixture
async def bwrap_session(stage_dir: Path) -> AsyncIterator:
    require_kind("bwrap")
    from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession

    session = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        yield session
    finally:
        await session.close()
