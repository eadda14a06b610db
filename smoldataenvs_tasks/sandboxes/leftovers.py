"""What a sandbox session leaves on the host when its eval process dies, and its one sweep.

A session killed with its process (a crash, a SIGKILL, a machine out of memory) cannot clean up
after itself. Each thing it leaves is named after its owner, or beside a lock its owner holds, so
a later process can tell a dead owner's from a live one's and remove it:

- bwrap session directories with their tmpfs and read-only bind mounts (`disk.reap_stale`), each
  beside an owner lock its process holds while it lives, as stage dirs are (below);
- bwrap session cgroups (`cgroups.reap_stale`), named after their owner's pid and their session:
  kept while that session's lock is held, whatever the pid says;
- the empty stage directories a provider makes for a sample that has none
  (`new_empty_stage_dir`, claimed as stage dirs are; an older version's named after its pid);
- stage directories under `<cache>/stage/` (data/staging.py), each beside an owner lock its
  process holds while it lives (`_host.claim_dir`): removed once that lock is free, whatever
  their age, so a running eval's are never touched (another host's, on a shared cache, once
  older than `STAGE_FOREIGN_MAX_AGE_S`).

`sweep_stale()` runs once per process before its first bwrap session, and from
`smoldataenvs sandbox cleanup` (which prints `sweep()`'s counts) and `inspect sandbox cleanup
bwrap`. (Docker containers are swept by `docker.cleanup_stale`, by their labels.)
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from smoldataenvs_tasks._host import (
    Swept,
    claim_dir,
    pid_alive,
    release_dir,
    stage_root,
    sweep_unowned,
)
from smoldataenvs_tasks.sandboxes import cgroups, disk

EMPTY_STAGE_PREFIX = "smoldataenvs-empty-stage-"
_OWNED = re.compile(rf"{EMPTY_STAGE_PREFIX}p(\d+)-")
# An empty stage dir without an owner pid in its name (an older version's) goes once this old.
_UNOWNED_MAX_AGE_S = 6 * 3600
# Another host's stage dirs (a cache on a shared filesystem) go once this old: its locks may
# not reach this host (data/staging.py's DEFAULT_MAX_AGE_S).
STAGE_FOREIGN_MAX_AGE_S = 6 * 3600


def new_empty_stage_dir() -> Path:
    """An empty stage dir for a sample without tables, this process's (an owner lock, as a
    stage dir's) until `remove_empty_stage_dir` or its exit."""
    name = f"{EMPTY_STAGE_PREFIX}{uuid.uuid4().hex[:16]}"
    return claim_dir(Path(tempfile.gettempdir()) / name)


def remove_empty_stage_dir(path: Path) -> None:
    release_dir(path)


def _older_empty_stage_dir_gone(path: Path) -> bool:
    """An older version's empty stage dir (no owner lock): gone when the pid in its name is, or
    once old when it names none."""
    owned = _OWNED.match(path.name)
    if owned:
        return not pid_alive(int(owned.group(1)))
    try:
        return time.time() - path.stat().st_mtime > _UNOWNED_MAX_AGE_S
    except OSError:
        return False


@dataclass
class Sweep:
    """What one sweep removed, by kind."""

    sessions: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    empty_stage_dirs: list[str] = field(default_factory=list)
    stage_root: Path | None = None
    stage_dirs: Swept = field(default_factory=Swept)

    def lines(self) -> list[str]:
        """One line per session, cgroup and empty stage dir removed; one for the stage dirs."""
        lines = [f"bwrap session {path}" for path in self.sessions]
        lines += [f"cgroup {group}" for group in self.cgroups]
        lines += [f"empty stage dir {path}" for path in self.empty_stage_dirs]
        if self.stage_dirs.removed:
            lines.append(
                f"{plural(len(self.stage_dirs.removed), 'stage dir')} under {self.stage_root} "
                f"({size(self.stage_dirs.freed_bytes)} freed)"
            )
        return lines


def sweep(base: Path | None = None, cache: Path | None = None) -> Sweep:
    """Remove what sessions of dead processes left (see the module's list), and the stage dirs
    no live process uses; what was removed, by kind."""
    base = Path(base or tempfile.gettempdir())
    done = Sweep(sessions=disk.reap_stale(base))
    with contextlib.suppress(OSError):
        done.cgroups = [
            str(group)
            for group in cgroups.reap_stale(lambda token: disk.session_in_use(token, base))
        ]
    empty = sweep_unowned(
        base,
        foreign_max_age_s=_UNOWNED_MAX_AGE_S,
        prefix=EMPTY_STAGE_PREFIX,
        unclaimed_gone=_older_empty_stage_dir_gone,
    )
    done.empty_stage_dirs = [str(path) for path in empty.removed]
    done.stage_root = stage_root(cache)
    with contextlib.suppress(OSError):
        done.stage_dirs = sweep_unowned(done.stage_root, foreign_max_age_s=STAGE_FOREIGN_MAX_AGE_S)
    return done


def sweep_stale(*, all_sessions: bool = False, base: Path | None = None) -> list[str]:
    """`sweep`, said in lines (what Inspect's `sandbox cleanup` prints): bwrap's record's
    cleanup. `all_sessions` changes nothing: a live process's session is in use."""
    return sweep(base).lines()


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def size(count: int) -> str:
    value, unit = float(count), "bytes"
    for larger in ("KB", "MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, larger
    return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"


_SWEPT = False


def sweep_once() -> None:
    """Once per process, before its first session."""
    global _SWEPT
    if not _SWEPT:
        _SWEPT = True
        with contextlib.suppress(Exception):
            sweep_stale()
