"""Containers and volumes of sessions whose harness process died (labels say whose they are).

smoldataenvs sandbox cleanup           # those of dead processes on this host
smoldataenvs sandbox cleanup --all     # every session's, alive or not
"""

from __future__ import annotations

import asyncio
import contextlib
import os

from smoldataenvs_tasks._host import pid_alive
from smoldataenvs_tasks.sandboxes.docker.engine import LABEL_OWNER, LABEL_SESSION, docker_sync

_SWEPT = False


def cleanup_stale(*, all_sessions: bool = False) -> list[str]:
    """Remove session containers and volumes whose creating process on this host is gone
    (all of ours with `all_sessions`). Returns what was removed."""
    removed: list[str] = []
    host = os.uname().nodename
    label_filter = f"label={LABEL_SESSION}"
    kinds = {
        "container": (["ps", "--all", "--filter", label_filter, "--format", "{{.ID}}"],
                      "{{index .Config.Labels \"%s\"}}", ["rm", "--force"]),
        "volume": (["volume", "ls", "--filter", label_filter, "--format", "{{.Name}}"],
                   "{{index .Labels \"%s\"}}", ["volume", "rm", "--force"]),
    }  # fmt: skip
    for kind, (listing, owner_format, remove) in kinds.items():
        for ref in docker_sync(*listing).stdout.split():
            owner = docker_sync(kind, "inspect", "--format", owner_format % LABEL_OWNER, ref)
            owner_host, _, pid = owner.stdout.strip().rpartition(":")
            if owner_host != host and not all_sessions:
                continue  # another machine's session on a shared engine: not ours to judge
            alive = pid.isdigit() and pid_alive(int(pid))
            if (all_sessions or not alive) and docker_sync(*remove, ref).returncode == 0:
                removed.append(f"{kind} {ref}")
    return removed


async def sweep_once() -> None:
    """Once per process, before the first session: containers of killed harness processes would
    otherwise sleep forever."""
    global _SWEPT
    if _SWEPT:
        return
    _SWEPT = True
    with contextlib.suppress(Exception):
        await asyncio.to_thread(cleanup_stale)
