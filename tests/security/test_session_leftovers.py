"""Issue 45 item 1 and issue 43 item 2: what a bwrap session leaves when its process is killed
can be removed by any means without touching what every process shares, and a session's
directory never vanishes under a live owner.

- A `DataAnalysisEnv` killed at exit left a session folder holding read-write bind mounts of the
  shared sandbox environment and of the stage dir: the obvious clean-up, `rm -rf` of that folder,
  deleted the environment for every process on the machine. The binds are now read-only from the
  moment they appear (`disk.bind_read_only`), so the same `rm -rf` deletes only the session's own
  files.
- Session folders and their cgroups were judged stale by the owner's bare pid: an owner in another
  pid namespace looked dead, and a sweep removed its session under it. They are now judged by an
  owner lock the process holds for the session's life (`_host.claim_dir`).

    python -m pytest tests/security/test_session_leftovers.py -q
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes import disk
from tests.sandboxes.helpers import make_stage, require_kind

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the host-side mounts and cgroups need root"),
]

# A child that opens a session over (stage dir, environment), says where its folder and cgroups
# are, and waits to be killed.
_OPEN_AND_WAIT = (
    "import asyncio, sys, time; from pathlib import Path; "
    "from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession; "
    "s = asyncio.run(BwrapSession.start(Path(sys.argv[1]), env_dir=Path(sys.argv[2]))); "
    "print(s.root, *(s.cgroup.dirs.values() if s.cgroup else ()), flush=True); "
    "time.sleep(600)"
)


def _fake_env(tmp_path: Path) -> Path:
    """A stand-in for the shared environment (the test must not risk the real one): a few
    files in nested directories, as a site-packages holds them."""
    env = tmp_path / "sandbox-env"
    for relative, text in {
        "bin/python3": "#!/bin/sh\n",
        "lib/python3.11/site-packages/pandas/__init__.py": "__version__ = '2'\n",
        "lib/python3.11/site-packages/statsmodels/api.py": "OLS = None\n",
    }.items():
        path = env / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for path in (env, *env.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return env


def _digests(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _open_in_child(argv: list[str], stage: Path, env: Path) -> tuple[subprocess.Popen, list[Path]]:
    child = subprocess.Popen(
        [*argv, sys.executable, "-c", _OPEN_AND_WAIT, str(stage), str(env)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, "the child could not open a session"
    return child, [Path(part) for part in line.split()]


def test_rm_rf_of_a_killed_sessions_folder_leaves_the_shared_environment_and_stage_dir(tmp_path):
    require_kind("bwrap")
    env = _fake_env(tmp_path)
    _, stage = make_stage(tmp_path)
    env_before, stage_before = _digests(env), _digests(stage)
    child, (root, *groups) = _open_in_child([], stage, env)
    try:
        assert disk.mounts_under(root), "expected the session's mounts (as root)"
    finally:
        child.kill()  # as a killed DataAnalysisEnv: nothing of its session is closed
        child.wait()
    assert root.is_dir() and disk.mounts_under(root)

    # The obvious clean-up of a leftover folder. rm fails on what it may not remove (the
    # read-only binds, busy mount points); it must delete nothing shared.
    subprocess.run(["rm", "-rf", str(root)], capture_output=True, check=False)

    assert _digests(env) == env_before, "rm -rf of a session folder changed the environment"
    assert _digests(stage) == stage_before, "rm -rf of a session folder changed the stage dir"

    # And `smoldataenvs sandbox cleanup` sweeps the rest: folder, mounts, cgroups, owner lock.
    swept = subprocess.run(
        [sys.executable, "-m", "smoldataenvs_tasks", "sandbox", "cleanup"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert swept.returncode == 0, swept.stderr
    assert disk.mounts_under(root) == [] and not root.exists()
    assert not root.with_name(root.name + ".owner").exists()
    assert not any(group.exists() for group in groups)
    assert _digests(env) == env_before and _digests(stage) == stage_before


def test_the_shared_binds_of_a_session_are_read_only_on_the_host(tmp_path):
    from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession

    require_kind("bwrap")
    env = _fake_env(tmp_path)
    _, stage = make_stage(tmp_path)

    async def attempt() -> list[str]:
        session = await BwrapSession.start(stage, env_dir=env)
        refused = []
        try:
            for bound in (session.root / "env", session.root / "tables"):
                target = next(path for path in bound.rglob("*") if path.is_file())
                try:
                    target.unlink()
                except OSError as error:
                    refused.append(os.strerror(error.errno or 0))
        finally:
            session.close_sync()
        return refused

    assert asyncio.run(attempt()) == [os.strerror(30)] * 2  # EROFS, as root
    assert _digests(env) and (stage / "sales.csv").exists()


def test_a_live_session_whose_pid_this_namespace_cannot_see_is_never_swept(tmp_path):
    """The owner runs in its own pid namespace, with a pid no process here has: a sweep that
    judged by the pid took it for dead and removed its folder and cgroups under it."""
    from smoldataenvs_tasks.sandboxes import leftovers

    require_kind("bwrap")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    env = _fake_env(tmp_path)
    _, stage = make_stage(tmp_path)
    # ns_last_pid: the owner's pid in its namespace is one no process here has. (Its own /proc
    # for bwrap, and so its own mount namespace: its mounts are not seen here.)
    pid = next(p for p in range(32000, 1000, -1) if not Path(f"/proc/{p}").exists())
    in_namespace = [
        "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
        f'echo {pid - 1} > /proc/sys/kernel/ns_last_pid && "$@"', "sh",
    ]  # fmt: skip
    child, (root, *groups) = _open_in_child(in_namespace, stage, env)
    try:
        assert groups and all(f"-p{pid}-" in group.name for group in groups)
        swept = leftovers.sweep()
        assert str(root) not in swept.sessions and root.is_dir()
        assert all(group.exists() for group in groups), swept.cgroups
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # Once its owner is gone (unshare's --kill-child ends it soon after), the same sweep takes
    # it all.
    deadline = time.monotonic() + 30
    while disk.session_in_use(disk.session_token(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    swept = leftovers.sweep()
    assert not root.exists() and not any(group.exists() for group in groups), swept


def test_a_session_folder_removed_under_a_live_eval_costs_neither_the_sample_nor_the_run(
    tmp_path,
):
    """Issue 43: a bwrap session folder vanished under its live owner, and the first
    SandboxFailure cancelled every sample in flight. The program scorer now grades the reply it
    holds again in a fresh session (`pipeline.decide_in_fresh_sandboxes`, lm-eval's retry)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.solver import Generate, TaskState, chain, solver
    from inspect_ai.util import sandbox as current_sandbox

    from smoldataenvs_tasks.inspect_adapter.providers import session_of
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
    from tests.replies import ORDERS_TASK, fenced, program_row, write_jsonl

    require_kind("bwrap")
    removed: list[Path] = []

    @solver
    def remove_the_session_folder():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            session = session_of(current_sandbox())
            assert session is not None
            root = Path(session.info["root"])
            # What the pid-judged sweep did to a live owner's session: its mounts detached, its
            # folder removed.
            disk.unmount_all(root)
            shutil.rmtree(root)
            removed.append(root)
            return state

        return solve

    task = smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap")
    task.solver = chain(task.solver, remove_the_session_folder())
    replay = write_jsonl(
        tmp_path / "gold.jsonl", [program_row(ORDERS_TASK, fenced("print('East')"))]
    )
    [log] = inspect_eval(
        task,
        model="replay/gold",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert removed, "no session folder was removed: the test proves nothing"
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.error is None and not sample.error_retries
    score = sample.scores["program_scorer"]
    assert (score.value, score.metadata["category"]) == (1.0, "correct"), score


_DATA_ANALYSIS_ENV = """
import time
from smoldataenvs_tasks.rl import DataAnalysisEnv
env = DataAnalysisEnv(split="sample", sandbox="bwrap")
env.reset(task_id="sample/0001/orders.ipynb_qa_1", split="sample")
session = env._episode.session
print(session.root, session.stage_dir, *session.cgroup.dirs.values(), flush=True)
time.sleep(600)
"""


def test_cleanup_sweeps_a_killed_data_analysis_envs_session_folder_cgroups_mounts_and_stage_dir():
    """Issue 45: a `DataAnalysisEnv` killed mid-episode left a session folder, 4 cgroups and 6
    host mounts; `smoldataenvs sandbox cleanup` takes them all, and the real environment's bind
    in that folder refuses writes meanwhile."""
    require_kind("bwrap")
    child = subprocess.Popen(
        [sys.executable, "-c", _DATA_ANALYSIS_ENV], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        root, stage, *groups = map(Path, child.stdout.readline().split())
        assert disk.mounts_under(root) and stage.is_dir() and groups
        with pytest.raises(OSError) as refused:
            (root / "env" / "written-through-a-session-folder").write_text("x")
        assert refused.value.errno == 30  # EROFS
    finally:
        child.kill()
        child.wait()
    swept = subprocess.run(
        [sys.executable, "-m", "smoldataenvs_tasks", "sandbox", "cleanup"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert swept.returncode == 0, swept.stderr
    assert not root.exists() and disk.mounts_under(root) == []
    assert not root.with_name(root.name + ".owner").exists()
    assert not any(group.exists() for group in groups)
    assert not stage.exists()
