"""The shape of a sandbox container: `docker run` flags from the contract's limits, and the host
files holding its cgroup counters (how a command's memory or process limit hit is told apart).

compose.yaml states the same limits for Inspect's docker provider; tests/sandboxes/
test_docker_config.py checks the two agree.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from smoldataenvs_tasks.contract import INPUT_DIR, SandboxLimits, writable_dir_sizes
from smoldataenvs_tasks.sandboxes.docker.engine import docker

NOFILE = 4096


def container_args(limits: SandboxLimits, *, sandbox_uid: int) -> list[str]:
    """The contract's limits as `docker run` flags, the writable directories owned by
    `sandbox_uid` (gid the same); compose.yaml states the same values for uid 1000."""
    memory = str(limits.memory_bytes)
    fsize = str(limits.max_file_bytes)
    tmpfs = []
    for path, size in writable_dir_sizes(limits).items():
        owner = "mode=1777" if path == "/tmp" else f"uid={sandbox_uid},gid={sandbox_uid},mode=0755"
        tmpfs += ["--tmpfs", f"{path}:rw,nosuid,nodev,size={size},{owner}"]
    # The container's cgroup counters (its peak memory, CPU time, OOM kills) are the host's to
    # read (cgroup_file), not a sample's: a reused container would show one sample's counters to
    # the next, and bwrap shows no /sys at all.
    tmpfs += ["--tmpfs", "/sys/fs/cgroup:ro,size=4k"]
    sysctls = [
        arg
        for name, value in ipc_sysctls(limits).items()
        for arg in ("--sysctl", f"{name}={value}")
    ]
    return [
        "--init",
        "--ipc", "private",  # the container's own IPC namespace, so the sysctls below are its own
        *sysctls,
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


def ipc_sysctls(limits: SandboxLimits) -> dict[str, str]:
    """The container's System V IPC limits (its own IPC namespace): memory that no process holds
    stays bounded, so killing the sample's processes always frees the memory limit again.

    A segment of System V shared memory, a message queue or a semaphore set outlives every process
    that made it, and its pages are charged to the container's memory cgroup. Unbounded (the
    kernel's defaults are effectively unlimited), a sample filled the memory with segments nobody
    held; the out-of-memory killer then killed every process in turn, down to the keeper and the
    container's init, and the container died: an ungraded sample instead of the model's 0
    (issue 32). `shm_rmid_forced` destroys a segment as soon as no process is attached to it (or
    its creator exits without attaching it), and the totals are capped: shared memory at 1/16 of
    the memory limit, message queues at 32 x 16 KiB, semaphores at the kernel's old defaults.
    compose.yaml states the same values (tests/sandboxes/test_docker_config.py).
    """
    shm_bytes = limits.memory_bytes // 16
    return {
        "kernel.shm_rmid_forced": "1",
        "kernel.shmmax": str(shm_bytes),
        "kernel.shmall": str(shm_bytes // 4096),  # in pages
        "kernel.msgmni": "32",
        "kernel.sem": "250 32000 32 128",
    }


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


async def died_of_memory(container: str) -> str | None:
    """Why the container `container` (an id or name) stopped, when the engine's own record proves
    its sample did it; None while it runs, once it is gone, or when it stopped with no such record.

    The evidence is Docker's `State.OOMKilled`, which the engine sets when the kernel's
    out-of-memory killer killed any process of the container's memory cgroup: only the sample's
    processes and files (tmpfs, shared memory, a memfd) fill that cgroup (the harness's own
    processes in it hold a few MB), and nothing in a container can write the engine's record. A
    container stopped with no out-of-memory kill on record (the engine restarted, a `docker rm`,
    the host's own out-of-memory killer, which does not set it) is the infrastructure's failure,
    and the caller raises SandboxLost (docs/threat-model.md, invariant 2). Needs the stopped
    container to still exist: DockerSession runs without `--rm` and removes it itself.
    """
    rc, out, _ = await docker(
        "inspect", "--type", "container", "--format", "{{json .State}}", container, timeout=30
    )
    if rc != 0:
        return None
    try:
        state = json.loads(out)
    except ValueError:
        return None
    if not isinstance(state, dict) or state.get("Running") or state.get("OOMKilled") is not True:
        return None
    return (
        f"the sandbox container stopped (exit {state.get('ExitCode')}) after its out-of-memory "
        "killer ran: the sample's processes and files filled its memory"
    )


async def compose_died_of_memory(project: str, service: str) -> str | None:
    """`died_of_memory` for the container of a compose project's service (Inspect's `docker`
    provider, which keeps a stopped sample's containers until the sample's cleanup)."""
    rc, out, _ = await docker(
        "ps", "--all", "--quiet", "--no-trunc",
        "--filter", f"label=com.docker.compose.project={project}",
        "--filter", f"label=com.docker.compose.service={service}",
        timeout=30,
    )  # fmt: skip
    containers = out.decode(errors="replace").split() if rc == 0 else []
    if len(containers) != 1:
        return None
    return await died_of_memory(containers[0])


def mount_field(key: str, value: str) -> str:
    """One `--mount` field; docker parses the option as CSV, so a path with a comma is quoted."""
    field = f"{key}={value}"
    if any(c in value for c in ',"\n'):
        return '"' + field.replace('"', '""') + '"'
    return field


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # The command name (in parentheses) may hold spaces: the fields after its last ")".
    fields = stat.rpartition(")")[2].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def _procs(group: Path) -> set[int]:
    try:
        text = (group / "cgroup.procs").read_text(encoding="utf-8")
    except OSError:
        return set()
    return {int(line) for line in text.split() if line.isdigit()}


def _move(pid: int, group: Path) -> None:
    (group / "cgroup.procs").write_text(str(pid), encoding="utf-8")


def shelter_init(container_id: str, *, wait_s: float = 2.0) -> str | None:
    """Move the container's init and its child (the keeper's root shell, or `sleep`) out of the
    container's memory cgroup, into its parent's; None when done, else why not.

    Those two processes are the container's life: when either dies, the container stops, and a
    sample's wrong answer would become an ungraded sample (docs/threat-model.md, invariant 2).
    Outside the container's memory cgroup, its out-of-memory killer cannot pick them, whatever
    the sample fills the memory with (memory nobody holds, a tiny process holding a memfd); they
    use ~1 MB between them. Lowering their `oom_score_adj` instead needs CAP_SYS_RESOURCE, which
    not every engine has (this CI's host root lacks it). The keeper itself (their grandchild) and
    every command stay inside: a keeper found born outside is moved back before the first
    command (OSError when it cannot be: the container must not be used). Needs the host's cgroup v1 memory hierarchy, writable (the harness as root with a
    local engine); elsewhere the IPC caps (`ipc_sysctls`) still bound what no process holds.
    """
    group = Path(f"/sys/fs/cgroup/memory/docker/{container_id}")
    parent = group.parent
    if not (group / "cgroup.procs").is_file():
        return "no cgroup v1 memory group of the container on this host"
    pids = _procs(group)
    inits = [pid for pid in pids if _parent_pid(pid) not in pids]
    if len(inits) != 1:
        return f"expected one init in {group}, found {sorted(inits)}"
    init = inits[0]
    children = [pid for pid in pids if _parent_pid(pid) == init]
    try:
        for pid in (init, *children):
            _move(pid, parent)
    except OSError as error:
        return f"cannot move the init out of {group}: {error}"
    # The keeper's shell forks the keeper right away; one forked after the move was born in the
    # parent group and goes back, and its commands (forked later) are born inside.
    deadline = time.monotonic() + wait_s
    shells = [pid for pid in children if _comm(pid) == "sh"]
    while shells:
        outside = [pid for pid in _procs(parent) if _parent_pid(pid) in shells]
        for pid in outside:
            # Raises: a keeper left outside would run commands with no memory limit, so the
            # caller removes this container.
            _move(pid, group)
        if outside or any(_parent_pid(pid) in shells for pid in _procs(group)):
            return None
        if time.monotonic() > deadline:
            return "the keeper did not start"
        time.sleep(0.002)
    return None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""
