"""The mirror layout and its manifest: the one reader and the one writer (docs/design.md
"The mirror layout").

    DIR/data/{split}-00000-of-00001.parquet
    DIR/buckets/{hf_bucket}/{bucket_prefix}/{path under the prefix}
    DIR/manifest.json     format, dataset, revision, per-split and per-file size + sha256,
                          what was left out (`skipped`) and which tasks lack tables (`missing`)

`smoldataenvs mirror`, the bundled sample's build script and the benchmarks all write manifests
through `write_manifest`; every reader goes through `read_manifest`.

    python -c "from smoldataenvs_tasks.data.layout import read_manifest; \\
        from smoldataenvs_tasks.data.source import SAMPLE_DIR; \\
        print(read_manifest(SAMPLE_DIR)['revision'])"
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from smoldataenvs_tasks._pins import split_parquet_path
from smoldataenvs_tasks.data.cache import atomic_write_json
from smoldataenvs_tasks.data.integrity import (
    UnsafePathError,
    content_sha256,
    regular_beneath,
    sha256_file,
)
from smoldataenvs_tasks.errors import SmolDataEnvsError

MANIFEST = "manifest.json"
FORMAT = 1


class FileEntry(TypedDict):
    """A file's record in the manifest: what its bytes must be."""

    size: int
    sha256: str


class SplitEntry(FileEntry):
    """A split's parquet: where it is, its bytes, and how many rows (tasks) it holds."""

    path: str
    tasks: int


class SkippedEntry(TypedDict):
    """A table the mirror run left out: its size and the `--max-file-mb` it was over."""

    size: int
    limit_bytes: int | None


class Manifest(TypedDict, total=False):
    """A mirror's manifest.json as `write_manifest` writes it. Read back it is what the file
    says (a mirror is outside data, and older ones lack keys), so readers still `.get` each key
    and check each entry's type; the shape names what they may expect."""

    format: int
    dataset: str
    revision: str | None
    created_at: str
    updated_at: str
    splits: dict[str, SplitEntry]
    files: dict[str, FileEntry]
    skipped: dict[str, SkippedEntry]
    missing: dict[str, str]  # task id -> why its tables are not in the mirror


def source_dataset(hf_bucket: Any, bucket_prefix: Any) -> str | None:
    """`<hf_bucket>/<bucket_prefix>`: the Kaggle dataset a task's tables come from, the cluster
    pass@1's intervals resample (results' clustered bootstrap, the Inspect task's clustered
    stderr) and the contamination view's key; None when the row names no prefix."""
    if not bucket_prefix:
        return None
    return f"{hf_bucket or ''}/{bucket_prefix}"


class SourceError(SmolDataEnvsError, RuntimeError):
    """The requested rows cannot be had from this source (missing split, broken mirror, ...)."""


def mirror_key(bucket: str, prefix: str, relpath: str) -> str:
    """A table's path inside a mirror, relative to its root (the manifest's `files` key)."""
    return f"buckets/{bucket}/{prefix}/{relpath}"


def prefix_head(bucket: str, prefix: str) -> str:
    """What every `mirror_key` of one bucket prefix starts with."""
    return f"buckets/{bucket}/{prefix}/"


def file_entry(path: str | os.PathLike[str], sha256: str | None = None) -> FileEntry:
    """A manifest entry for a file: its size and sha256 (computed when not given)."""
    path = Path(path)
    return {"size": path.stat().st_size, "sha256": sha256 or sha256_file(path)}


def split_entry(root: Path, split: str, tasks: int) -> SplitEntry:
    """A manifest entry for a split's parquet under `root`."""
    relpath = split_parquet_path(split)
    entry = file_entry(root / relpath)
    return {"path": relpath, "size": entry["size"], "sha256": entry["sha256"], "tasks": tasks}


def write_manifest(
    root: str | os.PathLike[str],
    *,
    dataset: str,
    revision: str | None,
    splits: Mapping[str, SplitEntry],
    files: Mapping[str, FileEntry],
    skipped: Mapping[str, SkippedEntry] | None = None,
    missing: Mapping[str, str] | None = None,
    created_at: str | None = None,
    updated_at: str | None = None,
) -> Manifest:
    """Write `root/manifest.json` atomically (last, so an interrupted mirror has none) and
    return it. `created_at`/`updated_at` are written when given (`smoldataenvs mirror` stamps
    them; the bundled sample has none, so its manifest stays byte-identical on a rebuild)."""
    manifest: Manifest = {
        "format": FORMAT,
        "dataset": dataset,
        "revision": revision,
        "splits": dict(splits),
        "files": dict(sorted(files.items())),
        "skipped": dict(sorted((skipped or {}).items())),
        "missing": dict(sorted((missing or {}).items())),
    }
    if created_at is not None:
        manifest["created_at"] = created_at
    if updated_at is not None:
        manifest["updated_at"] = updated_at
    atomic_write_json(Path(root) / MANIFEST, manifest)
    return manifest


def verified_split(root: Path, split: str, manifest: Manifest) -> Path:
    """The split's parquet under `root`, refused (SourceError) when it is not a regular file
    inside the mirror or its bytes differ from the sha256 the manifest records for it: every
    gold answer of the split is in it. Hashed once per file version in this process."""
    relpath = split_parquet_path(split)
    path = root / relpath
    try:
        found = regular_beneath(root, relpath)
    except UnsafePathError as exc:
        raise SourceError(f"{relpath} of the mirror {root} is refused: {exc}") from None
    if found is None:
        raise SourceError(f"{path} does not exist")
    entry: object = (manifest.get("splits") or {}).get(split)
    expected = entry.get("sha256") if isinstance(entry, Mapping) else None
    if expected and content_sha256(path) != expected:
        raise SourceError(
            f"{path}: its sha256 differs from the one manifest.json records (the rows were "
            f"edited or are corrupt); `smoldataenvs mirror --verify {root}` checks every file"
        )
    return path


def read_manifest(root: str | os.PathLike[str]) -> Manifest:
    """The mirror's manifest.json, parsed once per version of the file (callers must not
    mutate it): every sample's table lookup reads it, and a full mirror's is megabytes."""
    path = Path(root) / MANIFEST
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    if info is not None:
        return _parse_manifest(str(path), info.st_mtime_ns, info.st_size, info.st_ino)
    return _parse_manifest(str(path), 0, 0, 0)  # raises the "not a mirror" error


@functools.lru_cache(maxsize=8)
def _parse_manifest(path_text: str, mtime_ns: int, size: int, inode: int) -> Manifest:
    path = Path(path_text)
    root = path.parent
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError(
            f"{root} is not a SmolDataEnvs mirror: it has no {MANIFEST} "
            "(write one with `smoldataenvs mirror --split test DIR`; an interrupted mirror run "
            "leaves none)"
        ) from None
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SourceError(f"{path} is not a JSON object")
    return cast(Manifest, data)  # an object; its keys are checked where read (Manifest)
