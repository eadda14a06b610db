"""Fixtures of the journeys tier: the stand-in's files built once per session, and per test a
running stand-in and a user on a fresh machine (tests/journeys/standin.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakehub import FakeHub
from tests.journeys.standin import (
    StandInData,
    User,
    build_standin_data,
    ensure_shared_sandbox_env,
    start_standin,
)


@pytest.fixture(scope="session")
def standin_data(tmp_path_factory: pytest.TempPathFactory) -> StandInData:
    # Once per session, outside any journey's time: the bwrap environment every user borrows.
    ensure_shared_sandbox_env()
    return build_standin_data(tmp_path_factory.mktemp("standin"))


@pytest.fixture
def hub(standin_data: StandInData) -> Iterator[FakeHub]:
    # A stand-in per test: its request log belongs to one journey, and a journey may stop it.
    hub = start_standin(standin_data)
    try:
        yield hub
    finally:
        hub.stop()


@pytest.fixture
def user(tmp_path: Path, hub: FakeHub) -> User:
    return User(tmp_path / "machine", hub.endpoint)
