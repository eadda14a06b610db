"""Make a used sandbox container as good as new, or say why it cannot be.

`reset_script.py` runs inside the container as the sandbox user (one command: through the
keeper, else a `docker exec`): it kills every process of that user, empties every writable place,
restores the user-owned mount points and removes System V IPC objects, then checks all of it.
What it cannot reach, it does not need to: the root filesystem is read-only, the user has no
capabilities and cannot become another user, and a command's environment is set per exec. `DockerSession.recycle` calls this; a
container that does not come back clean is removed, never reused.
"""

from __future__ import annotations

from pathlib import Path

from smoldataenvs_tasks.sandboxes.docker.engine import exec_in
from smoldataenvs_tasks.sandboxes.docker.image import SANDBOX_USER

RESET_SCRIPT = (Path(__file__).with_name("reset_script.py")).read_text()
# Killing, wiping and checking take ~50 ms; a container still busy after this is not reused.
RESET_TIMEOUT_S = 30.0


async def reset_container(container_id: str, *, timeout: float = RESET_TIMEOUT_S) -> str | None:
    """None once the container holds nothing of its last sample; else the reason it may not be
    reused (the caller removes it)."""
    try:
        rc, out, err = await exec_in(
            container_id, ["python3", "-I", "-S", "-c", RESET_SCRIPT],
            user=SANDBOX_USER, timeout=timeout,
        )  # fmt: skip
    except TimeoutError:
        return f"the reset did not finish within {timeout:g} s"
    if rc == 0 and out == b"clean\n":
        return None
    reason = err.decode(errors="replace").strip().splitlines()
    return f"the reset failed (exit {rc}): {reason[-1] if reason else 'no message'}"
