"""Invariant 1 of docs/threat-model.md, for Docker containers reused across samples (opt-in:
SMOLDATAENVS_DOCKER_REUSE=1): nothing a sample leaves behind survives into the next one.

The attack that broke it (issue 23): a daemon planted by one sample `PTRACE_SEIZE`d the reset
(then run as the sample's own uid), rewrote its `kill(-1, SIGKILL)` into `getpid()`, and had its
leader thread exit alone so the reset's check saw a zombie; in later samples it read their tables
and overwrote their answers. Here the daemon tries all of that (and kills every later program):
the seccomp filter refuses its ptrace, the keeper kills from a child it could not trace anyway,
and the check reads every thread. Later samples must be untouched, through the sessions and
through lm-eval's batch path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandboxes.docker_support import leftovers_guard
from tests.sandboxes.helpers import SMALL_LIMITS, make_stage, require_kind

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

# Double-forks into its own session, then: tries to seize every new process (the reset's among
# them), kills every later sample's program, overwrites its answer file, copies its tables; and
# its leader thread exits alone (a zombie leader hides a live thread from a leaders-only check).
DAEMON = r"""
import ctypes, os, platform, threading, time
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
for fd in (0, 1, 2):
    os.close(fd)
libc = ctypes.CDLL(None, use_errno=True)
me = os.getpid()
def sabotage():
    seen = set()
    while True:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me or name in seen:
                continue
            seen.add(name)
            libc.ptrace(0x4206, int(name), 0, 0)  # PTRACE_SEIZE
            try:
                # Spelled in two parts: this source is the planting command's own argv, which
                # the thread killed (137) whenever it ran before that command had exited.
                if b"solve" + b".py" in open(f"/proc/{name}/cmdline", "rb").read():
                    os.kill(int(name), 9)
            except OSError:
                pass
        try:
            with open("/workdir/answer.txt", "w") as out:
                out.write("12345")
        except OSError:
            pass
        for table in os.listdir("/mnt/tables"):
            try:
                data = open("/mnt/tables/" + table, "rb").read()
                open("/dev/shm/stolen-" + table, "wb").write(data)
            except OSError:
                pass
        time.sleep(0.005)
threading.Thread(target=sabotage).start()
time.sleep(0.2)
libc.syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)  # SYS_exit: the leader only
"""

# Every live thread of the sandbox user but the caller's own process and its parent (the command's
# `timeout`), read from each thread's status.
THREADS_OF_THE_USER = r"""
import json, os
ours, found, uid = {os.getpid(), os.getppid()}, [], str(os.getuid())
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) in ours:
        continue
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/task/{tid}/status") if ":" in l)
        except OSError:
            continue
        if uid in status["Uid"].split() and status["State"].split()[0] not in ("Z", "X"):
            found.append(f"{pid}/{tid}")
print(json.dumps(found))
"""


@pytest.fixture(autouse=True)
def _docker() -> None:
    require_kind("docker")


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    yield from leftovers_guard()


def gold_programs() -> dict[str, str]:
    """The bundled gold replies of the sample split, by task id."""
    from smoldataenvs_tasks.data.source import SAMPLE_DIR

    replies = {}
    for line in (
        (SAMPLE_DIR / "replays" / "gold_program.jsonl").read_text(encoding="utf-8").splitlines()
    ):
        row = json.loads(line)
        replies[row["task_id"]] = [m for m in row["messages"] if m["role"] == "assistant"][-1][
            "content"
        ]
    return replies


async def test_a_ptrace_armed_survivor_neither_outlives_the_reset_nor_touches_the_next_sample(
    tmp_path: Path, no_leftovers: None
) -> None:
    from smoldataenvs_tasks.sandboxes.docker.spares import start_spare

    _, first_stage = make_stage(tmp_path / "first", name="first.csv")
    _, second_stage = make_stage(tmp_path / "second", name="second.csv")
    first = await start_spare(tmp_path, limits=SMALL_LIMITS)
    second = None
    try:
        first.use_tables(first_stage)
        planted = await first.exec(["python3", "-c", DAEMON])
        assert planted.returncode == 0, planted.stderr
        await asyncio.sleep(0.5)
        alive = await first.exec(["python3", "-c", THREADS_OF_THE_USER])
        assert json.loads(alive.stdout), "the daemon did not start: the test proves nothing"

        second = await first.recycle()
        # The reset killed the daemon and proved it gone, so the container is reused.
        assert second is not None and second.container_id == first.container_id
        second.use_tables(second_stage)
        await second.exec(["sh", "-c", "printf gold > /workdir/answer.txt"])
        await asyncio.sleep(1.0)
        after = await second.exec(
            ["sh", "-c", "cat /workdir/answer.txt; echo; ls -A /dev/shm; ls /mnt/tables"]
        )
        assert after.stdout == "gold\nsecond.csv\n"
        threads = await second.exec(["python3", "-c", THREADS_OF_THE_USER])
        assert json.loads(threads.stdout) == []
    finally:
        for session in (first, second):
            if session is not None:
                await session.close()


def test_a_planted_daemon_kills_no_later_program_in_an_lm_eval_batch(
    monkeypatch: pytest.MonkeyPatch, no_leftovers: None
) -> None:
    from smoldataenvs_tasks.data.kinds import load_tasks
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies
    from smoldataenvs_tasks.sandboxes.docker.spares import REUSE_ENV

    monkeypatch.setenv(REUSE_ENV, "1")
    tasks = load_tasks("sample")
    gold = gold_programs()
    planting = ProgramReply(tasks[0], f"```python\n{DAEMON}\nprint('planted')\n```")
    golden = [ProgramReply(task, gold[task.task_id]) for task in tasks if task.task_id in gold]
    verdicts = grade_program_replies([planting, *golden], sandbox="docker", concurrency=1)
    expected = grade_program_replies(golden, sandbox="bwrap", concurrency=1)
    assert [v.to_dict() for v in verdicts[1:]] == [v.to_dict() for v in expected]
    assert sum(v.reward == 1.0 for v in verdicts[1:]) >= 8
