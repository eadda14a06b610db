"""Stage dirs (issue 31): a run removes its own, and `smoldataenvs sandbox cleanup` removes those
of dead processes, never one a live process uses, and says what it removed. Real processes:
owners that exit, are killed, or keep making and removing stage dirs while the cleanup runs.

python -m pytest tests/sandboxes/test_stage_dir_lifecycle.py -q
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks._host import HOST_IN_NAMES, OWNER_SUFFIX, stage_root, sweep_unowned

_ROOT = Path(__file__).resolve().parents[2]

# A process that makes a stage dir the way an Inspect task does (kept until its exit), puts a
# file of its own in it, says where, then waits for stdin to close (or is killed).
_OWNER = """
import sys
from smoldataenvs_tasks.data.staging import new_stage_dir
path = new_stage_dir()
(path / "own.bin").write_bytes(b"x" * 5000)
print(path, flush=True)
sys.stdin.read()
"""

# An eval that keeps making, using and removing stage dirs (lm-eval's batch does one per reply)
# and fails if one vanishes while it holds it.
_CHURN = """
import sys, time
from smoldataenvs_tasks.data.staging import new_stage_dir, remove_stage_dir
for _ in range(int(sys.argv[1])):
    path = new_stage_dir()
    (path / "t.csv").write_text("a\\n")
    time.sleep(0.002)
    if not (path / "t.csv").is_file():
        sys.exit(f"lost {path} while using it")
    remove_stage_dir(path)
"""


def _env(cache: Path, tmp: Path) -> dict[str, str]:
    return {**os.environ, "SMOLDATAENVS_CACHE": str(cache), "TMPDIR": str(tmp)}


def _start_owner(cache: Path, tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen(
        [sys.executable, "-c", _OWNER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(cache, tmp),
        cwd=_ROOT,
    )
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


def test_a_run_that_ends_leaves_no_stage_dir(tmp_path: Path) -> None:
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    child, path = _start_owner(cache, tmp)
    assert path.is_dir() and path.parent == stage_root(cache)
    assert path.with_name(path.name + OWNER_SUFFIX).is_file()
    child.communicate("")  # stdin closed: the run ends normally
    assert child.returncode == 0
    assert list(stage_root(cache).iterdir()) == []  # neither the dir nor its owner file


@pytest.mark.slow  # two owner processes and the console script: ~4 s
def test_cleanup_removes_dead_runs_stage_dirs_and_keeps_live_ones(tmp_path: Path) -> None:
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    live, live_dir = _start_owner(cache, tmp)
    killed, killed_dir = _start_owner(cache, tmp)
    killed.send_signal(signal.SIGKILL)  # a crash: no exit handler runs
    killed.wait()
    root = stage_root(cache)
    # An older version's, named after a pid that is gone here; and another host's, too young to
    # judge (its locks may not reach this host).
    dead_pid = killed.pid
    legacy = root / f"20240101T000000-{HOST_IN_NAMES}-p{dead_pid}-0badc0de"
    legacy.mkdir()
    foreign = root / "20240101T000000-elsewhere-p1-cafe0000"
    foreign.mkdir()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "smoldataenvs_tasks", "sandbox", "cleanup"],
            capture_output=True,
            text=True,
            env=_env(cache, tmp),
            cwd=_ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert not killed_dir.exists() and not legacy.exists()
        assert not killed_dir.with_name(killed_dir.name + OWNER_SUFFIX).exists()
        assert (live_dir / "own.bin").is_file() and foreign.is_dir()
        # The killed run's own file had no other link: its bytes are what was freed.
        assert f"removed 2 stage dirs under {root} (5.0 KB freed)" in done.stdout
        summary = done.stdout.splitlines()[-1]
        assert "2 stage dirs (5.0 KB freed)" in summary, done.stdout
        assert "kept 2 stage dirs in use" in summary, done.stdout
    finally:
        live.communicate("")
    assert live.returncode == 0
    assert not live_dir.exists()


@pytest.mark.slow  # 150 stage dirs made and removed under constant sweeps: ~5-10 s
def test_cleanup_never_takes_a_stage_dir_a_running_eval_holds(tmp_path: Path) -> None:
    """Sweeps as fast as they go while an eval makes and removes stage dirs: the eval never loses
    one it holds, and the sweeps never leave one of its behind."""
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    churn = subprocess.Popen(
        [sys.executable, "-c", _CHURN, "150"],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(cache, tmp),
        cwd=_ROOT,
    )
    sweeps = 0
    while churn.poll() is None:
        sweep_unowned(stage_root(cache), foreign_max_age_s=3600)
        sweeps += 1
    assert churn.returncode == 0, churn.stderr.read() if churn.stderr else ""
    assert sweeps > 10  # the sweeps really ran beside it
    assert list(stage_root(cache).iterdir()) == []


def test_an_orphan_owner_file_is_removed_once_its_lock_is_free(tmp_path: Path) -> None:
    # A process killed between a claim's two steps leaves the owner file alone.
    root = tmp_path / "stage"
    root.mkdir()
    orphan = root / f"20240101T000000-{HOST_IN_NAMES}-p1-00000000{OWNER_SUFFIX}"
    orphan.write_text(f"{os.uname().nodename} 1\n", encoding="utf-8")
    swept = sweep_unowned(root, foreign_max_age_s=3600)
    assert swept.removed == [] and not orphan.exists()


def test_a_stage_dir_whose_owner_file_another_host_wrote_waits_for_its_age(tmp_path: Path) -> None:
    root = tmp_path / "stage"
    root.mkdir()
    path = root / "20240101T000000-elsewhere-p1-00000000"
    path.mkdir()
    (root / (path.name + OWNER_SUFFIX)).write_text("elsewhere 1\n", encoding="utf-8")
    assert sweep_unowned(root, foreign_max_age_s=3600).in_use == 1 and path.is_dir()
    old = time.time() - 7200
    os.utime(path, (old, old))
    assert sweep_unowned(root, foreign_max_age_s=3600).removed == [path]


@pytest.mark.parametrize("name", [".objects", "notes.txt"])
def test_the_sweep_leaves_what_is_not_a_stage_dir(tmp_path: Path, name: str) -> None:
    root = tmp_path / "stage"
    root.mkdir()
    entry = root / name
    entry.mkdir() if name.startswith(".") else entry.write_text("x", encoding="utf-8")
    old = time.time() - 10 * 86400
    os.utime(entry, (old, old))
    assert sweep_unowned(root, foreign_max_age_s=0).removed == [] and entry.exists()
