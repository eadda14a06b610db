"""Disk caps for sandboxes whose writable directories live on the host (bwrap).

Each writable directory of a session is a size-limited tmpfs mounted on the host
(`contract.writable_dir_sizes`), so a program cannot fill the host's disk; its pages are charged to
the memory cgroup of the process that writes them, the sample's, as Docker's `--tmpfs` is.
Mounting needs CAP_SYS_ADMIN in the host's mount namespace (root); elsewhere `mount_tmpfs` says
no once and the session runs without a disk cap, as `smoldataenvs sandbox info` reports.

A session records its owner's pid in `OWNER_FILE`, so the mounts of an eval process that died are
found and unmounted (`reap_stale`; leftovers.py runs it once per process and from the cleanup
commands).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import tempfile
from pathlib import Path

from smoldataenvs_tasks._host import pid_alive

SESSION_PREFIX = "smoldataenvs-bwrap-"
OWNER_FILE = "owner.pid"
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MNT_DETACH = 0x2

_libc: ctypes.CDLL | None = None
_can_mount: bool | None = None  # None: not tried yet


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def can_mount() -> bool:
    """Whether this process could mount a tmpfs the last time it tried (root: yes)."""
    return _can_mount if _can_mount is not None else os.geteuid() == 0


def mount_tmpfs(path: Path, size_bytes: int) -> bool:
    """Mount a tmpfs of `size_bytes` on the existing directory `path`, keeping its owner and
    mode; False (and no later attempts) when this process may not mount."""
    global _can_mount
    if _can_mount is False:
        return False
    info = path.stat()
    options = (
        f"size={size_bytes},mode={info.st_mode & 0o7777:o},uid={info.st_uid},gid={info.st_gid}"
    )
    rc = _c().mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode())
    if rc != 0:
        code = ctypes.get_errno()
        if code in (errno.EPERM, errno.EACCES):
            _can_mount = False
            return False
        raise OSError(code, f"cannot mount a tmpfs on {path}: {os.strerror(code)}")
    _can_mount = True
    return True


_MS_BIND = 0x1000


def bind_mount(source: Path, target: Path) -> None:
    """Bind `source` onto the existing directory `target` in the host's mount namespace (root
    only): how a sandbox running under another uid reaches a directory whose parents that uid
    may not traverse (the cache under /root)."""
    rc = _c().mount(os.fsencode(source), os.fsencode(target), None, _MS_BIND, None)
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot bind {source} onto {target}: {os.strerror(code)}")


def unmount(path: Path) -> None:
    """Detach the mount at `path` (its memory is freed once nothing uses it); no-op if none."""
    with contextlib.suppress(OSError):
        if _c().umount2(os.fsencode(path), _MNT_DETACH) != 0:
            code = ctypes.get_errno()
            if code not in (errno.EINVAL, errno.ENOENT, errno.EPERM):
                raise OSError(code, os.strerror(code), str(path))


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below `root`, deepest first (the order to unmount them in)."""
    prefix = str(root).rstrip("/") + "/"
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == str(root) or point.startswith(prefix):
                found.append(Path(point))
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def unmount_all(root: Path) -> None:
    for point in mounts_under(root):
        unmount(point)


def record_owner(root: Path) -> None:
    (root / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")


def reap_stale(base: Path | None = None) -> list[str]:
    """Unmount and remove the session directories of processes that died (a crashed eval's
    tmpfs mounts would otherwise hold their memory until reboot). Returns what was removed."""
    base = Path(base or tempfile.gettempdir())
    removed = []
    for root in base.glob(f"{SESSION_PREFIX}*"):
        try:
            owner = int((root / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not ours to judge (an older session, or one still being made)
        if pid_alive(owner):
            continue
        unmount_all(root)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(str(root))
    return removed
