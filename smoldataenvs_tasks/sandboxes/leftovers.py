"""What a sandbox session leaves on the host when its eval process dies, and its one sweep.

A session killed with its process (a crash, a SIGKILL, a machine out of memory) cannot clean up
after itself. Each thing it leaves is named after its owner's pid, so a later process can tell a
dead owner's from a live one's and remove it:

- bwrap session directories with their tmpfs and bind mounts (`disk.reap_stale`);
- bwrap session cgroups (`cgroups.reap_stale`);
- the empty stage directories a provider makes for a sample that has none
  (`new_empty_stage_dir`, swept here).

`sweep_stale()` runs once per process before its first bwrap session, and from
`smoldataenvs sandbox cleanup` and `inspect sandbox cleanup bwrap`. (Docker containers are swept
by `docker.cleanup_stale`, by their labels.)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from smoldataenvs_tasks._host import pid_alive
from smoldataenvs_tasks.sandboxes import cgroups, disk

EMPTY_STAGE_PREFIX = "smoldataenvs-empty-stage-"
_OWNED = re.compile(rf"{EMPTY_STAGE_PREFIX}p(\d+)-")
# An empty stage dir without an owner pid in its name (an older version's) goes once this old.
_UNOWNED_MAX_AGE_S = 6 * 3600


def new_empty_stage_dir() -> Path:
    """An empty stage dir for a sample without tables, named after this process."""
    return Path(tempfile.mkdtemp(prefix=f"{EMPTY_STAGE_PREFIX}p{os.getpid()}-"))


def _stale_empty_stage_dirs(base: Path) -> list[Path]:
    stale = []
    for path in base.glob(f"{EMPTY_STAGE_PREFIX}*"):
        owned = _OWNED.match(path.name)
        if owned:
            if not pid_alive(int(owned.group(1))):
                stale.append(path)
            continue
        with contextlib.suppress(OSError):
            if time.time() - path.stat().st_mtime > _UNOWNED_MAX_AGE_S:
                stale.append(path)
    return stale


def sweep_stale(base: Path | None = None) -> list[str]:
    """Remove what sessions of dead processes left (see the module's list); what was removed."""
    base = Path(base or tempfile.gettempdir())
    removed = [f"bwrap session {root}" for root in disk.reap_stale(base)]
    with contextlib.suppress(OSError):
        removed += [f"cgroup {group}" for group in cgroups.reap_stale()]
    for path in _stale_empty_stage_dirs(base):
        shutil.rmtree(path, ignore_errors=True)
        removed.append(f"empty stage dir {path}")
    return removed


_SWEPT = False


def sweep_once() -> None:
    """Once per process, before its first session."""
    global _SWEPT
    if not _SWEPT:
        _SWEPT = True
        with contextlib.suppress(Exception):
            sweep_stale()
