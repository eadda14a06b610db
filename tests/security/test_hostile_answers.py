"""Hostile answer files and disk filling (issue 13 items 1-4), in every sandbox kind.

The agent controls /workdir/answer.txt. Whatever it makes of it (a FIFO, a device, a link to a
file only root may read, a directory, 900 MB), the sample is scored, identically in every kind:
no hang, no error that leaves the sample unscored, nothing read with more rights than the agent
has. And no sample can fill the host's disk: every writable directory has a size cap.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks import pipeline
from smoldataenvs_tasks.contract import (
    ANSWER_FILE,
    DEFAULT_LIMITS,
    MAX_ANSWER_BYTES,
    TMP_DIR,
    WORKDIR,
    writable_dir_sizes,
)
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.sandboxes import disk
from smoldataenvs_tasks.sandboxes.answer_file import AnswerState, read_answer_file
from tests.sandboxes.helpers import SMALL_LIMITS

pytestmark = pytest.mark.anyio

# Bounded so a regression (a blocking open) fails the test instead of hanging the suite.
READ_DEADLINE_S = 60


async def make_answer(session, script: str) -> None:
    made = await session.exec(["sh", "-c", script], timeout=60)
    assert made.returncode == 0, made.stderr


async def read(session):
    return await asyncio.wait_for(read_answer_file(session), READ_DEADLINE_S)


async def test_a_fifo_answer_file_is_no_answer_without_hanging(session):
    await make_answer(session, f"mkfifo {ANSWER_FILE}")
    found = await read(session)
    assert (found.state, found.what) == (AnswerState.NOT_REGULAR, "a FIFO")


async def test_a_link_to_a_secret_is_not_followed(session):
    # /etc/shadow: root-only where it exists (Docker); bwrap's synthetic /etc has none at all.
    await make_answer(session, f"ln -sf /etc/shadow {ANSWER_FILE}")
    found = await read(session)
    assert (found.state, found.what, found.text) == (
        AnswerState.NOT_REGULAR,
        "a symbolic link",
        None,
    )


async def test_a_link_to_a_readable_file_is_not_followed_either(session):
    await make_answer(session, f"echo 42 > {WORKDIR}/real && ln -sf {WORKDIR}/real {ANSWER_FILE}")
    assert (await read(session)).state is AnswerState.NOT_REGULAR


@pytest.mark.parametrize(
    ("script", "what"),
    [
        (f"mkdir {ANSWER_FILE}", "a directory"),
        (
            f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('{ANSWER_FILE}')\"",
            "a socket",
        ),
    ],
    ids=["directory", "socket"],
)
async def test_an_answer_file_that_is_no_regular_file_is_no_answer(session, script, what):
    await make_answer(session, script)
    found = await read(session)
    assert (found.state, found.what) == (AnswerState.NOT_REGULAR, what)


async def test_an_oversized_answer_file_reads_a_bounded_prefix_and_says_too_large(session):
    # The issue's `truncate -s 900M`, scaled to the small test limits (64 MiB per file): any
    # size past MAX_ANSWER_BYTES takes the same path, and the reader sends back nothing of it.
    await make_answer(session, f"truncate -s {MAX_ANSWER_BYTES * 40} {ANSWER_FILE}")
    found = await read(session)
    assert (found.state, found.text) == (AnswerState.TOO_LARGE, None)


async def test_an_answer_of_exactly_the_limit_is_read(session):
    await make_answer(session, f"head -c {MAX_ANSWER_BYTES} /dev/zero | tr '\\0' 7 > {ANSWER_FILE}")
    found = await read(session)
    assert found.state is AnswerState.READ and found.text == "7" * MAX_ANSWER_BYTES


@pytest.mark.parametrize(
    ("script", "state"),
    [
        (f"echo 42 > {ANSWER_FILE} && chmod 000 {ANSWER_FILE}", AnswerState.UNREADABLE),
        (f"printf '\\377\\376' > {ANSWER_FILE}", AnswerState.NOT_TEXT),
        (f"rm -f {ANSWER_FILE}", AnswerState.MISSING),
    ],
    ids=["unreadable", "binary", "missing"],
)
async def test_unreadable_binary_and_missing_answer_files(session, script, state):
    await make_answer(session, script)
    assert (await read(session)).state is state


async def test_a_plain_answer_file_is_read_whole(session):
    await make_answer(session, f"printf ' East \\r\\n2nd line' > {ANSWER_FILE}")
    found = await read(session)
    assert (found.state, found.text) == (AnswerState.READ, " East \r\n2nd line")


async def test_hostile_answer_files_are_graded_zero_with_their_reasons(session):
    record = next(t for t in load_tasks("sample") if t.answer)
    verdicts = {}
    for name, script in {
        "fifo": f"mkfifo {ANSWER_FILE}",
        "huge": f"rm -f {ANSWER_FILE}; truncate -s {MAX_ANSWER_BYTES + 1} {ANSWER_FILE}",
        "gold": f"rm -f {ANSWER_FILE}; printf '%s' '{record.answer}' > {ANSWER_FILE}",
    }.items():
        await make_answer(session, f"rm -rf {ANSWER_FILE}; {script}")
        verdicts[name] = await pipeline.decide_answer_file(record, session)
    fifo, huge, gold = verdicts["fifo"], verdicts["huge"], verdicts["gold"]
    assert (fifo.reward, fifo.category, fifo.reason) == (
        0.0,
        "no_answer",
        "the answer file is a FIFO",
    )
    assert (huge.reward, huge.category, huge.method, huge.detail) == (
        0.0,
        "resource_limit",
        "answer_too_large",
        "answer_size",
    )
    assert (gold.reward, gold.category) == (1.0, "correct")


# --- disk caps ---------------------------------------------------------------------------------


async def test_a_sample_cannot_write_more_than_its_workdir_cap(session, kind):
    if kind.endswith("bwrap") and not disk.can_mount():
        pytest.skip("bwrap caps disk with tmpfs mounts, which need root (docs/sandboxes.md)")
    cap = writable_dir_sizes(SMALL_LIMITS)[WORKDIR]
    chunk = SMALL_LIMITS.max_file_bytes - 1024 * 1024  # under the per-file limit
    files = cap // chunk + 1  # together past the directory's cap
    script = (
        f"i=0; while [ $i -lt {files} ]; do "
        f"head -c {chunk} /dev/zero > {WORKDIR}/fill$i || exit 9; i=$((i+1)); done"
    )
    filled = await session.exec(["sh", "-c", script], timeout=120)
    assert filled.returncode == 9, (filled.returncode, filled.stderr)
    assert "No space left on device" in filled.stderr
    used = await session.exec(["du", "-sb", WORKDIR], timeout=60)
    assert int(used.stdout.split()[0]) <= cap + 64 * 1024  # the files, plus directory entries
    # The sandbox still works, and an answer still fits after the disk is full once cleared.
    cleared = await session.exec(["sh", "-c", f"rm -f {WORKDIR}/fill*; echo 5 > {ANSWER_FILE}"])
    assert cleared.returncode == 0, cleared.stderr
    assert (await read(session)).text == "5\n"


def test_contract_disk_caps_leave_a_quarter_of_memory_for_processes():
    # Full directories must leave memory for a shell, or the sample would look like a broken
    # sandbox (ungraded) instead of a program that filled its disk (scored).
    sizes = writable_dir_sizes(DEFAULT_LIMITS)
    assert sum(sizes.values()) == DEFAULT_LIMITS.memory_bytes * 3 // 4
    assert sizes[TMP_DIR] >= DEFAULT_LIMITS.max_file_bytes  # a file at the size limit fits


@pytest.mark.skipif(os.geteuid() != 0, reason="tmpfs caps need root")
async def test_bwrap_caps_are_host_tmpfs_mounts_removed_with_the_session(stage_dir):
    from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession
    from tests.sandboxes.helpers import require_kind

    require_kind("bwrap")
    session = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    root = session.root
    try:
        assert session.disk_capped and session.info["disk"].startswith("size-limited")
        # A tmpfs per writable directory, as Docker lays them out, and (run as root, the sandbox
        # under another uid) binds of the environment and the tables that uid may reach.
        writable = {session.home, session.input_dir, session.workdir, session.tmp}
        assert set(disk.mounts_under(root)) == writable | {root / "env", root / "tables"}
    finally:
        await session.close()
    assert disk.mounts_under(root) == [] and not root.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="tmpfs caps need root")
async def test_the_mounts_of_a_killed_eval_process_are_reaped(stage_dir, tmp_path):
    from tests.sandboxes.helpers import require_kind

    require_kind("bwrap")
    # A child process opens a session and is SIGKILLed before it can close it.
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, time; from pathlib import Path; "
            "from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession; "
            "s = asyncio.run(BwrapSession.start(Path(sys.argv[1]))); "
            "print(s.root, flush=True); time.sleep(600)",
            str(stage_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    root = Path(child.stdout.readline().strip())
    assert disk.mounts_under(root)
    child.kill()
    child.wait()
    assert str(root) in disk.reap_stale(root.parent)
    assert disk.mounts_under(root) == [] and not root.exists()
