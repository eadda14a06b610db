"""`local` (no isolation, relocated paths, one warning), `open_session` and `resolve_kind`.

python -m pytest tests/sandboxes/test_sandbox_local_and_factory.py -q
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from smoldataenvs_tasks.data.prompts import program_prompt, relocate_paths
from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes import local as local_module
from smoldataenvs_tasks.sandboxes.base import SandboxSession
from smoldataenvs_tasks.sandboxes.kinds import resolve_kind
from smoldataenvs_tasks.sandboxes.local import LocalSession
from smoldataenvs_tasks.sandboxes.opening import open_session
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_NAME, require_kind

pytestmark = pytest.mark.anyio


async def test_local_runs_programs_against_relocated_contract_paths(
    stage_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_module, "_warned", False)
    caplog.set_level(logging.WARNING)
    session = await LocalSession.start(stage_dir, limits=SMALL_LIMITS)
    second = await LocalSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        assert isinstance(session, SandboxSession)
        warnings = [r for r in caplog.records if "isolates NOTHING" in r.getMessage()]
        assert len(warnings) == 1
        # A program written from a relocated prompt names the host paths.
        answer = session.relocate("/workdir/answer.txt")
        outcome = await run_program_outcome(
            session,
            "import os, sys, pandas\n"
            f"print(sum(pandas.read_csv({TABLE_NAME!r}).amount))\n"
            "print(os.getcwd())\n"
            "print(sys.prefix)\n"
            f"open({answer!r}, 'w').write('42')\n",
        )
        assert outcome.failure is None, outcome.stderr
        total, cwd, prefix = outcome.stdout.splitlines()
        assert total == "42"
        assert cwd == str(session.input_dir)
        assert prefix == str(session.env_dir)  # the locked environment, not the harness's
        assert (session.root / "workdir" / "answer.txt").read_text(encoding="utf-8") == "42"
        assert await session.read_file("/workdir/answer.txt") == b"42"
    finally:
        await session.close()
        await second.close()
    assert not session.root.exists()


async def test_local_prompt_paths_point_at_its_dirs(stage_dir: Path) -> None:
    session = await LocalSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        prompt = relocate_paths(program_prompt("How much?", [TABLE_NAME]), **session.prompt_paths)
        assert "/home/user/input" not in prompt
        assert str(session.input_dir) in prompt
        assert session.path_map["/mnt/tables"] == stage_dir.resolve()
    finally:
        await session.close()


async def test_local_still_enforces_timeout_and_output_cap(stage_dir: Path) -> None:
    session = await LocalSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        slow = await run_program_outcome(session, "import time\ntime.sleep(30)\n", timeout=1)
        assert slow.failure.value == "timeout"
        loud = await session.exec(["sh", "-c", "yes"], timeout=30)
        assert loud.limit == "output"
    finally:
        await session.close()


def test_resolve_kind() -> None:
    assert resolve_kind("docker") == "docker"
    assert resolve_kind("local") == "local"
    assert resolve_kind("auto") in ("bwrap", "docker")
    with pytest.raises(ValueError, match="unknown sandbox kind"):
        resolve_kind("podman")


async def test_auto_opens_bwrap_where_it_works(stage_dir: Path) -> None:
    require_kind("bwrap")
    assert resolve_kind("auto") == "bwrap"
    session = await open_session("auto", stage_dir, limits=SMALL_LIMITS)
    try:
        assert session.kind == "bwrap"
        result = await session.exec(["cat", TABLE_NAME], timeout=30)
        assert result.stdout.startswith("region,amount")
    finally:
        await session.close()
