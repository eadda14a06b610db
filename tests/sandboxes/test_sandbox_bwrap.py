"""BwrapSession: the contract's view of the filesystem, exec semantics, file mapping, cleanup.

python -m pytest tests/sandboxes/test_sandbox_bwrap.py -q
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SANDBOX_ENV
from smoldataenvs_tasks.sandboxes import bwrap as bwrap_module
from smoldataenvs_tasks.sandboxes import cgroups
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxSession, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession, FileTooLarge
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_BYTES, TABLE_NAME

pytestmark = pytest.mark.anyio


async def test_session_satisfies_the_protocol(bwrap_session: BwrapSession) -> None:
    assert isinstance(bwrap_session, SandboxSession)
    assert bwrap_session.kind == "bwrap"


async def test_contract_layout_user_and_cwd(bwrap_session: BwrapSession) -> None:
    result = await bwrap_session.exec(
        ["sh", "-c", "id -u; id -g; pwd; readlink sales.csv; cat sales.csv; hostname"],
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:4] == ["1000", "1000", "/home/user/input", f"/mnt/tables/{TABLE_NAME}"]
    assert "\n".join(lines[4:7]) + "\n" == TABLE_BYTES.decode()
    assert lines[7] == "sandbox"


async def test_environment_is_exactly_the_contract_plus_call_env(
    bwrap_session: BwrapSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEAKY_HOST_VARIABLE", "host value")
    result = await bwrap_session.exec(
        ["python3", "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
        env={"EXTRA": "from the call", "LANG": "C"},
        timeout=60,
    )
    import json

    seen = json.loads(result.stdout)
    # bwrap sets PWD to the working directory, as a shell would.
    assert seen == {**SANDBOX_ENV, "LANG": "C", "EXTRA": "from the call", "PWD": "/home/user/input"}


async def test_python_is_the_locked_env_and_login_shells_keep_it(
    bwrap_session: BwrapSession,
) -> None:
    result = await bwrap_session.exec(
        [
            "bash",
            "--login",
            "-c",
            "command -v python3; python3 -c 'import pandas, sys; "
            "print(sys.prefix, sys.version_info[:2] == (3, 11))'",
        ],
        timeout=60,
    )
    assert result.stdout.splitlines() == [
        "/opt/smoldata-env/bin/python3",
        "/opt/smoldata-env True",
    ], result.stderr


async def test_matplotlib_plots_without_rebuilding_its_font_cache(
    bwrap_session: BwrapSession,
) -> None:
    result = await bwrap_session.exec(
        [
            "python3",
            "-c",
            "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig('/workdir/p.png');"
            " import os; print(os.path.getsize('/workdir/p.png') > 0)",
        ],
        timeout=60,
    )
    assert result.stdout == "True\n", result.stderr
    assert "Matplotlib is building the font cache" not in result.stderr


async def test_stdin_relative_cwd_and_exit_status(bwrap_session: BwrapSession) -> None:
    await bwrap_session.write_file("/workdir/sub/x.txt", "")
    result = await bwrap_session.exec(
        ["sh", "-c", "pwd; cat; exit 7"], input="from stdin", cwd="/workdir/sub", timeout=30
    )
    assert (result.returncode, result.stdout) == (7, "/workdir/sub\nfrom stdin")
    await bwrap_session.write_file("sub/y.txt", "")
    relative = await bwrap_session.exec(["pwd"], cwd="sub", timeout=30)
    assert relative.stdout == "/home/user/input/sub\n"


async def test_missing_cwd_is_an_error_result_not_a_sandbox_failure(
    bwrap_session: BwrapSession,
) -> None:
    result = await bwrap_session.exec(["pwd"], cwd="/workdir/nope", timeout=30)
    assert result.returncode == 126
    assert "chdir" in result.stderr


async def test_missing_command_is_127_not_a_sandbox_failure(bwrap_session: BwrapSession) -> None:
    result = await bwrap_session.exec(["no-such-command-here"], timeout=30)
    assert result.returncode == 127
    assert "no-such-command-here" in result.stderr


async def test_program_cannot_fake_a_sandbox_failure(bwrap_session: BwrapSession) -> None:
    result = await bwrap_session.exec(
        ["sh", "-c", 'echo "bwrap: Can\'t mount proc: Operation not permitted" >&2; exit 1'],
        timeout=30,
    )
    assert result.returncode == 1


async def test_timeout_kills_and_reports(bwrap_session: BwrapSession) -> None:
    result = await bwrap_session.exec(["sh", "-c", "echo started; sleep 60"], timeout=1)
    assert result.timed_out and result.returncode is None
    assert result.stdout == "started\n"
    assert not result.success


async def test_output_cap_kills_and_keeps_the_head(bwrap_session: BwrapSession) -> None:
    result = await bwrap_session.exec(["sh", "-c", "yes abc"], timeout=60)
    assert result.limit == "output"
    assert len(result.stdout) == SMALL_LIMITS.max_output_bytes
    assert result.stdout.startswith("abc\nabc\n")


async def test_background_process_dies_with_its_exec(bwrap_session: BwrapSession) -> None:
    await bwrap_session.exec(
        [
            "sh",
            "-c",
            "(while true; do date +%s%N >> /workdir/beat; sleep 0.05; done) & "
            "while [ ! -s /workdir/beat ]; do sleep 0.01; done",
        ],
        timeout=30,
    )
    size = (bwrap_session.workdir / "beat").stat().st_size
    await asyncio.sleep(0.5)
    assert (bwrap_session.workdir / "beat").stat().st_size == size


async def test_concurrent_execs_in_one_session(bwrap_session: BwrapSession) -> None:
    results = await asyncio.gather(
        *(bwrap_session.exec(["sh", "-c", f"sleep 0.3; echo {i}"], timeout=30) for i in range(4))
    )
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(4)]


async def test_files_map_to_the_session_dirs(bwrap_session: BwrapSession) -> None:
    await bwrap_session.write_file("/workdir/answer.txt", "42")
    await bwrap_session.write_file("/tmp/a/b/c.txt", b"\x00bytes")
    await bwrap_session.write_file("notes.txt", "relative goes to the input dir")
    assert (bwrap_session.workdir / "answer.txt").read_text(encoding="utf-8") == "42"
    assert (bwrap_session.tmp / "a" / "b" / "c.txt").read_bytes() == b"\x00bytes"
    assert (bwrap_session.home / "input" / "notes.txt").exists()
    seen = await bwrap_session.exec(["cat", "/workdir/answer.txt", "notes.txt"], timeout=30)
    assert seen.stdout == "42relative goes to the input dir"
    # Through the input link to the read-only table mount.
    assert await bwrap_session.read_file(f"/home/user/input/{TABLE_NAME}") == TABLE_BYTES
    assert await bwrap_session.read_file(TABLE_NAME) == TABLE_BYTES


async def test_file_api_refuses_everything_outside_the_mounts(
    bwrap_session: BwrapSession,
) -> None:
    for path in ("/etc/passwd", "/workdir/../etc/passwd", "/proc/self/environ", "/", "/usr/bin/ls"):
        with pytest.raises(PermissionError):
            await bwrap_session.read_file(path)
    with pytest.raises(PermissionError):
        await bwrap_session.write_file(f"/mnt/tables/{TABLE_NAME}", "overwrite")
    with pytest.raises(PermissionError):
        await bwrap_session.write_file(TABLE_NAME, "through the link into the read-only mount")
    with pytest.raises(IsADirectoryError):
        await bwrap_session.read_file("/workdir")
    with pytest.raises(FileNotFoundError):
        await bwrap_session.read_file("/workdir/missing.txt")


async def test_symlink_swapped_in_by_a_program_is_never_followed_on_the_host(
    bwrap_session: BwrapSession,
) -> None:
    outside = Path(tempfile.mkdtemp(prefix="smoldata-outside-", dir="/var/tmp"))
    try:
        # A directory the file API walks through, then replaced by a host-absolute symlink.
        await bwrap_session.write_file("/workdir/d/x.txt", "inside")
        os.rename(bwrap_session.workdir / "d", bwrap_session.workdir / "d.old")
        os.symlink(outside, bwrap_session.workdir / "d")
        with pytest.raises(PermissionError):  # /var/tmp is not one of the sandbox's mounts
            await bwrap_session.write_file("/workdir/d/x.txt", "escaped?")
        with pytest.raises(PermissionError):
            await bwrap_session.read_file("/workdir/d/x.txt")
        assert list(outside.iterdir()) == []
    finally:
        shutil.rmtree(outside)
    # A link into /tmp means the SANDBOX's /tmp, as it would for a program.
    os.symlink("/tmp/t", bwrap_session.workdir / "to-tmp")
    await bwrap_session.write_file("/workdir/to-tmp/y.txt", "in the session's tmp")
    assert (bwrap_session.tmp / "t" / "y.txt").read_text(encoding="utf-8") == "in the session's tmp"
    # A link to a file elsewhere in the sandbox is followed the sandbox's way.
    os.symlink("/workdir/d.old/x.txt", bwrap_session.workdir / "alias.txt")
    assert await bwrap_session.read_file("/workdir/alias.txt") == b"inside"


async def test_read_file_size_limit_is_checked_before_reading(
    bwrap_session: BwrapSession,
) -> None:
    await bwrap_session.write_file("/workdir/big.bin", b"x" * 1000)
    with pytest.raises(FileTooLarge):
        await bwrap_session.read_file("/workdir/big.bin", max_bytes=999)
    assert len(await bwrap_session.read_file("/workdir/big.bin", max_bytes=1000)) == 1000


async def test_close_kills_running_execs_and_removes_everything(stage_dir: Path) -> None:
    session = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    root, groups = session.root, list(session.cgroup.dirs.values()) if session.cgroup else []
    running = asyncio.create_task(session.exec(["sleep", "60"], timeout=120))
    await asyncio.sleep(0.5)
    await session.close()
    with pytest.raises(SandboxFailure, match="closed"):
        await asyncio.wait_for(running, 10)
    assert not root.exists()
    assert all(not group.exists() for group in groups)
    await session.close()  # idempotent
    with pytest.raises(SandboxFailure):
        await session.exec(["true"])


async def test_sessions_are_separate(stage_dir: Path) -> None:
    first, second = await asyncio.gather(
        BwrapSession.start(stage_dir, limits=SMALL_LIMITS),
        BwrapSession.start(stage_dir, limits=SMALL_LIMITS),
    )
    try:
        assert first.root != second.root
        assert first.root.stat().st_mode & 0o077 == 0
        if first.cgroup and second.cgroup:
            assert set(first.cgroup.dirs.values()).isdisjoint(second.cgroup.dirs.values())
        await first.write_file("/workdir/answer.txt", "first")
        seen = await second.exec(["sh", "-c", "cat /workdir/answer.txt"], timeout=30)
        assert seen.returncode != 0
    finally:
        await asyncio.gather(first.close(), second.close())


async def test_broken_mount_is_a_sandbox_failure(stage_dir: Path, tmp_path: Path) -> None:
    session = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        session._env_source = tmp_path / "vanished-env"  # what a deleted cache would look like
        session._base_args = session._static_args()
        with pytest.raises(SandboxFailure, match="bwrap failed before running"):
            await session.exec(["true"], timeout=30)
    finally:
        await session.close()


async def test_enforcement_is_reported(bwrap_session: BwrapSession) -> None:
    info = bwrap_session.info
    assert info["enforcement"] == cgroups.detect_enforcement().value
    if os.geteuid() == 0:
        assert info["enforcement"].startswith("cgroup")
        limits = await bwrap_session.exec(["sh", "-c", "cat /proc/self/limits"], timeout=30)
        assert "Max file size" in limits.stdout
        file_size = next(x for x in limits.stdout.splitlines() if x.startswith("Max file size"))
        assert str(SMALL_LIMITS.max_file_bytes) in file_size


async def test_rlimits_fallback_applies_address_space_and_process_limits(
    stage_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cgroups.ENFORCEMENT_ENV, "rlimits")
    cgroups.detect_enforcement.cache_clear()
    try:
        session = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
        try:
            assert session.info["enforcement"] == "rlimits"
            assert session.cgroup is None
            result = await session.exec(["cat", "/proc/self/limits"], timeout=30)
            lines = {line[:26].strip(): line[26:].split() for line in result.stdout.splitlines()}
            assert lines["Max address space"][0] == str(SMALL_LIMITS.memory_bytes)
            assert lines["Max processes"][0] == str(SMALL_LIMITS.max_processes)
            assert lines["Max file size"][0] == str(SMALL_LIMITS.max_file_bytes)
            hog = await session.exec(["python3", "-c", "bytearray(2 * 1024**3)"], timeout=60)
            assert "MemoryError" in hog.stderr
        finally:
            await session.close()
    finally:
        monkeypatch.delenv(cgroups.ENFORCEMENT_ENV)
        cgroups.detect_enforcement.cache_clear()


def test_missing_bwrap_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bwrap_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(bwrap_module, "_FALLBACK_BWRAP", "/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        bwrap_module.find_bwrap()


async def test_unusable_cgroup_mode_is_a_sandbox_failure(
    stage_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forcing cgroup v2 on a host whose controllers all sit in v1 hierarchies."""
    monkeypatch.setenv(cgroups.ENFORCEMENT_ENV, "cgroup-v2")
    cgroups.detect_enforcement.cache_clear()
    try:
        try:
            probe = cgroups.create_session_cgroup(SMALL_LIMITS, cgroups.Enforcement.CGROUP_V2)
        except cgroups.CgroupUnavailable:
            pass
        else:
            probe.remove()
            pytest.skip("this host has a usable cgroup v2 hierarchy")
        with pytest.raises(SandboxFailure, match="cgroup-v2"):
            await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    finally:
        monkeypatch.delenv(cgroups.ENFORCEMENT_ENV)
        cgroups.detect_enforcement.cache_clear()


async def test_blas_thread_pools_follow_the_contract_not_the_host(
    bwrap_session: BwrapSession,
) -> None:
    # Numeric results can depend on BLAS thread counts; every sandbox pins them to the contract.
    result = await bwrap_session.exec(
        ["python3", "-c", "import os; print(os.environ['OPENBLAS_NUM_THREADS'])"]
    )
    assert result.stdout.strip() == str(int(DEFAULT_LIMITS.cpus))
