"""Parity: every gold program of the bundled sample split prints the same stdout in bwrap, in
Docker (tables bind-mounted) and in Docker's remote-staging mode (tables fetched by a stager from
the sample served as a mirror over HTTP on 127.0.0.1).

    python -m pytest tests/sandboxes/test_docker_parity.py -q
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from smoldataenvs_tasks.data.source import SAMPLE_DIR, load_tasks
from smoldataenvs_tasks.data.staging import stage_tables
from smoldataenvs_tasks.data.tables import resolve_tables
from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes.docker import DockerSession, RemoteTables
from smoldataenvs_tasks.sandboxes.session import open_session
from smoldataenvs_tasks.scorers.answers import extract_program
from tests.sandboxes.docker_support import leftovers_guard, serve_directory
from tests.sandboxes.helpers import require_kind

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    yield from leftovers_guard()


@pytest.fixture
def mirror_url() -> Iterator[str]:
    with serve_directory(SAMPLE_DIR) as url:
        yield url


def gold_programs() -> dict[str, str]:
    programs = {}
    for line in (SAMPLE_DIR / "replays" / "gold_program.jsonl").read_text().splitlines():
        row = json.loads(line)
        reply = [m for m in row["messages"] if m["role"] == "assistant"][-1]["content"]
        code = extract_program(reply).code
        assert code, row["task_id"]
        programs[row["task_id"]] = code
    return programs


async def test_gold_programs_print_the_same_in_bwrap_docker_and_remote_staging(
    tmp_path: Path, mirror_url: str, no_leftovers: None
) -> None:
    require_kind("bwrap")
    programs = gold_programs()
    compared = 0
    for index, task in enumerate(load_tasks("sample")):
        tables = resolve_tables(task)
        if not tables.available:  # the sample's deliberately missing table
            continue
        stage = stage_tables(tables, tmp_path / f"stage-{index}")
        code = programs[task.task_id]
        stdout: dict[str, str] = {}
        for kind in ("bwrap", "docker"):
            session = await open_session(kind, stage)
            try:
                outcome = await run_program_outcome(session, code)
            finally:
                await session.close()
            assert outcome.failure is None, (kind, task.task_id, outcome.stderr[-500:])
            stdout[kind] = outcome.stdout
        remote_tables = RemoteTables(
            hf_bucket=task.hf_bucket,
            bucket_prefix=task.bucket_prefix,
            files=tuple(task.files),
            mirror_url=mirror_url,
        )
        remote = await DockerSession.start_remote(remote_tables, stager_network="host")
        try:
            outcome = await run_program_outcome(remote, code)
        finally:
            await remote.close()
        assert outcome.failure is None, ("remote", task.task_id, outcome.stderr[-500:])
        stdout["remote"] = outcome.stdout
        assert stdout["bwrap"] == stdout["docker"] == stdout["remote"], task.task_id
        assert stdout["bwrap"].strip(), task.task_id
        compared += 1
    assert compared >= 8  # the sample has 8-12 tasks, one of them without its table
