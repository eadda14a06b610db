"""DockerSession (sandboxes/docker.py): one container per session, the contract's limits, clean
teardown. Needs a Docker engine and the sandbox image (scripts/build-sandbox-image.sh).

    python -m pytest tests/sandboxes/test_docker_session.py -q
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from smoldataenvs_tasks.contract import SANDBOX_ENV
from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes.base import FileTooLarge, SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import DockerSession
from smoldataenvs_tasks.sandboxes.docker import image as image_mod
from smoldataenvs_tasks.scorers.verdict import Category
from tests.sandboxes.docker_support import have_docker_cli, our_containers
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_BYTES, TABLE_NAME, make_stage

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


# Lists the command lines of every process the sandbox user can see (no `ps` in the image).
PROCESSES = [
    "sh",
    "-c",
    'for p in /proc/[0-9]*; do tr "\\0" " " < "$p/cmdline" 2>/dev/null; echo; done',
]


@pytest.fixture
def staged(tmp_path: Path) -> tuple[Path, Path]:
    return make_stage(tmp_path)


@pytest.fixture
async def session(staged: tuple[Path, Path], no_leftovers: None) -> AsyncIterator[DockerSession]:
    opened = await DockerSession.start(staged[1], limits=SMALL_LIMITS)
    try:
        yield opened
    finally:
        await opened.close()


async def test_commands_run_as_the_containers_own_uid_in_input_dir_with_tables_linked(
    session: DockerSession,
) -> None:
    result = await session.exec(
        [
            "sh",
            "-c",
            f"id -u; id -g; stat -c %u /workdir; pwd; readlink {TABLE_NAME}; cat {TABLE_NAME}",
        ]
    )
    assert result.success
    uid, gid, workdir_owner, cwd, link, *table = result.stdout.splitlines()
    assert uid == gid == workdir_owner == str(session.sandbox_uid)
    assert (cwd, link) == ("/home/user/input", f"/mnt/tables/{TABLE_NAME}")
    assert "\n".join(table) + "\n" == TABLE_BYTES.decode()


async def test_containers_running_at_once_never_share_a_uid_and_a_removed_ones_is_free_again(
    tmp_path: Path,
) -> None:
    # The kernel counts some things per host uid (docs/threat-model.md, invariant 3): each
    # container's sandbox user is a uid claimed from the pool bwrap uses, held until removal.
    from smoldataenvs_tasks.sandboxes import hostuid

    first = await DockerSession.start(make_stage(tmp_path / "a")[1], limits=SMALL_LIMITS)
    try:
        second = await DockerSession.start(make_stage(tmp_path / "b")[1], limits=SMALL_LIMITS)
        try:
            assert first.sandbox_uid != second.sandbox_uid
            assert (
                first.sandbox_uid >= hostuid.uid_base() and second.sandbox_uid >= hostuid.uid_base()
            )
            seen = await second.exec(["id", "-u"])
            assert seen.stdout.strip() == str(second.sandbox_uid)
        finally:
            await second.close()
        # Removed: its uid's lock is free again (the first's is still held).
        assert _lock_free(second.sandbox_uid) and not _lock_free(first.sandbox_uid)
    finally:
        await first.close()


async def test_tables_staged_after_the_start_are_linked_by_the_first_command(
    tmp_path: Path, no_leftovers: None
) -> None:
    """Inspect's order: the container starts, then setup stages the tables, then commands run."""
    stage = tmp_path / "late-stage"
    stage.mkdir()
    session = await DockerSession.start(stage, limits=SMALL_LIMITS)
    try:
        (stage / "late.csv").write_bytes(b"a\n1\n")
        result = await session.exec(["sh", "-c", "ls; cat late.csv; ls -A $HOME"])
    finally:
        await session.close()
    assert result.stdout.splitlines() == [
        "late.csv",
        "a",
        "1",
        ".cache",
        ".smoldata-ready",
        "input",
    ]


async def test_a_spare_gets_its_samples_tables_at_the_first_command_and_drops_its_slot(
    tmp_path: Path, no_leftovers: None
) -> None:
    from smoldataenvs_tasks.sandboxes.docker.spares import start_spare

    stage = tmp_path / "stage"
    stage.mkdir()
    spare = await start_spare(tmp_path, limits=SMALL_LIMITS)  # before the sample is known
    try:
        assert spare.slot_dir is not None and list(spare.slot_dir.iterdir()) == []
        spare.use_tables(stage)
        (stage / "late.csv").write_bytes(b"a\n1\n")  # staged after the sample took the spare
        result = await spare.exec(["sh", "-c", "ls /mnt/tables; cat late.csv; touch /mnt/tables/x"])
        slot = spare.slot_dir
        assert (slot / "late.csv").stat().st_ino == (stage / "late.csv").stat().st_ino
        with pytest.raises(SandboxFailure):
            spare.use_tables(stage)  # one sample per spare
    finally:
        await spare.close()
    assert result.stdout == "late.csv\na\n1\n" and "Read-only file system" in result.stderr
    assert not slot.exists() and sorted(p.name for p in stage.iterdir()) == ["late.csv"]


async def test_spares_serve_one_sample_each(tmp_path: Path, no_leftovers: None) -> None:
    from smoldataenvs_tasks.sandboxes.docker.spares import Spares

    spares = Spares(slot_root=tmp_path, limits=SMALL_LIMITS)
    seen = []
    try:
        for name in ("a", "b", "c"):
            stage = tmp_path / name
            stage.mkdir()
            (stage / f"{name}.csv").write_bytes(b"x\n")
            session = await spares.take(stage)
            try:
                seen.append((session.container_id, (await session.exec(["ls"])).stdout))
            finally:
                await session.close()
                spares.release()
    finally:
        await spares.close()
    assert [listing for _, listing in seen] == ["a.csv\n", "b.csv\n", "c.csv\n"]
    assert len({container for container, _ in seen}) == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".slot-")] == []


async def test_relative_cwd_is_in_the_input_dir_and_a_non_executable_raises(
    session: DockerSession,
) -> None:
    await session.exec(["mkdir", "sub"])
    assert (await session.exec(["pwd"], cwd="sub")).stdout == "/home/user/input/sub\n"
    with pytest.raises(PermissionError):
        await session.exec(["/etc/passwd"])
    with pytest.raises(PermissionError):
        await session.exec(["/tmp"])
    missing = await session.exec(["no-such-command"])  # not found: an ordinary result
    assert missing.returncode == 127 and "No such file" in missing.stderr
    bad_cwd = await session.exec(["pwd"], cwd="/nonexistent")
    assert bad_cwd.returncode == 2 and "cannot change to directory" in bad_cwd.stderr


async def test_environment_is_sandbox_env_plus_call_env_never_the_hosts(
    session: DockerSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    result = await session.exec(["env"], env={"EXTRA": "1", "PATH": SANDBOX_ENV["PATH"]})
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert "sk-host-secret" not in result.stdout
    assert seen["EXTRA"] == "1"
    assert {k: seen[k] for k in SANDBOX_ENV} == SANDBOX_ENV
    assert set(seen) - set(SANDBOX_ENV) <= {"EXTRA", "HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_"}


async def test_stdin_exit_status_and_stderr(session: DockerSession) -> None:
    echoed = await session.exec(
        ["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], input="abc"
    )
    assert echoed.stdout == "cba\n"
    failed = await session.exec(["sh", "-c", "echo oops >&2; exit 3"])
    assert (failed.returncode, failed.stderr, failed.success) == (3, "oops\n", False)
    missing = await session.exec(["no-such-command"])
    assert missing.returncode == 127 and not missing.timed_out


async def test_timeout_kills_the_whole_tree_inside_the_container(session: DockerSession) -> None:
    result = await session.exec(["sh", "-c", "sleep 301 & sleep 302"], timeout=2)
    assert result.timed_out and result.returncode is None
    left = await session.exec(PROCESSES)
    assert "sleep 301" not in left.stdout and "sleep 302" not in left.stdout


async def test_output_flood_is_capped_and_the_writer_killed(session: DockerSession) -> None:
    result = await session.exec(["yes", "flood"], timeout=60)
    assert result.limit == "output" and not result.success
    assert 0 < len(result.stdout) <= SMALL_LIMITS.max_output_bytes
    left = await session.exec(PROCESSES)
    assert "yes flood" not in left.stdout


async def test_memory_limit_is_reported_as_memory(session: DockerSession) -> None:
    result = await session.exec(["python3", "-c", "x = ' ' * (1024**3)"])  # 1 GiB > 512 MiB
    assert result.limit == "memory" and result.returncode == 137


async def test_file_size_limit_is_reported_as_file_size(session: DockerSession) -> None:
    mib = SMALL_LIMITS.max_file_bytes // 2**20
    result = await session.exec(["sh", "-c", f"head -c {mib + 8}M /dev/zero > /workdir/big"])
    assert result.limit == "file_size"
    size = await session.exec(["stat", "-c", "%s", "/workdir/big"])
    assert int(size.stdout) == SMALL_LIMITS.max_file_bytes


async def test_process_limit_is_reported_as_processes(session: DockerSession) -> None:
    bomb = "import os\nwhile True:\n    if os.fork() == 0:\n        import time; time.sleep(30); os._exit(0)\n"
    result = await session.exec(["python3", "-c", bomb], timeout=20)
    assert result.limit == "processes"
    assert "BlockingIOError" in result.stderr


async def test_program_killing_every_process_cannot_kill_the_sandbox(
    session: DockerSession,
) -> None:
    suicide = await session.exec(["sh", "-c", "kill -KILL -1; sleep 5"])
    assert suicide.returncode == 137
    assert (await session.exec(["echo", "alive"])).stdout == "alive\n"


async def test_files_written_and_read_as_the_sandbox_user(session: DockerSession) -> None:
    blob = bytes(range(256)) * 10
    await session.write_file("/workdir/sub/dir/blob.bin", blob)
    assert await session.read_file("/workdir/sub/dir/blob.bin") == blob
    await session.write_file("notes.txt", "relative goes to the input dir")
    assert (await session.exec(["cat", "/home/user/input/notes.txt"])).stdout.startswith("relative")
    for forbidden in ("/mnt/tables/new.csv", f"/mnt/tables/{TABLE_NAME}", "/etc/passwd", "/opt/x"):
        with pytest.raises(PermissionError):
            await session.write_file(forbidden, "x")
    with pytest.raises(FileNotFoundError):
        await session.read_file("/workdir/absent.txt")
    with pytest.raises(IsADirectoryError):
        await session.read_file("/workdir")
    await session.exec(["mkfifo", "/workdir/fifo"])
    with pytest.raises(FileNotFoundError):
        await session.read_file("/workdir/fifo")  # not a regular file: never opened
    with pytest.raises(PermissionError):
        await session.read_file("/etc/shadow")
    with pytest.raises(FileTooLarge):
        await session.read_file("/workdir/sub/dir/blob.bin", max_bytes=len(blob) - 1)


async def test_tables_cannot_change_through_the_sandbox(
    session: DockerSession, staged: tuple[Path, Path]
) -> None:
    table = staged[0]
    digest = hashlib.sha256(table.read_bytes()).hexdigest()
    script = (
        f"rm -f /mnt/tables/{TABLE_NAME}; echo x >> /mnt/tables/{TABLE_NAME}; "
        f"echo x >> {TABLE_NAME}; chmod u+w /mnt/tables/{TABLE_NAME}; "
        f"rm {TABLE_NAME}; echo mine > {TABLE_NAME}; cat {TABLE_NAME}"
    )
    result = await session.exec(["sh", "-c", script])
    assert result.stdout == "mine\n"  # the input dir is writable; its link was replaced
    assert hashlib.sha256(table.read_bytes()).hexdigest() == digest
    assert sorted(os.listdir(staged[1])) == [TABLE_NAME]


async def test_cancelled_exec_leaves_nothing_running(session: DockerSession) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(session.exec(["sleep", "303"], timeout=120), 2)
    left = await session.exec(PROCESSES)
    assert "sleep 303" not in left.stdout
    assert (await session.exec(["true"])).success


async def test_close_removes_the_container_and_is_idempotent(
    staged: tuple[Path, Path], no_leftovers: None
) -> None:
    opened = await DockerSession.start(staged[1], limits=SMALL_LIMITS)
    assert opened.container_id[:12] in our_containers()
    await opened.exec(["sh", "-c", "sleep 400 &"])  # a background process does not keep it
    await opened.close()
    await opened.close()
    assert our_containers() == []
    with pytest.raises(SandboxFailure):
        await opened.exec(["true"])


async def test_runner_classifies_programs_in_docker(session: DockerSession) -> None:
    ok = await run_program_outcome(
        session,
        "import pandas as pd\nprint(pd.read_csv('sales.csv').amount.sum())\n",
        limits=SMALL_LIMITS,
    )
    assert ok.failure is None and ok.stdout.strip() == "42"
    crash = await run_program_outcome(
        session, "import pandas as pd\npd.read_csv('sales.csv')['nope']\n"
    )
    assert (crash.failure, crash.failure_detail) == (Category.CRASH, "KeyError")
    syntax = await run_program_outcome(session, "print(1\n")
    assert syntax.failure == Category.SYNTAX_ERROR
    slow = await run_program_outcome(session, "import time\ntime.sleep(60)\n", timeout=2)
    assert slow.failure == Category.TIMEOUT


async def test_missing_stage_dir_fails_clearly(tmp_path: Path, no_leftovers: None) -> None:
    with pytest.raises(SandboxFailure, match="does not exist"):
        await DockerSession.start(tmp_path / "nowhere")


async def test_missing_image_says_how_to_build_it(
    staged: tuple[Path, Path], no_leftovers: None
) -> None:
    with pytest.raises(SandboxUnavailable, match="build-image"):
        await DockerSession.start(staged[1], image="smoldataenvs-sandbox:never-built")


async def test_unreachable_engine_is_unavailable_with_a_clear_message(
    staged: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not have_docker_cli():
        pytest.skip("no docker CLI")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{staged[1]}/no-engine.sock")
    monkeypatch.setattr(image_mod, "_KNOWN_IMAGES", set())
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
        await DockerSession.start(staged[1])


async def test_stage_dir_with_a_comma_in_its_path_is_mounted(
    tmp_path: Path, no_leftovers: None
) -> None:
    _, stage = make_stage(tmp_path / "odd, path")
    async with await DockerSession.start(stage, limits=SMALL_LIMITS) as opened:
        result = await opened.exec(["cat", TABLE_NAME])
    assert result.stdout == TABLE_BYTES.decode()


def _lock_free(uid: int) -> bool:
    import fcntl

    from smoldataenvs_tasks.sandboxes import hostuid

    fd = os.open(hostuid.lock_dir() / str(uid - hostuid.uid_base()), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # drops a lock taken here
