"""The Docker engine, as the sandbox calls it: the CLI for managing containers, and one reading of
its errors. Commands reach a container through a transport (transport.py), not from here.

Every container the package starts carries `LABEL_SESSION` and an owner label (host and pid), so
`cleanup.py` can find the ones a killed harness process left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess

from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable

LABEL_CONTENT = "org.smoldataenvs.content-hash"
LABEL_SESSION = "org.smoldataenvs.session"
LABEL_OWNER = "org.smoldataenvs.owner"
# Docker CLI calls that manage containers (not user commands) must finish within this.
CONTROL_TIMEOUT_S = 120.0


def docker_binary() -> str:
    """Path of the docker CLI, or SandboxUnavailable saying how to get one."""
    found = shutil.which("docker")
    if found is None:
        raise SandboxUnavailable(
            "the docker sandbox needs Docker: the `docker` command was not found. Install Docker "
            "Engine >= 24 with Compose v2 (https://docs.docker.com/engine/install/; on Debian "
            "without a registry, scripts/provision-docker.sh), or use -T sandbox=bwrap."
        )
    return found


def engine_error(stderr: str) -> SandboxUnavailable | None:
    text = stderr.lower()
    if "cannot connect to the docker daemon" in text or "is the docker daemon running" in text:
        return SandboxUnavailable(
            "no Docker engine answers (`docker info` fails): start it (e.g. `sudo systemctl start "
            "docker`, or scripts/provision-docker.sh) or use -T sandbox=bwrap."
        )
    if "permission denied" in text and "docker.sock" in text:
        return SandboxUnavailable(
            "the Docker engine refused this user (permission denied on docker.sock): add the user "
            "to the `docker` group or run as root."
        )
    return None


def docker_sync(*args: str, timeout: float = CONTROL_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        [docker_binary(), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


async def docker(
    *args: str, input: bytes | None = None, timeout: float = CONTROL_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    """Run one docker CLI command (not a sandboxed program) and return (rc, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        docker_binary(),
        *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(input), timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    return proc.returncode if proc.returncode is not None else -1, out, err


def owner_label() -> str:
    """`LABEL_OWNER=<host>:<pid>`: which process on which machine a container or volume is for."""
    return f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"
