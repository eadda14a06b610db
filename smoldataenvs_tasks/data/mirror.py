"""Write an air-gapped mirror: splits and their tables in the docs/design.md layout, with a manifest.

    DIR/data/{split}-00000-of-00001.parquet
    DIR/buckets/{hf_bucket}/{bucket_prefix}/{path under the prefix}
    DIR/manifest.json     revision, per-split and per-file size + sha256, what was left out

The manifest is written last, so an interrupted run leaves a directory that no reader accepts.
Re-running into the same DIR adds splits (same revision only) and reuses files already there.
Every entry point then reads it with zero network: `-T mirror=DIR`, `--mirror DIR`, or
`SMOLDATAENVS_MIRROR=DIR`.

    smoldataenvs mirror --split test --split eval ./smoldata-mirror
    smoldataenvs mirror --verify ./smoldata-mirror      # re-reads every file against manifest.json
    SMOLDATAENVS_MIRROR=./smoldata-mirror smoldataenvs prefetch --split test   # checks it
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import SAMPLE_SPLIT, split_parquet_path
from smoldataenvs_tasks.data.cache import utc_now
from smoldataenvs_tasks.data.integrity import (
    TableCorruptError,
    UnsafePathError,
    check_recorded_file,
)
from smoldataenvs_tasks.data.kinds import resolve_source, resolve_tables
from smoldataenvs_tasks.data.layout import (
    MANIFEST,
    FileEntry,
    Manifest,
    SkippedEntry,
    SourceError,
    SplitEntry,
    mirror_key,
    read_manifest,
    split_entry,
    write_manifest,
)
from smoldataenvs_tasks.data.prefetch import ProgressSink, prefetch_tasks
from smoldataenvs_tasks.data.staging import verify_tables
from smoldataenvs_tasks.errors import SmolDataEnvsError


class MirrorDestinationError(SmolDataEnvsError, ValueError):
    """The mirror's folder cannot be made or written: the user's path, said before any copy."""


def writable_folder(root: Path) -> None:
    """Make `root` and prove a file can be written in it (a read-only mount, another user's
    folder, a path under /proc), so a bad destination is one line, not a traceback mid-copy."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise MirrorDestinationError(
            f"cannot write the mirror into {root}: {exc.strerror or exc}"
        ) from exc


@dataclass
class MirrorSummary:
    root: Path
    revision: str | None
    splits: dict[str, int] = field(default_factory=dict)  # split -> tasks
    files: int = 0
    bytes: int = 0
    missing: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def _copy_into(source: Path, target: Path, *, link: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if link:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another filesystem: copy
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_mirror(
    dest: str | os.PathLike[str],
    splits: Sequence[str],
    *,
    revision: str | None = None,
    from_mirror: str | os.PathLike[str] | None = None,
    jobs: int = 4,
    max_file_bytes: int | None = None,
    link: bool = False,
    progress: ProgressSink | None = None,
) -> MirrorSummary:
    """Copy `splits` (rows and every table their tasks use) into `dest`."""
    root = Path(dest).expanduser().absolute()
    if not splits:
        raise ValueError("name at least one split to mirror")
    if SAMPLE_SPLIT in splits and len(set(splits)) > 1:
        raise ValueError("the bundled sample cannot share a mirror with Hub splits")
    sources = {
        split: resolve_source(split, mirror=from_mirror, revision=revision) for split in splits
    }
    for split, source in sources.items():
        if source.reads_from(root):
            raise SourceError(f"cannot mirror {split!r} from {root} into itself")

    existing: Manifest = {}
    if (root / MANIFEST).exists():
        existing = read_manifest(root)
    writable_folder(root)

    manifest_files: dict[str, FileEntry] = dict(existing.get("files") or {})
    skipped_files: dict[str, SkippedEntry] = dict(existing.get("skipped") or {})
    split_info: dict[str, SplitEntry] = dict(existing.get("splits") or {})
    missing_info: dict[str, str] = dict(existing.get("missing") or {})
    summary = MirrorSummary(root=root, revision=None)
    revisions: set[str] = set()

    for split, source in sources.items():
        parquet = source.parquet_path(split)
        split_revision = source.revision_of(parquet)
        if split_revision:
            revisions.add(split_revision)
        tasks = source.load_tasks(split)
        prefetched = prefetch_tasks(
            tasks, source=source, jobs=jobs, max_file_bytes=max_file_bytes, progress=progress
        )
        for (bucket, prefix, relpath), size in prefetched.skipped_files.items():
            skipped_files[mirror_key(bucket, prefix, relpath)] = {
                "size": size,
                "limit_bytes": max_file_bytes,
            }
        summary.skipped.update(prefetched.skipped)
        for task in tasks:
            if task.task_id in prefetched.skipped:
                continue
            # after prefetch everything fetchable is local: no new network traffic here
            table_set = resolve_tables(task, source=source, offline=True)
            if table_set.error is not None:
                missing_info[task.task_id] = table_set.error
                summary.missing[task.task_id] = table_set.error
                continue
            try:
                # the bytes copied are the bytes their record vouches for, and no link's target
                digests = verify_tables(table_set)
            except TableCorruptError as exc:
                missing_info[task.task_id] = summary.missing[task.task_id] = str(exc)
                continue
            missing_info.pop(task.task_id, None)
            for table in table_set.files:
                key = mirror_key(task.hf_bucket, *table.remote_path.split("/", 1))
                target = root / key
                sha256 = digests[table.name]
                recorded = manifest_files.get(key)
                if not (
                    recorded
                    and recorded.get("sha256") == sha256
                    and target.is_file()
                    and target.stat().st_size == table.size
                ):
                    _copy_into(table.path, target, link=link)
                    manifest_files[key] = {"size": table.size, "sha256": sha256}
        target_parquet = root / split_parquet_path(split)
        _copy_into(source.split_file(split), target_parquet, link=False)
        split_info[split] = split_entry(root, split, len(tasks))
        summary.splits[split] = len(tasks)

    if recorded_revision := existing.get("revision"):
        revisions.add(recorded_revision)
    if len(revisions) > 1:
        raise SourceError(
            f"{root} would mix dataset revisions {sorted(revisions)}; use a fresh directory"
        )
    summary.revision = next(iter(revisions), None)
    write_manifest(
        root,
        dataset=next(iter(sources.values())).repo_id,
        revision=summary.revision,
        splits=split_info,
        files=manifest_files,
        skipped=skipped_files,
        missing=missing_info,
        created_at=existing.get("created_at") or utc_now(),
        updated_at=utc_now(),
    )
    summary.files = len(manifest_files)
    summary.bytes = sum(int(info["size"]) for info in manifest_files.values())
    return summary


def verify_mirror(root: str | os.PathLike[str]) -> list[str]:
    """Problems found by re-reading every file a mirror's manifest lists ([] when intact).
    A symbolic link anywhere under `buckets/` or `data/` is a problem too: readers refuse them."""
    base = Path(root)
    manifest = read_manifest(base)
    problems: list[str] = []
    entries: dict[str, Any] = {}
    for split, info in (manifest.get("splits") or {}).items():
        if isinstance(info, dict):
            entries[info.get("path") or split_parquet_path(split)] = info
    entries.update(manifest.get("files") or {})
    for key, info in sorted(entries.items()):
        try:
            problem = check_recorded_file(base, key, info if isinstance(info, dict) else {})
        except UnsafePathError as exc:  # a key that is not a plain relative path
            problem = str(exc)
        if problem is not None:
            problems.append(f"{key}: {problem}")
    for top in ("buckets", "data"):
        for dirpath, dirnames, filenames in os.walk(base / top):
            for name in sorted(dirnames + filenames):
                path = Path(dirpath) / name
                key = path.relative_to(base).as_posix()
                if path.is_symlink() and key not in entries:
                    problems.append(f"{key}: a symbolic link (mirrors hold regular files only)")
    return problems
