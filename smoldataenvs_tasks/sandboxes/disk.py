"""A bwrap session's host directory: made and owned under a lock, disk-capped, swept when its
owner is gone.

Each writable directory of a session is a size-limited tmpfs mounted on the host
(`contract.writable_dir_sizes`), so a program cannot fill the host's disk; its pages are charged to
the memory cgroup of the process that writes them, the sample's, as Docker's `--tmpfs` is.
Mounting needs CAP_SYS_ADMIN in the host's mount namespace (root); elsewhere `mount_tmpfs` says
no once and the session runs without a disk cap, as `smoldataenvs sandbox info` reports. These
tmpfs are the session's own and nothing else is ever mounted in its directory: the shared Python
environment and the stage dir reach bwrap as descriptors (`--ro-bind-fd`, bwrap.py), so removing
a session directory by any means (`rm -rf` included) cannot reach anything shared.

A session directory is claimed like a stage dir (`_host.claim_dir`): a sibling
`<dir>.owner` whose flock its process holds while it lives, so a sweep (`reap_stale`;
leftovers.py runs it once per process and from the cleanup commands) removes the directory, and
its mounts, only once that process is gone, and never under a live owner, whatever pid namespace
it runs in or whether its pid was reused. (An older version's directory, with only an
`owner.pid` inside, is still judged by that pid.)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._host import (
    claim_dir,
    owner_lock_held,
    pid_alive,
    release_dir,
    sweep_unowned,
)

SESSION_PREFIX = "smoldataenvs-bwrap-"
# An older version's record of its owner, inside the session directory: judged by its pid.
_LEGACY_OWNER_FILE = "owner.pid"
# A session directory of another host (a shared temporary directory): gone once this old.
_FOREIGN_MAX_AGE_S = 6 * 3600
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


_MS_RDONLY = 0x1
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
# The mount API of Linux 5.12+ (the same numbers on every architecture since 5.2's table).
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE = 0x1
_AT_EMPTY_PATH = 0x1000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def bind_read_only(source: Path, target: Path) -> None:
    """Bind `source` onto the existing directory `target`, read-only, in the host's mount
    namespace (root only): how a sandbox under another uid reaches a directory whose parents
    that uid may not traverse (the cache under /root). Read-only from the moment it is
    attached, so a removal of the directory holding `target` (an `rm -rf` of a leftover
    session) fails on it instead of deleting what every process shares."""
    if not _bind_read_only_atomically(source, target):
        # An older kernel: bind, then make it read-only before anyone is told of it.
        _mount(source, target, _MS_BIND)
        try:
            _mount(None, target, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
        except BaseException:
            unmount(target)
            raise


def _mount(source: Path | None, target: Path, flags: int) -> None:
    rc = _c().mount(os.fsencode(source) if source else None, os.fsencode(target), None, flags, None)
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot bind {source or target} onto {target}: {os.strerror(code)}")


def _bind_read_only_atomically(source: Path, target: Path) -> bool:
    """A detached clone of `source`, made read-only, then attached at `target`; False where
    the kernel has no mount API (then nothing was done)."""
    libc = _c()
    tree = libc.syscall(_SYS_OPEN_TREE, -100, os.fsencode(source), _OPEN_TREE_CLONE | os.O_CLOEXEC)
    if tree < 0:
        code = ctypes.get_errno()
        if code == errno.ENOSYS:
            return False
        raise OSError(code, f"cannot clone the mount of {source}: {os.strerror(code)}")
    try:
        attr = _MountAttr(_MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV, 0, 0, 0)
        rc = libc.syscall(
            _SYS_MOUNT_SETATTR, tree, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)
        )
        if rc != 0:
            code = ctypes.get_errno()
            if code == errno.ENOSYS:
                return False
            raise OSError(code, f"cannot make {source}'s bind read-only: {os.strerror(code)}")
        rc = libc.syscall(
            _SYS_MOVE_MOUNT, tree, b"", -100, os.fsencode(target), _MOVE_MOUNT_F_EMPTY_PATH
        )
        if rc != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"cannot bind {source} onto {target}: {os.strerror(code)}")
    finally:
        os.close(tree)
    return True


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


def new_session_dir(base: Path | None = None) -> Path:
    """A fresh session directory (0700) under `base` (the temporary directory), this process's
    until `remove_session_dir` or its exit."""
    base = Path(base or tempfile.gettempdir())
    return claim_dir(
        base / f"{SESSION_PREFIX}{uuid.uuid4().hex[:16]}", mode=0o700, remove=_remove_session_root
    )


def session_token(root: Path) -> str:
    """What names a session in its other leftovers (its cgroups)."""
    return root.name.removeprefix(SESSION_PREFIX)


def session_in_use(token: str, base: Path | None = None) -> bool:
    """Whether the session `token` names has a live owner: its owner lock is held."""
    base = Path(base or tempfile.gettempdir())
    return owner_lock_held(base / f"{SESSION_PREFIX}{token}")


def remove_session_dir(root: Path) -> None:
    """Detach a session directory's mounts, remove it, then its owner lock."""
    release_dir(root)


def _remove_session_root(root: Path) -> None:
    """Detach the mounts under `root`, then remove it, even where a program left unreadable or
    unwritable directories. A mount that will not go (still busy) keeps the whole directory:
    nothing is ever removed through a mount."""
    unmount_all(root)
    if mounts_under(root):
        return
    _rmtree(root)


def _rmtree(root: Path) -> None:
    def make_writable(function: Any, path: str, _: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, 0o700)
        with contextlib.suppress(OSError):
            function(path)

    if root.exists():
        shutil.rmtree(root, onerror=make_writable)
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)


def _legacy_owner_gone(root: Path) -> bool:
    """An older version's session directory (no owner lock): gone when the pid it recorded is,
    or, with no record left (an `rm -rf` that stopped at its mounts), once old."""
    try:
        owner = int((root / _LEGACY_OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        try:
            return time.time() - root.lstat().st_mtime > _FOREIGN_MAX_AGE_S
        except OSError:
            return False
    return not pid_alive(owner)


def reap_stale(base: Path | None = None) -> list[str]:
    """Unmount and remove the session directories whose owner lock is free (their process has
    ended: a crashed eval's tmpfs mounts would otherwise hold their memory until reboot).
    Returns what was removed."""
    base = Path(base or tempfile.gettempdir())
    swept = sweep_unowned(
        base,
        foreign_max_age_s=_FOREIGN_MAX_AGE_S,
        prefix=SESSION_PREFIX,
        remove=_remove_session_root,
        unclaimed_gone=_legacy_owner_gone,
    )
    return [str(path) for path in swept.removed]
