"""Facts about this machine that the data layer and the sandboxes both need: where the package's
cache lives, whether a process is alive, and whether a directory a process made is still in use
(`claim_dir`: the stage dirs, created by the data layer, and the bwrap session dirs, both swept by
`smoldataenvs sandbox cleanup`). Lowest layer: imports nothing of the package."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

ENV_CACHE = "SMOLDATAENVS_CACHE"


def cache_root() -> Path:
    """The cache directory: $SMOLDATAENVS_CACHE, else the user cache dir (tables, stage dirs, the
    bwrap sandbox's Python environment all live under it)."""
    configured = os.environ.get(ENV_CACHE)
    root = Path(configured).expanduser() if configured else default_cache_root()
    return root.absolute()


def stage_root(cache: Path | None = None) -> Path:
    """Where the stage dirs live: `<cache>/stage/` (data/staging.py makes them, the sandboxes'
    cleanup sweeps them)."""
    return (cache or cache_root()) / "stage"


def default_cache_root() -> Path:
    """The cache directory when $SMOLDATAENVS_CACHE is not set."""
    return Path(platformdirs.user_cache_dir("smoldataenvs")).absolute()


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists here (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- directories owned by a live process ------------------------------------------------------
# A claimed directory has a sibling `<name>.owner` naming the host and pid, on which the claiming
# process holds an exclusive flock until `release_dir` or its exit (the kernel drops the lock
# however the process ends). A sweeper that can take that lock knows no process uses the
# directory, where a pid alone could have been reused and could not see an owner in another pid
# namespace. The owner file is a sibling, not inside: a stage dir is mounted into the sandbox
# as it is, and every entry in it becomes an input.

OWNER_SUFFIX = ".owner"
HOST = os.uname().nodename
# A name of the stage dirs made before owner files (`<time>-<host>-p<pid>-<random>`, the host
# with its non-alphanumerics dropped): judged by that pid.
_NAMED_OWNER = re.compile(r"^\d{8}T\d{6}-(?P<host>[A-Za-z0-9]+)-p(?P<pid>\d+)-[0-9a-f]+$")
# This host as a stage dir's name spells it.
HOST_IN_NAMES = re.sub(r"[^A-Za-z0-9]", "", HOST)[:24] or "host"


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# How a claimed directory is removed: a stage dir's plain rmtree, or a bwrap session's (its
# mounts detached first, sandboxes/disk.py).
Remover = Callable[[Path], None]


@dataclass(frozen=True)
class _Claim:
    fd: int  # the descriptor holding the owner lock
    pid: int  # the process that claimed it
    remove: Remover


# claimed directory -> its claim
_claims: dict[Path, _Claim] = {}
_claims_lock = threading.Lock()


def _owner_file(path: Path) -> Path:
    return path.with_name(path.name + OWNER_SUFFIX)


def claim_dir(path: Path, *, mode: int = 0o755, remove: Remover = _remove_tree) -> Path:
    """Create directory `path` (it must not exist), in use by this process until `release_dir`
    or the process's exit, which removes it (with `remove`): a normal run leaves none of its own
    behind, and one that dies leaves it for `sweep_unowned`."""
    path = Path(path)
    owner = _owner_file(path)
    while True:
        fd = os.open(owner, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            with contextlib.suppress(OSError):  # a filesystem without flock: judged by the pid
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(owner))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        # A sweeper took the fresh file for an orphan between our open and our lock: again.
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{HOST} {os.getpid()}\n".encode())
        path.mkdir(mode=mode)
    except BaseException:
        owner.unlink(missing_ok=True)
        os.close(fd)
        raise
    with _claims_lock:
        _claims[path] = _Claim(fd, os.getpid(), remove)
    return path


def release_dir(path: Path) -> None:
    """Remove a directory this process claimed, then its owner file (a sweeper holding neither
    lock nor file cannot take it for an orphan). An unclaimed path is just removed."""
    path = Path(path)
    with _claims_lock:
        claim = _claims.pop(path, None)
    if claim is None:
        _remove_tree(path)
        return
    try:
        claim.remove(path)
    finally:
        if not path.exists():
            _owner_file(path).unlink(missing_ok=True)
        # Else (a mount that would not go) the owner file stays, and with it the directory's
        # record: once this lock is free, `sweep_unowned` tries again.
        os.close(claim.fd)


def _release_all_at_exit() -> None:
    for path, claim in list(_claims.items()):
        if claim.pid != os.getpid():  # a forked child inherits the table, not its claims
            continue
        with contextlib.suppress(OSError):
            release_dir(path)


atexit.register(_release_all_at_exit)


def owner_lock_held(path: Path) -> bool:
    """Whether a live process holds the owner lock of claimed directory `path` (a directory
    without one, or on a filesystem without flock, is not known to be in use)."""
    try:
        fd = os.open(_owner_file(Path(path)), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


@dataclass
class Swept:
    """What `sweep_unowned` removed and kept under one parent."""

    removed: list[Path] = field(default_factory=list)
    # Bytes the removal gave back: files whose last link was in a removed directory (a stage
    # dir's hard links to cached tables free nothing).
    freed_bytes: int = 0
    in_use: int = 0  # kept: a live process owns them (or, another host's, they are too young)


def _freed_bytes(path: Path) -> int:
    total = 0
    for parent, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(parent, name))
                if stat.S_ISREG(info.st_mode) and info.st_nlink == 1:
                    total += info.st_size
    return total


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.lstat().st_mtime
    except OSError:
        return 0.0


def _owner_gone(dated: Path, owner: Path, fd: int, foreign_max_age_s: float) -> bool | None:
    """With the owner lock taken: whether the owner of `dated` (the directory, or for an orphan
    its owner file) is gone (None: the owner file went away meanwhile: not ours to judge now)."""
    try:
        if not os.path.samestat(os.fstat(fd), os.stat(owner)):
            return None
    except FileNotFoundError:
        return None
    host, _, _pid = os.pread(fd, 512, 0).decode(errors="replace").strip().partition(" ")
    if host and host != HOST:
        # Another machine's (a cache on a shared filesystem, whose locks may not reach here):
        # gone only once old.
        return _age_s(dated) > foreign_max_age_s
    return True  # its lock was free: the process that claimed it has ended


def _named_owner_gone(path: Path, foreign_max_age_s: float) -> bool:
    """A directory without an owner file, judged by the pid in its name (older versions'), or by
    age when it names another host or nobody."""
    named = _NAMED_OWNER.match(path.name)
    if named and named.group("host") == HOST_IN_NAMES:
        return not pid_alive(int(named.group("pid")))
    return _age_s(path) > foreign_max_age_s


def sweep_unowned(
    parent: Path,
    *,
    foreign_max_age_s: float,
    prefix: str = "",
    remove: Remover = _remove_tree,
    unclaimed_gone: Callable[[Path], bool] | None = None,
) -> Swept:
    """Remove the directories under `parent` (those named `prefix...`) no live process uses: a
    claimed one whose owner lock is free (any age), an older version's whose named pid on this
    host is gone, and one of another host (or of no known owner) once older than
    `foreign_max_age_s`. `unclaimed_gone` judges a directory without an owner file instead (an
    older version's of another kind). Names starting with a dot are not directories of this kind
    and are left alone."""
    swept = Swept()
    try:
        entries = sorted(Path(parent).glob(f"{prefix}*") if prefix else Path(parent).iterdir())
    except FileNotFoundError:
        return swept
    if unclaimed_gone is None:

        def unclaimed_gone(path: Path) -> bool:
            return _named_owner_gone(path, foreign_max_age_s)

    for path in entries:
        if path.name.startswith(".") or path.name.endswith(OWNER_SUFFIX):
            continue
        if path in _claims or not path.is_dir() or path.is_symlink():
            continue
        owner = _owner_file(path)
        try:
            fd = os.open(owner, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if unclaimed_gone(path):
                _remove_into(path, swept, remove)
            else:
                swept.in_use += 1
            continue
        gone: bool | None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                swept.in_use += 1
                continue
            except OSError:  # no flock here: the pid in its name decides
                gone = _named_owner_gone(path, foreign_max_age_s)
            else:
                gone = _owner_gone(path, owner, fd, foreign_max_age_s)
            if gone is None:
                continue
            if not gone:
                swept.in_use += 1
                continue
            # Holding the lock: the owner file goes last, and only with its directory.
            if _remove_into(path, swept, remove):
                owner.unlink(missing_ok=True)
        finally:
            os.close(fd)
    _remove_orphan_owner_files(Path(parent), foreign_max_age_s, prefix)
    return swept


def _remove_into(path: Path, swept: Swept, remove: Remover) -> bool:
    freed = _freed_bytes(path)
    remove(path)
    if path.exists():
        return False
    swept.removed.append(path)
    swept.freed_bytes += freed
    return True


def _remove_orphan_owner_files(parent: Path, foreign_max_age_s: float, prefix: str) -> None:
    """Owner files without their directory (a process killed between the two steps of a claim
    or a release)."""
    for owner in parent.glob(f"{prefix}*{OWNER_SUFFIX}"):
        path = owner.with_name(owner.name[: -len(OWNER_SUFFIX)])
        if path.exists() or path in _claims:
            continue
        try:
            fd = os.open(owner, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _owner_gone(owner, owner, fd, foreign_max_age_s) and not path.exists():
                owner.unlink(missing_ok=True)
        except OSError:
            continue
        finally:
            os.close(fd)
