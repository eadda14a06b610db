"""A Docker sandbox container reused for another sample shows it nothing of the sample before:
files, processes, IPC objects, extended attributes, modes, environment, tables
(sandboxes/docker/reset.py, spares.py). A container the reset cannot prove clean is removed.

    python -m pytest tests/sandboxes/test_docker_reuse.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxFailure
from smoldataenvs_tasks.sandboxes.docker import DockerSession
from smoldataenvs_tasks.sandboxes.docker.spares import Spares, start_spare
from tests.sandboxes.docker_support import docker_lines
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_BYTES, TABLE_NAME, make_stage

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


# Everything a sample could observe of the container that another sample could have changed,
# as the sandbox user sees it: every writable place (names, types, modes, owners, link targets,
# sizes, extended attributes), the user's processes, System V IPC objects, the environment,
# the tables. Not timestamps or inode numbers (see docs/sandboxes.md).
FINGERPRINT = r"""
import json, os, stat, sys
def tree(root):
    out = []
    for base, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            p = os.path.join(base, name); s = os.lstat(p)
            out.append([p, stat.filemode(s.st_mode), s.st_uid, s.st_gid,
                        os.readlink(p) if stat.S_ISLNK(s.st_mode) else
                        (s.st_size if stat.S_ISREG(s.st_mode) else None),
                        sorted(os.listxattr(p, follow_symlinks=False))])
        dirs.sort()
    return out
places = ["/tmp", "/workdir", "/home/user", "/dev/shm", "/dev/mqueue", "/mnt/tables"]
me = os.getpid()
procs = []
for n in os.listdir("/proc"):
    if n.isdigit() and int(n) != me:
        try:
            cmd = open(f"/proc/{n}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            procs.append([os.stat(f"/proc/{n}").st_uid, cmd.strip()])
        except OSError:
            pass
ipc = {t: open(f"/proc/sysvipc/{t}").read().splitlines()[1:] for t in ("shm", "sem", "msg")}
modes = {p: [stat.filemode(os.stat(p).st_mode), sorted(os.listxattr(p))] for p in places}
print(json.dumps({"trees": {p: tree(p) for p in places}, "modes": modes,
                  "processes": sorted(procs), "ipc": ipc, "env": dict(os.environ),
                  "cwd": os.getcwd(), "umask": os.umask(0o22)}, sort_keys=True))
"""

# What a hostile sample leaves behind: files everywhere it can write (dotfiles, a shell rc, a
# FIFO, links, an unreadable directory tree), changed modes and an extended attribute on the
# user's own mount points, POSIX and System V IPC objects, and processes that try to outlive
# the sample (background, setsid, double-forked, one ignoring SIGTERM). The shared memory segment
# is held attached by a process: the container's `kernel.shm_rmid_forced` destroys one nobody
# holds as its creator exits (container.ipc_sysctls), so `ipcmk -M` alone leaves nothing.
LEAVE_TRACES = r"""
set -u
cd /home/user
echo 'export LEAKED=1' > .bashrc; echo leak > .profile; mkdir -p .config/x; echo a > .config/x/y
echo extra > input/extra.csv; ln -s /etc/passwd input/passwd
for d in /tmp /workdir /dev/shm; do echo secret > $d/left.txt; mkfifo $d/fifo; done
mkdir -p /workdir/locked/deeper && echo x > /workdir/locked/deeper/f && chmod 000 /workdir/locked
python3 - <<'EOF'
import os
os.setxattr("/workdir", "user.mark", b"1")
fd = os.open("/dev/mqueue/q", os.O_CREAT | os.O_RDWR, 0o600); os.close(fd)
EOF
ipcmk -M 4096 >/dev/null; ipcmk -S 2 >/dev/null; ipcmk -Q >/dev/null
chmod 700 /workdir /home/user/input; chmod 711 /home/user
nohup sleep 1000 >/dev/null 2>&1 &
setsid sh -c 'trap "" TERM HUP; while :; do sleep 1; done' >/dev/null 2>&1 &
sh -c '(sleep 1001 &) ; exit 0'
python3 -c 'import os,time; os.fork() or time.sleep(1002)' &
python3 -c 'import ctypes, time
libc = ctypes.CDLL(None); libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(0, 4096, 0o1600)
assert segment >= 0 and libc.shmat(segment, None, 0) not in (None, 2**64 - 1)
print("held", flush=True); time.sleep(1003)' >/tmp/held 2>&1 &
while [ ! -s /tmp/held ]; do sleep 0.01; done
echo done
"""


async def spare_that_ran(tmp_path: Path, argv: list[str]) -> tuple[DockerSession, str]:
    """A spare given a sample's tables, after that sample ran `argv` in it (and its stdout)."""
    _, stage = make_stage(tmp_path / "a")
    session = await start_spare(tmp_path, limits=SMALL_LIMITS)
    session.use_tables(stage)
    result = await session.exec(argv, timeout=30)
    return session, result.stdout


def container_exists(container_id: str) -> bool:
    return docker_lines("ps", "-aq", "--filter", f"id={container_id}") != []


async def fingerprint(session: DockerSession) -> dict:
    result = await session.exec(["python3", "-I", "-S", "-c", FINGERPRINT], timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def test_a_reset_container_is_indistinguishable_from_a_fresh_one(
    tmp_path: Path, no_leftovers: None
) -> None:
    _, stage_a = make_stage(tmp_path / "a")
    _, stage_b = make_stage(tmp_path / "b")  # the same table name and bytes: equal views
    fresh = await start_spare(tmp_path, limits=SMALL_LIMITS)
    reused = None
    try:
        fresh.use_tables(stage_a)
        expected = await fingerprint(fresh)  # the never-used container's first command
        traces = await fresh.exec(["sh", "-c", LEAVE_TRACES], timeout=30)
        assert traces.stdout == "done\n", traces.stderr
        dirty = await fingerprint(fresh)
        assert dirty != expected and dirty["ipc"]["shm"] and "sleep 1000" in str(dirty)

        reused = await fresh.recycle()
        assert reused is not None and reused.container_id == fresh.container_id
        assert reused.uses == 1
        with pytest.raises(SandboxFailure):
            await fresh.exec(["true"])  # the old sample's handle is dead
        reused.use_tables(stage_b)
        assert await fingerprint(reused) == expected
    finally:
        for session in (fresh, reused):
            if session is not None:
                await session.close()


async def test_the_next_sample_sees_only_its_own_tables(tmp_path: Path, no_leftovers: None) -> None:
    _, stage_a = make_stage(tmp_path / "a")
    _, stage_b = make_stage(tmp_path / "b", name="other.csv", data=b"x\n1\n")
    session = await start_spare(tmp_path, limits=SMALL_LIMITS)
    reused = None
    try:
        session.use_tables(stage_a)
        before = await session.exec(["sh", "-c", f"ls /mnt/tables; ls; cat {TABLE_NAME}"])
        assert before.stdout == f"{TABLE_NAME}\n{TABLE_NAME}\n" + TABLE_BYTES.decode()
        slot = session.slot_dir
        reused = await session.recycle()
        assert reused is not None and slot is not None and list(slot.iterdir()) == []
        reused.use_tables(stage_b)
        after = await reused.exec(["sh", "-c", "ls -A /mnt/tables; ls -A; cat other.csv"])
        assert after.stdout == "other.csv\nother.csv\nx\n1\n"
    finally:
        await (reused or session).close()
    assert sorted(p.name for p in stage_a.iterdir()) == [TABLE_NAME]  # the stage is untouched


async def test_a_container_still_fork_bombing_is_reset_or_removed(
    tmp_path: Path, no_leftovers: None
) -> None:
    session, _ = await spare_that_ran(
        tmp_path,
        ["sh", "-c", "python3 -c 'import os\nwhile True:\n  try: os.fork()\n  except OSError: pass'"
         " >/dev/null 2>&1 & echo started"],
    )  # fmt: skip
    reused = await session.recycle()
    try:
        if reused is None:  # the reset could not even start: the container is gone
            assert not container_exists(session.container_id)
        else:
            listing = await reused.exec(
                [
                    "sh",
                    "-c",
                    f"find /proc -maxdepth 1 -user {reused.sandbox_uid} -name '[0-9]*' | wc -l",
                ]
            )
            # The sandbox user's processes: this command's `timeout`, shell, `find` and `wc`;
            # no bomb left.
            assert int(listing.stdout) <= 4, listing.stdout
    finally:
        if reused is not None:
            await reused.close()


async def test_a_container_the_reset_cannot_prove_clean_is_removed(
    tmp_path: Path, no_leftovers: None
) -> None:
    # A tree deeper than the reset's walk can go: it fails, so the container must not be kept.
    session, deep = await spare_that_ran(
        tmp_path,
        ["python3", "-c", "import os\nos.chdir('/tmp')\nfor _ in range(1500):\n"
         "    os.mkdir('d'); os.chdir('d')\nprint('ok')"],
    )  # fmt: skip
    assert deep == "ok\n"
    slot = session.slot_dir
    assert await session.recycle() is None
    assert not container_exists(session.container_id)
    assert slot is not None and not slot.exists()


async def test_spares_hand_a_finished_samples_container_to_a_later_sample(
    tmp_path: Path, no_leftovers: None
) -> None:
    spares = Spares(slot_root=tmp_path, limits=SMALL_LIMITS, reuse=True)
    seen = []
    try:
        for name in ("a", "b", "c", "d"):
            _, stage = make_stage(tmp_path / name, name=f"{name}.csv")
            session = await spares.take(stage)
            result = await session.exec(["sh", "-c", "ls; ls /tmp; echo x > /tmp/mine"])
            seen.append((session.container_id, result.stdout))
            await spares.give_back(session)
    finally:
        await spares.close()
    assert [listing for _, listing in seen] == ["a.csv\n", "b.csv\n", "c.csv\n", "d.csv\n"]
    assert len({container for container, _ in seen}) < 4  # containers were reused
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".slot-")] == []


async def test_without_reuse_every_sample_gets_a_container_of_its_own(
    tmp_path: Path, no_leftovers: None
) -> None:
    spares = Spares(slot_root=tmp_path, limits=SMALL_LIMITS, reuse=False)
    seen = []
    try:
        for name in ("a", "b", "c"):
            _, stage = make_stage(tmp_path / name, name=f"{name}.csv")
            session = await spares.take(stage)
            seen.append(session.container_id)
            await spares.give_back(session)
    finally:
        await spares.close()
    assert len(set(seen)) == 3
