"""Make a used sandbox container as good as new, or say why it cannot be.

Two commands through the container's keeper. First the keeper itself kills every process of the
sandbox user, from a child no process of that user can trace (keeper_script.py
`kill_sandbox_user`): the last sample's processes are gone before anything of the reset runs as
their uid. Then `reset_script.py` runs as the sandbox user: it empties every writable place,
restores the user-owned mount points, removes System V IPC objects, and checks all of it (and
again that no process of the user is alive). What it cannot reach, it does not need to: the root
filesystem is read-only, the user has no capabilities and cannot become another user, and a
command's environment is set per exec. A container without a keeper (a remote engine, the
keeper dead or turned off) has no such killer and is never reset. `DockerSession.recycle` calls
this; a container that does not come back clean is removed, never reused.
"""

from __future__ import annotations

from smoldataenvs_tasks.sandboxes.docker.keeper import (
    KILL_SANDBOX_USER,
    KeeperTransport,
    container_script,
)
from smoldataenvs_tasks.sandboxes.docker.transport import Transport, run_to_end

RESET_SCRIPT = container_script("reset_script.py")
# Killing, wiping and checking take ~50 ms; a container still busy after this is not reused.
RESET_TIMEOUT_S = 30.0


async def reset_container(transport: Transport, *, timeout: float = RESET_TIMEOUT_S) -> str | None:
    """None once the container `transport` reaches holds nothing of its last sample; else the
    reason it may not be reused (the caller removes it)."""
    if not isinstance(transport, KeeperTransport) or transport.died:
        return "it has no keeper to kill the last sample's processes from outside their reach"
    try:
        rc, _, err = await run_to_end(transport, [KILL_SANDBOX_USER], timeout=timeout)
    except TimeoutError:
        return f"the kill of the sandbox user's processes did not finish within {timeout:g} s"
    if rc != 0:
        reason = err.decode(errors="replace").strip().splitlines()
        return f"the kill failed (exit {rc}): {reason[-1] if reason else 'no message'}"
    try:
        rc, out, err = await run_to_end(
            transport, ["python3", "-I", "-S", "-c", RESET_SCRIPT], timeout=timeout
        )
    except TimeoutError:
        return f"the reset did not finish within {timeout:g} s"
    if rc == 0 and out == b"clean\n":
        return None
    reason = err.decode(errors="replace").strip().splitlines()
    return f"the reset failed (exit {rc}): {reason[-1] if reason else 'no message'}"
