"""The content cache of bucket tables, the dataset parquet and per-sample stage dirs.

Layout under the cache root (env `SMOLDATAENVS_CACHE`, default the user cache dir):

    hub/                                   hf_hub_download's cache (the dataset parquet)
    buckets/<owner>/<name>/<prefix>/
        files/<path under the prefix>      complete files only, read-only (0444)
        files/<...>.part (+ .part.json)    an interrupted download, resumed by the next fetch
        manifest.json                      listing of the prefix + size/sha256/fetched_at per file
        .locks/                            one lock per file, one for the manifest
    stage/                                 per-sample dirs of hard links (data/staging.py)
    skipped.json                           tables `prefetch --max-file-mb` left out, and why

A file is fetched under its own file lock (so two processes or threads wanting it make one
download), into `<name>.part`, checked against the listing's size and Xet hash (computed with
hf_xet; SMOLDATAENVS_VERIFY_XET=0 turns that check off), and renamed into place; its sha256 is
recorded in the manifest. A killed download leaves the `.part`, which the next fetch resumes with
a Range request.

Nothing here follows a symbolic link below the cache root (`data/integrity.py`): a link where a
table should be is not a table (`lookup` misses, `fetch` replaces it). `verify` re-reads every
recorded file against its sha256.

    smoldataenvs cache info
    smoldataenvs cache verify
    smoldataenvs cache clear --stage --yes
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock

from smoldataenvs_tasks._host import cache_root, stage_root
from smoldataenvs_tasks.data.integrity import (
    SHA256_HEX,
    UnsafePathError,
    check_recorded_file,
    regular_beneath,
    safe_relpath,
    sha256_file,
)
from smoldataenvs_tasks.errors import SmolDataEnvsError

MB = 1_000_000  # --max-file-mb counts decimal megabytes, like the sizes the Hub shows
_MANIFEST_FORMAT = 1

_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()

# (part path, on_bytes) -> None: appends the rest of the file to `part` (resuming from its size).
Downloader = Callable[[Path, Callable[[int], None] | None], None]


class CacheIntegrityError(SmolDataEnvsError, RuntimeError):
    """Downloaded bytes disagree with the bucket listing (size or hash), twice in a row."""


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write via a temp file in the same directory and rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def xet_hash_file(path: Path) -> str | None:
    """The Xet content hash the bucket listing reports, or None when hf_xet is unavailable
    (or the check is turned off with SMOLDATAENVS_VERIFY_XET=0)."""
    if os.environ.get("SMOLDATAENVS_VERIFY_XET", "1").lower() in ("0", "false", "no", "off"):
        return None
    try:
        import hf_xet
    except ImportError:
        return None
    try:
        return str(hf_xet.hash_files([str(path)])[0].hash)
    except Exception:  # an hf_xet that cannot hash is a missing check, not a failed fetch
        return None


@dataclass(frozen=True)
class RemoteEntry:
    """One file of a prefix's listing; `path` is relative to the prefix."""

    path: str
    size: int | None
    xet_hash: str | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "xet_hash": self.xet_hash}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteEntry:
        return cls(path=data["path"], size=data.get("size"), xet_hash=data.get("xet_hash"))


@dataclass(frozen=True)
class CachedFile:
    path: Path
    relpath: str
    size: int
    sha256: str
    downloaded: bool = False  # True only for the call that actually fetched the bytes


class ContentCache:
    """Files of bucket prefixes keyed by (bucket, prefix, path under the prefix)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_root()).absolute()

    # -- layout ------------------------------------------------------------------------------
    @property
    def hub_dir(self) -> Path:
        return self.root / "hub"

    @property
    def stage_dir(self) -> Path:
        return stage_root(self.root)

    @property
    def buckets_dir(self) -> Path:
        return self.root / "buckets"

    def prefix_dir(self, bucket: str, prefix: str) -> Path:
        owner, name = bucket.split("/")
        for part in (owner, name, prefix):
            safe_relpath(part)  # a single plain component each
        return self.buckets_dir / owner / name / prefix

    def file_path(self, bucket: str, prefix: str, relpath: str) -> Path:
        return self.prefix_dir(bucket, prefix) / "files" / safe_relpath(relpath)

    def manifest_path(self, bucket: str, prefix: str) -> Path:
        return self.prefix_dir(bucket, prefix) / "manifest.json"

    # -- locks -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _lock(self, bucket: str, prefix: str, key: str) -> Iterator[None]:
        lock_dir = self.prefix_dir(bucket, prefix) / ".locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        path = str(lock_dir / f"{hashlib.sha1(key.encode()).hexdigest()[:24]}.lock")
        # flock excludes other processes and other open descriptions in this one; the thread
        # lock in front just keeps this process's threads from polling the file lock.
        with _THREAD_LOCKS_GUARD:
            thread_lock = _THREAD_LOCKS.setdefault(path, threading.Lock())
        with thread_lock, filelock.FileLock(path):
            yield

    def prefix_lock(self, bucket: str, prefix: str) -> contextlib.AbstractContextManager[None]:
        """Held while listing a prefix, so concurrent resolvers list it once."""
        return self._lock(bucket, prefix, "\0listing")

    # -- manifest ----------------------------------------------------------------------------
    def load_manifest(self, bucket: str, prefix: str) -> dict[str, Any] | None:
        path = self.manifest_path(bucket, prefix)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # a damaged manifest is rebuilt, never trusted
        if not isinstance(data, dict) or data.get("format") != _MANIFEST_FORMAT:
            return None
        return data

    def _update_manifest(self, bucket: str, prefix: str, change: Callable[[dict], None]) -> None:
        with self._lock(bucket, prefix, "\0manifest"):
            data = self.load_manifest(bucket, prefix) or {
                "format": _MANIFEST_FORMAT,
                "bucket": bucket,
                "prefix": prefix,
                "listed_at": None,
                "listing": None,
                "files": {},
            }
            change(data)
            atomic_write_json(self.manifest_path(bucket, prefix), data)

    def cached_listing(self, bucket: str, prefix: str) -> list[RemoteEntry] | None:
        data = self.load_manifest(bucket, prefix)
        if not data or data.get("listing") is None:
            return None
        return [RemoteEntry.from_json(item) for item in data["listing"]]

    def store_listing(self, bucket: str, prefix: str, entries: list[RemoteEntry]) -> None:
        def change(data: dict) -> None:
            data["listing"] = [entry.to_json() for entry in entries]
            data["listed_at"] = utc_now()

        self._update_manifest(bucket, prefix, change)

    def _record_file(self, bucket: str, prefix: str, entry: RemoteEntry, sha256: str) -> None:
        size = self.file_path(bucket, prefix, entry.path).stat().st_size

        def change(data: dict) -> None:
            data["files"][entry.path] = {
                "size": size,
                "sha256": sha256,
                "xet_hash": entry.xet_hash,
                "fetched_at": utc_now(),
            }

        self._update_manifest(bucket, prefix, change)

    # -- lookups and fetches -----------------------------------------------------------------
    def lookup(self, bucket: str, prefix: str, entry: RemoteEntry) -> CachedFile | None:
        """The cached file for `entry` if present and consistent with it; no network, no hashing
        unless the manifest lost track of a file that is on disk."""
        path = self.file_path(bucket, prefix, entry.path)
        try:
            info = regular_beneath(self.prefix_dir(bucket, prefix) / "files", entry.path)
        except UnsafePathError:
            return None  # a link or a special file is no table: fetch replaces it
        if info is None:
            return None
        size = info.st_size
        if entry.size is not None and size != entry.size:
            return None
        recorded = ((self.load_manifest(bucket, prefix) or {}).get("files") or {}).get(entry.path)
        if recorded is None or recorded.get("size") != size:
            return None
        if entry.xet_hash and recorded.get("xet_hash") not in (None, entry.xet_hash):
            return None  # the bucket changed since this copy was fetched
        return CachedFile(path=path, relpath=entry.path, size=size, sha256=recorded["sha256"])

    def fetch(
        self,
        bucket: str,
        prefix: str,
        entry: RemoteEntry,
        download: Downloader,
        *,
        on_bytes: Callable[[int], None] | None = None,
    ) -> CachedFile:
        """Return the cached file, downloading it first if needed (once, whoever asks)."""
        hit = self.lookup(bucket, prefix, entry)
        if hit is not None:
            return hit
        with self._lock(bucket, prefix, entry.path):
            hit = self.lookup(bucket, prefix, entry)  # another process may have just finished
            if hit is not None:
                return hit
            final = self.file_path(bucket, prefix, entry.path)
            self._make_parents(bucket, prefix, entry.path)
            if final.is_symlink() or (final.exists() and not final.is_file()):
                final.unlink()  # never read or hash through a link planted in the cache
            if final.exists():
                adopted = self._adopt_unrecorded(bucket, prefix, entry, final)
                if adopted is not None:
                    return adopted
            part = final.with_name(final.name + ".part")
            part_meta = final.with_name(final.name + ".part.json")
            identity = {"size": entry.size, "xet_hash": entry.xet_hash}
            if part.exists() and _read_json(part_meta) != identity:
                part.unlink()  # bytes of another version of the file: cannot be resumed
            atomic_write_json(part_meta, identity)
            for attempt in (1, 2):
                download(part, on_bytes)
                problem = _verify(part, entry)
                if problem is None:
                    sha256 = sha256_file(part)
                    os.chmod(part, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
                    os.replace(part, final)
                    part_meta.unlink(missing_ok=True)
                    self._record_file(bucket, prefix, entry, sha256)
                    return CachedFile(final, entry.path, final.stat().st_size, sha256, True)
                part.unlink(missing_ok=True)  # never resume from bytes known to be wrong
                if attempt == 2:
                    part_meta.unlink(missing_ok=True)
                    raise CacheIntegrityError(f"{problem} (twice; the bytes were discarded)")
        raise AssertionError("unreachable")

    def _make_parents(self, bucket: str, prefix: str, relpath: str) -> None:
        """The directories of `relpath` under the prefix's files dir, none of them a link."""
        current = self.prefix_dir(bucket, prefix) / "files"
        current.mkdir(parents=True, exist_ok=True)
        for part in safe_relpath(relpath).parts[:-1]:
            current = current / part
            if current.is_symlink() or (current.exists() and not current.is_dir()):
                current.unlink()
            current.mkdir(exist_ok=True)

    def _adopt_unrecorded(
        self, bucket: str, prefix: str, entry: RemoteEntry, final: Path
    ) -> CachedFile | None:
        """A complete file on disk the manifest does not vouch for (manifest lost or stale)."""
        if _verify(final, entry) is not None:
            return None
        sha256 = sha256_file(final)
        self._record_file(bucket, prefix, entry, sha256)
        return CachedFile(final, entry.path, final.stat().st_size, sha256)

    # -- verification (smoldataenvs cache verify) --------------------------------------------
    def verify(self, *, delete: bool = False) -> tuple[int, list[str]]:
        """Re-read every recorded table (and every dataset file the Hub cache names by its
        sha256) and compare it with its record: (files checked, problems). With `delete`, a bad
        table and its record are removed, so the next fetch downloads it again."""
        checked = 0
        problems: list[str] = []
        for manifest_path in sorted(self.buckets_dir.glob("*/*/*/manifest.json")):
            prefix_dir = manifest_path.parent
            owner, name, prefix = prefix_dir.relative_to(self.buckets_dir).parts
            bucket = f"{owner}/{name}"
            recorded = (self.load_manifest(bucket, prefix) or {}).get("files") or {}
            bad: list[str] = []
            for relpath, info in sorted(recorded.items()):
                checked += 1
                problem = check_recorded_file(prefix_dir / "files", relpath, info)
                if problem is not None:
                    problems.append(f"{bucket}/{prefix}/{relpath}: {problem}")
                    bad.append(relpath)
            if delete and bad:
                self._forget(bucket, prefix, bad)
        for blob in sorted(self.hub_dir.glob("*/blobs/*")):
            if not SHA256_HEX.fullmatch(blob.name):
                continue  # small files are named by their git hash, not their sha256
            checked += 1
            try:
                actual = sha256_file(blob) if not blob.is_symlink() else None
            except OSError as exc:
                actual, problem = None, f"unreadable ({exc.strerror or exc})"
            else:
                problem = "a symbolic link" if actual is None else None
            if actual is not None and actual != blob.name:
                problem = "sha256 differs from its name (the Hub's hash of the file)"
            if problem is not None:
                problems.append(f"{blob.relative_to(self.root)}: {problem}")
                if delete:
                    blob.unlink(missing_ok=True)
        return checked, problems

    def _forget(self, bucket: str, prefix: str, relpaths: list[str]) -> None:
        files_dir = self.prefix_dir(bucket, prefix) / "files"
        for relpath in relpaths:
            with self._lock(bucket, prefix, relpath):
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    (files_dir / safe_relpath(relpath)).unlink()

        def change(data: dict) -> None:
            for relpath in relpaths:
                data["files"].pop(relpath, None)

        self._update_manifest(bucket, prefix, change)

    # -- skipped tables (prefetch --max-file-mb) ---------------------------------------------
    @property
    def skipped_path(self) -> Path:
        return self.root / "skipped.json"

    @staticmethod
    def _skip_key(bucket: str, prefix: str, relpath: str) -> str:
        return f"{bucket}/{prefix}/{relpath}"

    def skipped(self, bucket: str, prefix: str, relpath: str) -> dict[str, Any] | None:
        data = _read_json(self.skipped_path) or {}
        return (data.get("tables") or {}).get(self._skip_key(bucket, prefix, relpath))

    def update_skipped(
        self,
        add: dict[tuple[str, str, str], dict[str, Any]],
        remove: set[tuple[str, str, str]] = frozenset(),  # type: ignore[assignment]
    ) -> None:
        if not add and not self.skipped_path.exists():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(self.root / ".skipped.lock")):
            data = _read_json(self.skipped_path) or {"tables": {}}
            tables = data.setdefault("tables", {})
            for key in remove:
                tables.pop(self._skip_key(*key), None)
            for key, value in add.items():
                tables[self._skip_key(*key)] = {**value, "recorded_at": utc_now()}
            atomic_write_json(self.skipped_path, data)

    # -- info / clear ------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        tables = _tree_stats(self.buckets_dir, lambda p: not _is_bookkeeping(p))
        parts = _tree_stats(self.buckets_dir, lambda p: p.name.endswith(".part"))
        prefixes = (
            sum(1 for _ in self.buckets_dir.glob("*/*/*")) if self.buckets_dir.exists() else 0
        )
        hub = _tree_stats(self.hub_dir, lambda p: "blobs" in p.parts)
        stage_dirs = (
            sum(1 for p in self.stage_dir.iterdir() if p.is_dir()) if self.stage_dir.exists() else 0
        )
        skipped = len(((_read_json(self.skipped_path) or {}).get("tables")) or {})
        return {
            "root": str(self.root),
            "prefixes": prefixes,
            "table_files": tables[0],
            "table_bytes": tables[1],
            "partial_files": parts[0],
            "partial_bytes": parts[1],
            "hub_files": hub[0],
            "hub_bytes": hub[1],
            "stage_dirs": stage_dirs,
            "skipped_tables": skipped,
        }

    def clear(
        self, *, tables: bool = True, hub: bool = True, stage: bool = True, skipped: bool = True
    ) -> list[Path]:
        removed: list[Path] = []
        targets = []
        if tables:
            targets.append(self.buckets_dir)
        if hub:
            targets.append(self.hub_dir)
        if stage:
            targets.append(self.stage_dir)
        for target in targets:
            if target.exists():
                shutil.rmtree(target)
                removed.append(target)
        if skipped and self.skipped_path.exists():
            self.skipped_path.unlink()
            removed.append(self.skipped_path)
        return removed


def _verify(path: Path, entry: RemoteEntry) -> str | None:
    size = path.stat().st_size
    if entry.size is not None and size != entry.size:
        return f"size {size} differs from the listing's {entry.size}"
    if entry.xet_hash:
        actual = xet_hash_file(path)
        if actual is not None and actual != entry.xet_hash:
            return f"Xet hash {actual[:12]}… differs from the listing's {entry.xet_hash[:12]}…"
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_bookkeeping(path: Path) -> bool:
    name = path.name
    return (
        name.endswith((".part", ".part.json", ".lock"))
        or name == "manifest.json"
        or ".locks" in path.parts
    )


def _tree_stats(root: Path, keep: Callable[[Path], bool]) -> tuple[int, int]:
    count = total = 0
    if not root.exists():
        return 0, 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            if path.is_symlink() or not keep(path):
                continue
            count += 1
            total += path.stat().st_size
    return count, total
