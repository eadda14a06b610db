"""Fixtures for the hostile-program tests: a staged table, and a session of each sandbox kind.

Every test runs once per kind (tests/security/kinds.py): "bwrap" and "docker" opened directly,
"inspect-bwrap" and "inspect-docker" through the Inspect providers; the Docker ones are marked
`docker` and skipped when no engine or image answers. Limits are smaller than the contract's so
the tests stay fast, but enforced by the same mechanisms.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from smoldataenvs_tasks.sandboxes.base import SandboxSession  # noqa: E402
from tests.fakehub_fixtures import data_env, fake_hub, hub_scenario  # noqa: E402, F401
from tests.report.conftest import sandbox_kind  # noqa: E402, F401  (the sandbox `auto` picks)
from tests.sandboxes.helpers import make_stage, require_kind  # noqa: E402
from tests.sandboxes.kinds import KIND_NAMES, engine_of, open_sandbox  # noqa: E402

KINDS = [
    pytest.param(kind, id=kind, marks=[pytest.mark.docker] if engine_of(kind) == "docker" else [])
    for kind in KIND_NAMES
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    require_kind(engine_of(request.param))
    return request.param


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, Path]:
    """(read-only table in a stand-in for the content cache, stage dir hard-linking it)."""
    return make_stage(tmp_path)


@pytest.fixture
def cached_table(staged: tuple[Path, Path]) -> Path:
    return staged[0]


@pytest.fixture
def stage_dir(staged: tuple[Path, Path]) -> Path:
    return staged[1]


@pytest.fixture
def cache_digest(cached_table: Path) -> str:
    return hashlib.sha256(cached_table.read_bytes()).hexdigest()


@pytest.fixture
async def session(kind: str, stage_dir: Path) -> AsyncIterator[SandboxSession]:
    opened = await open_sandbox(kind, stage_dir)
    try:
        yield opened
    finally:
        await opened.close()
