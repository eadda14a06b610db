"""Safe paths and content hashes: what keeps a table's bytes the ones recorded for it.

- `safe_relpath`: a path from a listing or a row is a plain relative path, or UnsafePathError.
- `regular_beneath` / `open_regular`: a file below a mirror or cache root is reached through real
  directories and is itself a regular file; a symbolic link is never followed out of the root.
- `content_sha256` / `fd_sha256`: a file's sha256, computed once per (device, inode, size, mtime)
  in this process (hard links share it, any new version of the file gets a new key), so staging
  can check every sample's tables without re-reading a 500 MB table per sample.
- `hub_snapshot_blob`: the blob a huggingface_hub snapshot entry links to, checked to be a regular
  file in the same repo cache's `blobs/` (the one place a link is followed: the Hub's own layout).
- `check_recorded_file`: what is wrong with a file against its {size, sha256} record (the
  `cache verify` and `mirror --verify` checks).

    python -c "from pathlib import Path; from smoldataenvs_tasks.data.integrity import \
        content_sha256; print(content_sha256(Path('pyproject.toml')))"
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError

_HASH_CHUNK = 4 * 1024 * 1024
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


class UnsafePathError(SmolDataEnvsError, ValueError):
    """A path from a listing or a row that would land outside its cache directory."""


class TableCorruptError(SmolDataEnvsError, RuntimeError):
    """A table whose bytes are not the ones recorded for it (edited, truncated, or a link where
    a regular file belongs): the sample is ungraded `table_corrupt`, never graded on them."""


def safe_relpath(relpath: str) -> PurePosixPath:
    """A relative POSIX path whose every part is a plain name (no '..', no absolute, no NUL)."""
    if not isinstance(relpath, str) or not relpath:
        raise UnsafePathError(f"empty path {relpath!r}")
    if "\\" in relpath or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in relpath):
        raise UnsafePathError(f"path {relpath!r} contains a backslash or control characters")
    path = PurePosixPath(relpath)
    if path.is_absolute() or any(part in ("", ".", "..") for part in relpath.split("/")):
        raise UnsafePathError(f"path {relpath!r} is not a plain relative path")
    return path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# content_sha256's memo: (device, inode, size, mtime_ns) -> sha256. Bounded, per process.
_HASHES: OrderedDict[tuple[int, int, int, int], str] = OrderedDict()
_HASHES_MAX = 65536
_HASHES_GUARD = threading.Lock()
_HASHING: dict[tuple[int, int, int, int], threading.Lock] = {}


def _stat_key(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def open_regular(path: Path) -> int:
    """A read-only descriptor of `path` if it is a regular file, never through a link in its
    last component (UnsafePathError for a link, a FIFO, a device, a directory)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(f"{path} is a symbolic link, not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePathError(f"{path} is not a regular file")
    return fd


def content_sha256(path: Path) -> str:
    """sha256 of a regular file's bytes (never through a link), computed once per (device,
    inode, size, mtime) in this process: hard links share it, a changed file gets a new key."""
    fd = open_regular(path)
    try:
        return fd_sha256(fd)
    finally:
        os.close(fd)


def fd_sha256(fd: int) -> str:
    """content_sha256 of an open regular file (its key taken from the descriptor itself)."""
    key = _stat_key(os.fstat(fd))
    with _HASHES_GUARD:
        known = _HASHES.get(key)
        if known is not None:
            _HASHES.move_to_end(key)
            return known
        busy = _HASHING.setdefault(key, threading.Lock())
    with busy:  # two threads staging one new 500 MB table hash it once
        with _HASHES_GUARD:
            known = _HASHES.get(key)
        if known is not None:
            return known
        try:
            digest = hashlib.sha256()
            offset = 0
            while chunk := os.pread(fd, _HASH_CHUNK, offset):
                digest.update(chunk)
                offset += len(chunk)
            value = digest.hexdigest()
            if _stat_key(os.fstat(fd)) == key and offset == key[2]:  # unchanged while read
                with _HASHES_GUARD:
                    _HASHES[key] = value
                    while len(_HASHES) > _HASHES_MAX:
                        _HASHES.popitem(last=False)
            return value
        finally:
            with _HASHES_GUARD:
                _HASHING.pop(key, None)


def hub_snapshot_blob(entry: Path, repo_cache: Path) -> Path:
    """The regular file behind `entry`, a file of a huggingface_hub snapshot of `repo_cache`.

    huggingface_hub stores every snapshot file as a symbolic link into the repo cache's `blobs/`
    (a copy where the filesystem has no links). That link is followed, and only that one: its
    end must be a regular file directly in the same repo cache's `blobs/`. A link that leads
    anywhere else (another repo's blobs, a mirror, /etc) is refused with UnsafePathError, as
    links are everywhere else.
    """
    snapshots = repo_cache / "snapshots"
    if snapshots not in entry.parents:
        raise UnsafePathError(f"{entry} is not in the snapshots of {repo_cache}")
    info = os.lstat(entry)
    if stat.S_ISREG(info.st_mode):
        return entry
    if not stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(f"{entry} is not a regular file")
    blob = Path(os.path.realpath(entry))
    blobs = Path(os.path.realpath(repo_cache / "blobs"))
    if blob.parent != blobs:
        raise UnsafePathError(
            f"{entry} links to {blob}, outside the Hub cache's blobs ({blobs}): not followed"
        )
    try:
        blob_info = os.lstat(blob)
    except FileNotFoundError:
        raise UnsafePathError(f"{entry} links to {blob}, which does not exist") from None
    if not stat.S_ISREG(blob_info.st_mode):
        raise UnsafePathError(f"{entry} links to {blob}, which is not a regular file")
    return blob


def regular_beneath(base: Path, relpath: str) -> os.stat_result | None:
    """lstat of `base/relpath` when every component below `base` is a real directory and the
    last a regular file; None when something is missing. A symbolic link (or other special
    file) on the way raises UnsafePathError: links are never followed out of a mirror or cache."""
    current = base
    parts = safe_relpath(relpath).parts
    for index, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            raise UnsafePathError(f"{current.parent} is not a directory") from None
        last = index == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePathError(f"{current} is a symbolic link (links are not followed)")
        if last and not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(f"{current} is not a regular file")
        if not last and not stat.S_ISDIR(info.st_mode):
            raise UnsafePathError(f"{current} is not a directory")
    return info


def check_recorded_file(base: Path, relpath: str, info: Mapping[str, Any]) -> str | None:
    """What is wrong with the file recorded as `info` ({size, sha256}) at `base/relpath`."""
    try:
        found = regular_beneath(base, relpath)
    except UnsafePathError as exc:
        return str(exc).replace(str(base / relpath), "it", 1)
    if found is None:
        return "missing"
    if info.get("size") is not None and found.st_size != info["size"]:
        return f"size {found.st_size} differs from the recorded {info['size']}"
    if info.get("sha256"):
        try:
            actual = sha256_file(base / relpath)
        except OSError as exc:
            return f"unreadable ({exc.strerror or exc})"
        if actual != info["sha256"]:
            return "sha256 differs from the recorded one (edited or corrupt)"
    return None
