"""A task's tables on this machine: matched by base name, fetched into the cache, or an error.

`tables_of` (and `kinds.resolve_tables`, which picks the source) never raises for a table that cannot be had: it returns a `TableSet` whose
`error` says why ("returns.csv: not found under prefix 'x'", "orders.csv: 404 from bucket",
"big.csv: 612 MB over --max-file-mb 500"), which scoring turns into an ungraded sample
(`table_unavailable`, or `table_corrupt` when `corrupt` is set: a mirror file that is a link or
disagrees with its manifest), never a 0. Links are never followed out of a mirror or the cache.

File matching (docs/design.md): list `<prefix>/` (only paths under it: `owner__data` never matches
`owner__database`), match each name in `files` by base name, the shallowest path winning a
collision (then the alphabetically first); empty `files` means every file under the prefix, flat
by base name. A mirror or the bundled sample is read in place with zero network.

    python -c "from smoldataenvs_tasks.data.kinds import load_tasks, resolve_tables; \
        print([resolve_tables(t).error for t in load_tasks('sample')])"
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.data import hub
from smoldataenvs_tasks.data.cache import MB, CacheIntegrityError, ContentCache, RemoteEntry
from smoldataenvs_tasks.data.integrity import UnsafePathError, regular_beneath, safe_relpath
from smoldataenvs_tasks.data.layout import Manifest, prefix_head
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import DataSource, TableFile, TableSet
from smoldataenvs_tasks.errors import SmolDataEnvsError

logger = logging.getLogger(__name__)


class ListingUnavailable(SmolDataEnvsError, RuntimeError):
    pass


def format_mb(size: int) -> str:
    return f"{size / MB:.0f} MB" if size >= MB else f"{size / MB:.2f} MB"


def _limit_text(limit_bytes: int) -> str:
    limit_mb = limit_bytes / MB
    return f"{limit_mb:g}"


def match_files(wanted: Sequence[str], relpaths: Iterable[str]) -> tuple[dict[str, str], list[str]]:
    """Map each wanted base name to a path (shallowest first), and list the names not found.

    With nothing wanted, every path is taken, flat by base name.
    """
    by_name: dict[str, str] = {}
    for relpath in sorted(relpaths, key=lambda p: (p.count("/"), p)):
        by_name.setdefault(relpath.rsplit("/", 1)[-1], relpath)
    if not wanted:
        return dict(sorted(by_name.items())), []
    found = {name: by_name[name] for name in wanted if name in by_name}
    missing = [name for name in wanted if name not in by_name]
    return found, missing


def tables_of(
    task: TaskRecord,
    choose: Callable[[], DataSource],
    *,
    offline: bool = False,
    max_file_bytes: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> TableSet:
    """The task's tables as host paths from the source `choose` gives, fetched into the cache if
    needed; or why not. The source is chosen inside, so a source that cannot be had is this
    task's error too (kinds.resolve_tables chooses by the precedence)."""
    if task.invalid_row is not None:
        return TableSet(task.task_id, error=f"invalid row: {task.invalid_row}")
    try:
        source = choose()
        if not task.bucket_prefix:
            return TableSet(task.task_id, error="the row has no bucket_prefix, so no tables")
        return source.task_tables(
            task, offline=offline, max_file_bytes=max_file_bytes, on_bytes=on_bytes
        )
    except Exception as exc:  # one broken task must not end the whole run
        logger.warning("tables of %s: %s", task.task_id, exc, exc_info=True)
        return TableSet(task.task_id, error=f"{type(exc).__name__}: {exc}")


# -- mirror and sample: read in place --------------------------------------------------------
def mirror_entries(root: Path, bucket: str, prefix: str) -> list[str]:
    """Paths under the prefix in a mirror dir, relative to it: regular files, and links (so
    they can be refused by name); links to directories are never descended."""
    base = root / "buckets" / bucket / prefix
    relpaths: list[str] = []
    try:
        if regular_dir_beneath(root, f"buckets/{bucket}/{prefix}") is None:
            return relpaths
    except UnsafePathError:
        return relpaths  # reported by resolve_in_place, which checks the same path
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in filenames:  # os.walk lists links to directories here too
            path = Path(dirpath) / name
            if path.is_symlink() or path.is_file():
                relpaths.append(path.relative_to(base).as_posix())
    return relpaths


def regular_dir_beneath(root: Path, relpath: str) -> bool | None:
    """Whether `root/relpath` is a directory reached through real directories only (None when
    absent; UnsafePathError when a link is on the way)."""
    current = root
    for part in safe_relpath(relpath).parts:
        current = current / part
        if current.is_symlink():
            raise UnsafePathError(f"{current} is a symbolic link (links are not followed)")
        if not current.is_dir():
            return None
    return True


def resolve_in_place(
    task: TaskRecord, root: Path, manifest: Manifest, *, max_file_bytes: int | None
) -> TableSet:
    """A mirror's or the sample's tables of the task, read where they are (`root` and its
    manifest)."""
    recorded = manifest.get("files") or {}
    skipped = manifest.get("skipped") or {}
    bucket, prefix = task.hf_bucket, task.bucket_prefix
    base = root / "buckets" / bucket / prefix
    head = prefix_head(bucket, prefix)
    try:
        regular_dir_beneath(root, f"buckets/{bucket}/{prefix}")
    except UnsafePathError:
        return TableSet(
            task.task_id,
            error=f"prefix '{prefix}' of the mirror is reached through a symbolic link (refused)",
            corrupt=True,
        )
    relpaths = mirror_entries(root, bucket, prefix)
    listed = {key[len(head) :] for key in recorded if key.startswith(head)}
    if listed:
        # the manifest is the mirror's truth: leftovers of an interrupted copy are not tables
        relpaths = [relpath for relpath in relpaths if relpath in listed]
    found, missing = match_files(task.files, relpaths)
    # a table the mirror run left out for its size is reported as such, not as "not found"
    # (the entries are what the file says, so any shape: a bad one is this task's error)
    left_out: dict[str, Mapping[str, Any]] = {
        key.rsplit("/", 1)[-1]: info for key, info in skipped.items() if key.startswith(head)
    }
    errors = [
        f"{_over_limit(name, int(left_out[name]['size']), int(left_out[name]['limit_bytes']))} "
        "(left out of the mirror)"
        if name in left_out
        else f"{name}: not found under prefix '{prefix}'"
        for name in missing
    ]
    corrupt: list[str] = []
    tables: list[TableFile] = []
    for name, relpath in found.items():
        path = base / relpath
        try:
            info_stat = regular_beneath(base, relpath)
        except UnsafePathError:
            corrupt.append(
                f"{name}: a symbolic link or special file in the mirror, not a regular file "
                "(refused: links are never followed out of a mirror)"
            )
            continue
        if info_stat is None:
            errors.append(f"{name}: not found under prefix '{prefix}'")
            continue
        size = info_stat.st_size
        info: Mapping[str, Any] = recorded.get(head + relpath) or {}
        if info.get("size") is not None and info["size"] != size:
            corrupt.append(f"{name}: size {size} differs from the mirror manifest's {info['size']}")
            continue
        if max_file_bytes is not None and size > max_file_bytes:
            errors.append(_over_limit(name, size, max_file_bytes))
            continue
        tables.append(TableFile(name, path, size, info.get("sha256"), f"{prefix}/{relpath}"))
    if corrupt:
        return TableSet(task.task_id, tuple(tables), "; ".join(corrupt + errors), corrupt=True)
    return TableSet(task.task_id, tuple(tables), "; ".join(errors) or None)


def _over_limit(name: str, size: int, limit: int) -> str:
    return f"{name}: {format_mb(size)} over --max-file-mb {_limit_text(limit)}"


# -- the Hub through the content cache --------------------------------------------------------
def prefix_listing(
    cache: ContentCache, bucket: str, prefix: str, *, offline: bool, refresh: bool = False
) -> list[RemoteEntry]:
    """The prefix's listing: from the cache's manifest, else listed once (under a lock)."""
    if not refresh:
        cached = cache.cached_listing(bucket, prefix)
        if cached is not None:
            return cached
    if offline or hub.hub_offline():
        raise ListingUnavailable(
            f"prefix '{prefix}' of bucket '{bucket}' is not in the cache and the Hub is offline; "
            "run `smoldataenvs prefetch` with network first"
        )
    with cache.prefix_lock(bucket, prefix):
        if not refresh:
            cached = cache.cached_listing(bucket, prefix)
            if cached is not None:
                return cached
        entries = hub.list_prefix(bucket, prefix)
        cache.store_listing(bucket, prefix, entries)
        return entries


def fetch_entry(
    cache: ContentCache,
    bucket: str,
    prefix: str,
    entry: RemoteEntry,
    *,
    on_bytes: Callable[[int], None] | None = None,
):
    """Download one listed file into the cache (or find it there).

    Buckets are mutable: when the server serves another size than the cached listing says, the
    prefix is listed again once and the file fetched as the new listing describes it; a second
    mismatch gives up (hub.SizeMismatch, saying the listing was refreshed).
    """

    def fetch(listed: RemoteEntry):
        def download(part: Path, progress: Callable[[int], None] | None) -> None:
            hub.download_bucket_file(
                bucket,
                f"{prefix}/{listed.path}",
                part,
                expected_size=listed.size,
                on_bytes=progress,
            )

        return cache.fetch(bucket, prefix, listed, download, on_bytes=on_bytes)

    try:
        return fetch(entry)
    except hub.SizeMismatch as first:
        logger.info("%s/%s: %s; listing the prefix again", prefix, entry.path, first)
        entries = prefix_listing(cache, bucket, prefix, offline=False, refresh=True)
    fresh = next((e for e in entries if e.path == entry.path), None)
    if fresh is None:
        raise hub.DownloadError("no longer in the bucket (its listing was refreshed)")
    try:
        return fetch(fresh)
    except hub.SizeMismatch as again:
        raise hub.DownloadError(
            f"{again}, also after listing the prefix again: the file is changing or its "
            "listing is wrong; try again later"
        ) from None


def fetch_error(name: str, exc: Exception) -> str:
    """One line naming the table once and what went wrong."""
    if isinstance(exc, hub.DownloadError) and exc.status == 404:
        return f"{name}: 404 from bucket"
    if isinstance(exc, hub.DownloadError) and exc.status is not None:
        return f"{name}: HTTP {exc.status} from bucket ({exc})"
    if isinstance(exc, hub.DownloadError | CacheIntegrityError | hub.HubUnavailable):
        return f"{name}: {exc}"
    return f"{name}: {type(exc).__name__}: {exc}"


def resolve_from_hub(
    task: TaskRecord,
    cache: ContentCache,
    *,
    offline: bool,
    max_file_bytes: int | None,
    on_bytes: Callable[[int], None] | None,
) -> TableSet:
    """The task's tables from the content cache, fetched from its bucket when missing."""
    bucket, prefix = task.hf_bucket, task.bucket_prefix
    offline = offline or hub.hub_offline()
    try:
        entries = prefix_listing(cache, bucket, prefix, offline=offline)
    except (ListingUnavailable, hub.RemoteNotFound, hub.HubUnavailable) as exc:
        return TableSet(task.task_id, error=str(exc))
    except Exception as exc:
        return TableSet(
            task.task_id,
            error=f"cannot list prefix '{prefix}' of bucket '{bucket}': {type(exc).__name__}: {exc}",
        )
    by_path = {entry.path: entry for entry in entries}
    found, missing = match_files(task.files, by_path)
    errors = [f"{name}: not found under prefix '{prefix}'" for name in missing]
    tables: list[TableFile] = []
    for name, relpath in found.items():
        entry = by_path[relpath]
        hit = cache.lookup(bucket, prefix, entry)
        if hit is None:
            skipped = cache.skipped(bucket, prefix, relpath)
            if skipped is not None:
                errors.append(
                    f"{_over_limit(name, int(skipped['size']), int(skipped['limit_bytes']))} "
                    "(skipped by prefetch)"
                )
                continue
            if max_file_bytes is not None and (entry.size or 0) > max_file_bytes:
                errors.append(_over_limit(name, entry.size or 0, max_file_bytes))
                continue
            if offline:
                errors.append(
                    f"{name}: not in the cache and the Hub is offline; "
                    "run `smoldataenvs prefetch` with network first"
                )
                continue
            try:
                hit = fetch_entry(cache, bucket, prefix, entry, on_bytes=on_bytes)
            except Exception as exc:
                logger.warning("fetching %s/%s/%s failed: %s", bucket, prefix, relpath, exc)
                errors.append(fetch_error(name, exc))
                continue
        elif max_file_bytes is not None and hit.size > max_file_bytes:
            errors.append(_over_limit(name, hit.size, max_file_bytes))
            continue
        tables.append(TableFile(name, hit.path, hit.size, hit.sha256, f"{prefix}/{relpath}"))
    return TableSet(task.task_id, tuple(tables), "; ".join(errors) or None)


# -- the manifest digest recorded in logs -----------------------------------------------------
def tables_manifest_digest(tasks: Iterable[TaskRecord], source: DataSource) -> str | None:
    """sha256 over the per-prefix manifests (path, size, sha256) of the prefixes the tasks use.

    Buckets are mutable: two logs with the same digest saw the same bytes. None when nothing is
    known yet about any of the prefixes (not fetched, not mirrored).
    """
    tasks = list(tasks)
    pairs = sorted({(t.hf_bucket, t.bucket_prefix) for t in tasks if t.bucket_prefix})
    if not pairs:
        return None
    described = source.prefix_manifests(pairs)
    if all(value is None for value in described.values()):
        return None
    canonical = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


__all__ = [
    "ListingUnavailable",
    "TableFile",
    "TableSet",
    "UnsafePathError",
    "fetch_entry",
    "match_files",
    "prefix_listing",
    "safe_relpath",
    "tables_manifest_digest",
    "tables_of",
]
