"""Per-session cgroups, exercised on the real hierarchy (skipped where none is writable).

python -m pytest tests/sandboxes/test_sandbox_cgroups.py -q
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from smoldataenvs_tasks.contract import MiB, SandboxLimits
from smoldataenvs_tasks.sandboxes import cgroups
from smoldataenvs_tasks.sandboxes.procrun import launcher_argv

LIMITS = SandboxLimits(memory_bytes=256 * MiB, max_processes=8, cpus=0.5)


@pytest.fixture
def group():
    mode = cgroups.detect_enforcement()
    if mode is cgroups.Enforcement.RLIMITS:
        pytest.skip("no writable cgroup hierarchy here")
    created = cgroups.create_session_cgroup(LIMITS, mode)
    try:
        yield created
    finally:
        created.remove()


def _in_group(group: cgroups.SessionCgroup, code: str, python: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        launcher_argv([sys.executable, "-c", code], procs_files=group.procs_files, python=python),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_limits_are_written(group: cgroups.SessionCgroup) -> None:
    if group.mode is cgroups.Enforcement.CGROUP_V1:
        assert (group.dirs["pids"] / "pids.max").read_text(encoding="utf-8").strip() == "8"
        memory = (
            (group.dirs["memory"] / "memory.limit_in_bytes").read_text(encoding="utf-8").strip()
        )
        assert int(memory) == 256 * MiB
        if "cpu" in group.dirs:
            assert (group.dirs["cpu"] / "cpu.cfs_quota_us").read_text(
                encoding="utf-8"
            ).strip() == "50000"
    else:
        unified = group.dirs["unified"]
        assert (unified / "pids.max").read_text(encoding="utf-8").strip() == "8"
        assert int((unified / "memory.max").read_text(encoding="utf-8")) == 256 * MiB


def test_launcher_puts_the_process_in_the_groups(group: cgroups.SessionCgroup) -> None:
    process = _in_group(
        group, "import time; print(open('/proc/self/cgroup').read()); time.sleep(30)"
    )
    try:
        for _ in range(100):
            if process.pid in group.pids():
                break
            time.sleep(0.02)
        assert process.pid in group.pids()
    finally:
        process.kill()
        process.wait()


def test_pids_limit_is_counted_and_kill_all_empties_the_group(
    group: cgroups.SessionCgroup,
) -> None:
    before = group.events()
    process = _in_group(
        group,
        "import os, time\n"
        "made = 0\n"
        "try:\n"
        "    for _ in range(50):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60); os._exit(0)\n"
        "        made += 1\n"
        "except OSError:\n"
        "    pass\n"
        "print(made, flush=True)\n"
        "time.sleep(60)\n",
    )
    made = int(process.stdout.readline())
    assert made < LIMITS.max_processes
    assert group.events().pids_max_hits > before.pids_max_hits
    assert len(group.pids()) == made + 1
    assert group.kill_all(timeout=5)
    assert group.pids() == []
    process.wait(timeout=5)


def test_memory_limit_oom_kill_is_counted(group: cgroups.SessionCgroup) -> None:
    before = group.events()
    process = _in_group(group, "data = bytearray(1024**3)")
    process.wait(timeout=60)
    assert process.returncode == -9
    assert group.events().oom_kills > before.oom_kills


def test_remove_deletes_the_directories(group: cgroups.SessionCgroup) -> None:
    process = _in_group(group, "import time; time.sleep(60)")
    time.sleep(0.2)
    group.remove()
    process.wait(timeout=5)
    assert all(not directory.exists() for directory in group.dirs.values())
    group.remove()  # idempotent


def test_describe_names_what_is_enforced() -> None:
    assert "RLIMIT_AS" in cgroups.describe(cgroups.Enforcement.RLIMITS)
    assert cgroups.describe(cgroups.Enforcement.CGROUP_V1).startswith("cgroup-v1")


@pytest.mark.parametrize("python", [False, True], ids=["sh-prlimit", "python"])
def test_launcher_applies_rlimits_and_reports_a_bad_cgroup(python: bool, tmp_path) -> None:
    argv = launcher_argv(
        ["cat", "/proc/self/limits"],
        rlimits={"RLIMIT_FSIZE": 12345 * 1024, "RLIMIT_CORE": 0},
        python=python,
    )
    limits = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    fsize = next(line for line in limits.splitlines() if line.startswith("Max file size"))
    assert fsize.split()[3:5] == [str(12345 * 1024), str(12345 * 1024)]
    bad = launcher_argv(["true"], procs_files=[tmp_path / "no" / "cgroup.procs"], python=python)
    failed = subprocess.run(bad, capture_output=True, text=True, check=False)
    assert failed.returncode == 125
    assert "smoldataenvs launcher" in failed.stderr
