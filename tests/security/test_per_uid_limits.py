"""Issue 32, item 4: what the kernel counts per uid must not pass from one sample to another
running beside it. inotify instances are counted per (user namespace, uid): a sample that takes
every instance its uid may have (`fs.inotify.max_user_instances`, 128 by default) would leave
none to any other sample of the same host uid. Processes are counted per uid too, against
RLIMIT_NPROC: where that rlimit is a sandbox's process cap (bwrap without a pids cgroup), a
sample holding its cap of processes would stop every other sample of its uid from forking.

Every sandbox runs its sandbox user as a host uid of its own: bwrap's sessions (as root) and
each container of our `docker` provider claim one from one pool (sandboxes/hostuid.py), so the
victim is untouched. Inspect's stock docker-compose provider runs every container as uid 1000
and is not covered (docs/threat-model.md, "What this does not cover").

    python -m pytest tests/security/test_per_uid_limits.py -q
"""

from __future__ import annotations

import pytest

from tests.sandboxes.helpers import SMALL_LIMITS, make_stage
from tests.sandboxes.kinds import open_sandbox

pytestmark = pytest.mark.anyio

# Takes every inotify instance its uid may have and holds them (a detached process), then says
# how many it took.
_INOTIFY_HOG = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
taken = 0
while libc.inotify_init1(0) >= 0:
    taken += 1
if ctypes.get_errno() != 24:  # EMFILE: the per-uid count, not this process's descriptors
    sys.exit(f"stopped by errno {ctypes.get_errno()} after {taken}")
print(taken, flush=True)
os.close(1)
os.close(2)
if os.fork() == 0:
    os.setsid()
    import time
    time.sleep(120)
"""
# What the victim's program needs: one inotify instance (a file watcher, a library's reloader).
_INOTIFY_VICTIM = (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "print('ok' if libc.inotify_init1(0) >= 0 else f'errno {ctypes.get_errno()}')\n"
)

# Forks until the sandbox refuses (its process cap), leaves every child running (detached from
# the command's output), and says how many.
_PROCESS_HOG = r"""
import os, sys, time
children = 0
while True:
    try:
        pid = os.fork()
    except OSError as error:
        if error.errno != 11:  # EAGAIN: a process cap, per uid or per sandbox
            sys.exit(f"stopped by errno {error.errno} after {children}")
        break
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.setsid()
        time.sleep(120)
        os._exit(0)
    children += 1
print(children, flush=True)
"""
# What the victim's program does: a few processes at once (a pool of workers).
_PROCESS_VICTIM = r"""
import os
pids = []
try:
    for _ in range(8):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    print("ok")
except OSError as error:
    print(f"errno {error.errno} after {len(pids)}")
for pid in pids:
    os.waitpid(pid, 0)
"""


async def _hog_and_victim(kind: str, tmp_path, hog_code: str, victim_code: str) -> None:
    hog = await open_sandbox(kind, make_stage(tmp_path / "hog")[1], limits=SMALL_LIMITS)
    try:
        victim = await open_sandbox(kind, make_stage(tmp_path / "victim")[1], limits=SMALL_LIMITS)
        try:
            took = await hog.exec(["python3", "-c", hog_code], timeout=30)
            assert took.returncode == 0 and int(took.stdout) > 0, took
            seen = await victim.exec(["python3", "-c", victim_code], timeout=30)
            assert seen.stdout.strip() == "ok", seen
        finally:
            await victim.close()
    finally:
        await hog.close()  # every process of the hog dies with its sandbox


async def test_an_inotify_hog_leaves_the_sample_beside_it_untouched(kind, tmp_path):
    await _hog_and_victim(kind, tmp_path, _INOTIFY_HOG, _INOTIFY_VICTIM)


async def test_a_process_hog_leaves_the_sample_beside_it_able_to_fork(kind, tmp_path):
    await _hog_and_victim(kind, tmp_path, _PROCESS_HOG, _PROCESS_VICTIM)
