"""Issue 45 item 1: a session closes synchronously (`close_sync`), so an `atexit` hook or a
finalizer can end it after the interpreter's executors have shut down, with no traceback and
nothing left behind: no session folder, owner lock, cgroup or mount.

    python -m pytest tests/sandboxes/test_session_close.py -q
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes import disk
from smoldataenvs_tasks.sandboxes.base import SandboxLost
from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession
from tests.sandboxes.helpers import SMALL_LIMITS, make_stage, require_kind

# A session opened with asyncio.run (whose executor is shut down when it returns), closed only
# by what runs at interpreter exit: an atexit hook and a finalizer, as DataAnalysisEnv's.
_CLOSED_AT_EXIT = """
import asyncio, atexit, sys, weakref
from pathlib import Path
from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession

async def main():
    return [await BwrapSession.start(Path(sys.argv[1])) for _ in range(2)]

first, second = asyncio.run(main())
print(first.root, second.root, *(first.cgroup.dirs.values() if first.cgroup else ()), flush=True)
atexit.register(first.close_sync)

class Owner:
    pass

owner = Owner()
weakref.finalize(owner, second.close_sync)
"""


@pytest.mark.slow
def test_sessions_closed_at_interpreter_exit_leave_nothing_and_no_traceback(tmp_path):
    require_kind("bwrap")
    _, stage = make_stage(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _CLOSED_AT_EXIT, str(stage)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    first, second, *groups = map(Path, done.stdout.split())
    for root in (first, second):
        assert not root.exists() and disk.mounts_under(root) == []
        assert not root.with_name(root.name + ".owner").exists()
    assert not any(group.exists() for group in groups)


@pytest.mark.anyio
async def test_close_sync_from_another_thread_ends_a_running_command_as_a_lost_sandbox(tmp_path):
    require_kind("bwrap")
    _, stage = make_stage(tmp_path)
    session = await BwrapSession.start(stage, limits=SMALL_LIMITS)
    try:
        running = asyncio.ensure_future(session.exec(["sleep", "30"], timeout=60))
        await asyncio.sleep(1.0)
        closer = threading.Thread(target=session.close_sync)
        closer.start()
        with pytest.raises(SandboxLost):
            await asyncio.wait_for(running, 30)
        closer.join()
        session.close_sync()  # idempotent, and so is the async close
        await session.close()
    finally:
        await session.close()
    assert not session.root.exists()


@pytest.mark.parametrize(
    "kind", ["bwrap", pytest.param("docker", marks=pytest.mark.docker), "local"], ids=str
)
@pytest.mark.anyio
async def test_every_kind_closes_synchronously_from_a_thread_without_a_loop(kind, tmp_path):
    """`close_sync` is on the SandboxSession protocol: every kind's ends its sandbox with no
    event loop in the thread that calls it (Docker's container removed with a blocking
    `docker rm`), and a later command says the sandbox is gone."""
    from smoldataenvs_tasks.sandboxes.opening import open_session

    require_kind(kind)
    _, stage = make_stage(tmp_path)
    session = await open_session(kind, stage, limits=SMALL_LIMITS)
    try:
        assert (await session.exec(["true"], timeout=30)).returncode == 0
        closer = threading.Thread(target=session.close_sync)
        closer.start()
        await asyncio.to_thread(closer.join)
        with pytest.raises(SandboxLost):
            await session.exec(["true"], timeout=30)
    finally:
        await session.close()
    if kind == "docker":
        container = session.info["container"]
        listed = subprocess.run(
            ["docker", "ps", "-a", "-q", "--filter", f"id={container}"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert listed.stdout.strip() == "", container
    else:
        assert not Path(session.info["root"]).exists()
