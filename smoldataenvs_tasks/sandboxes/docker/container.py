"""The shape of a sandbox container: `docker run` flags from the contract's limits, and the host
files holding its cgroup counters (how a command's memory or process limit hit is told apart).

compose.yaml states the same limits for Inspect's docker provider; tests/sandboxes/
test_docker_config.py checks the two agree.
"""

from __future__ import annotations

import os
from pathlib import Path

from smoldataenvs_tasks.contract import INPUT_DIR, SandboxLimits, writable_dir_sizes

NOFILE = 4096


def container_args(limits: SandboxLimits) -> list[str]:
    """The contract's limits as `docker run` flags; compose.yaml states the same values."""
    memory = str(limits.memory_bytes)
    fsize = str(limits.max_file_bytes)
    tmpfs = []
    for path, size in writable_dir_sizes(limits).items():
        owner = "mode=1777" if path == "/tmp" else "uid=1000,gid=1000,mode=0755"
        tmpfs += ["--tmpfs", f"{path}:rw,nosuid,nodev,size={size},{owner}"]
    # The container's cgroup counters (its peak memory, CPU time, OOM kills) are the host's to
    # read (cgroup_file), not a sample's: a reused container would show one sample's counters to
    # the next, and bwrap shows no /sys at all.
    tmpfs += ["--tmpfs", "/sys/fs/cgroup:ro,size=4k"]
    return [
        "--init",
        "--log-driver", "none",  # the keeper prints nothing; exec output never goes to logs
        "--network", "none",
        "--memory", memory,
        "--memory-swap", memory,  # no swap: the limit is the limit
        "--cpus", f"{limits.cpus:g}",
        "--pids-limit", str(limits.max_processes),
        "--ulimit", f"fsize={fsize}:{fsize}",
        "--ulimit", f"nofile={NOFILE}:{NOFILE}",
        "--ulimit", "core=0:0",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--read-only",
        *tmpfs,
        "--workdir", INPUT_DIR,
    ]  # fmt: skip


def cgroup_file(container_id: str, controller: str, name_v1: str, name_v2: str) -> Path | None:
    """The host file holding this container's cgroup counters, when the host can read it."""
    candidates = [
        Path(f"/sys/fs/cgroup/{controller}/docker/{container_id}/{name_v1}"),
        Path(f"/sys/fs/cgroup/docker/{container_id}/{name_v2}"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/{name_v2}"),
    ]
    for path in candidates:
        if path.is_file() and os.access(path, os.R_OK):
            return path
    return None


def read_counter(path: Path | None, key: str) -> int | None:
    if path is None:
        return None
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except (OSError, ValueError):
        return None
    return None


def mount_field(key: str, value: str) -> str:
    """One `--mount` field; docker parses the option as CSV, so a path with a comma is quoted."""
    field = f"{key}={value}"
    if any(c in value for c in ',"\n'):
        return '"' + field.replace('"', '""') + '"'
    return field
