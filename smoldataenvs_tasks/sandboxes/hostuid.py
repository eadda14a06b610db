"""The host uid a bwrap sandbox runs as when the harness is root, and the one a `docker` provider
container's sandbox user runs as (always): never root itself, and never shared by two sandboxes
running at once, of either kind, from any harness process of this host and user
(docs/threat-model.md, invariant 3).

bwrap maps the sandbox user (uid 1000 inside) to the uid that starts it. Started by root, the
sandbox user *was* host root outside its namespaces: a key it added to root's keyring outlived the
eval. So as root each session claims a uid of its own from a range no account uses, and bwrap runs
under it (`setpriv` after joining the session's cgroups). One uid per running session, because
the kernel keeps some limits and objects per host uid (keyrings, inotify instances, pipe buffer
pages, POSIX message queue bytes): two samples sharing one could reach or starve each other.

A claim is an exclusive `flock` on `<lock dir>/<slot>`; the kernel drops it when the claiming
process dies, so a crashed eval frees its uids with no cleanup. Run as another user, the harness
needs none of this: bwrap maps the sandbox user to that (unprivileged) user, as before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

UID_BASE_ENV = "SMOLDATAENVS_SANDBOX_UID_BASE"
# 0x70000000: far above every distribution's system, user and subordinate (/etc/subuid) ranges.
DEFAULT_UID_BASE = 0x70000000
SLOTS = 4096


def uid_base() -> int:
    configured = os.environ.get(UID_BASE_ENV, "").strip()
    if not configured:
        return DEFAULT_UID_BASE
    try:
        base = int(configured, 0)
    except ValueError:
        raise ValueError(f"{UID_BASE_ENV} must be a whole number, not {configured!r}") from None
    if not 1000 < base <= 0xFFFFFFFE - SLOTS:
        raise ValueError(f"{UID_BASE_ENV}={base} is outside 1001..{0xFFFFFFFE - SLOTS}")
    return base


def lock_dir() -> Path:
    """Root-only: /run where it is writable, else the temporary directory."""
    for parent in (Path("/run"), Path(tempfile.gettempdir())):
        directory = parent / "smoldataenvs-sandbox-uids"
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, exist_ok=True)
            if directory.stat().st_uid == os.geteuid():
                return directory
    raise OSError(errno.EACCES, "no directory for the sandbox uid locks")


@dataclass
class HostUid:
    """A claimed host uid (gid the same number); `release()` when the session ends."""

    uid: int
    _fd: int | None = field(default=None, repr=False)

    @property
    def gid(self) -> int:
        return self.uid

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def claim() -> HostUid:
    """The lowest free uid of the range, held until `release()` or this process's end."""
    base, directory = uid_base(), lock_dir()
    for slot in range(SLOTS):
        fd = os.open(directory / str(slot), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        return HostUid(base + slot, fd)
    raise OSError(errno.EAGAIN, f"all {SLOTS} sandbox uids are in use")
