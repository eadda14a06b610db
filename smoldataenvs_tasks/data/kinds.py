"""The kinds of `DataSource` and which one a run reads, with the precedence of docs/design.md
"Where data comes from":

explicit `mirror` argument > env `SMOLDATAENVS_MIRROR` > the local cache of the pinned Hub revision
(`_pins.DATASET_REVISION`, overridable with `revision=`), filled on first use or by `prefetch`.
Split "sample" always means the bundled mirror inside the package (`smoldataenvs_tasks/sample/`).
Once the parquet of a commit-hash revision is cached, loading makes no network call at all.

This module is above tables and prefetch (each kind's tables and prefetch are theirs) and the
`DataSource` base below them (data/source.py); pyproject.toml's contract holds that order.

    python -c "from smoldataenvs_tasks.data.kinds import load_tasks; \
        print(len(load_tasks('sample', tiers='hard')))"
    SMOLDATAENVS_MIRROR=/data/smoldata-mirror python -c "from smoldataenvs_tasks.data.kinds \
        import resolve_source; print(resolve_source('test').describe())"
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from smoldataenvs_tasks._pins import (
    DATASET_REPO_ID,
    DATASET_REVISION,
    HUB_SPLITS,
    SAMPLE_SPLIT,
    split_parquet_path,
)
from smoldataenvs_tasks.data import hub
from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.data.integrity import (
    SHA256_HEX,
    UnsafePathError,
    content_sha256,
    hub_snapshot_blob,
)
from smoldataenvs_tasks.data.layout import (
    Manifest,
    SourceError,
    prefix_head,
    read_manifest,
    verified_split,
)
from smoldataenvs_tasks.data.prefetch import check_in_place, fetch_into_cache
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import (
    ENV_MIRROR,
    SAMPLE_BUCKET,
    SAMPLE_DIR,
    DataSource,
    PrefetchSummary,
    PrefixManifests,
    ProgressSink,
    SourceKind,
    TableSet,
)
from smoldataenvs_tasks.data.tables import resolve_from_hub, resolve_in_place, tables_of

# huggingface_hub's snapshot directory names the commit its files came from.
_SNAPSHOT_COMMIT = re.compile(r"/snapshots/([0-9a-f]{40})/")


def resolve_source(
    split: str | None = "eval",
    *,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    offline: bool = False,
) -> DataSource:
    """Apply the precedence: sample split > `mirror` > $SMOLDATAENVS_MIRROR > Hub cache."""
    if split == SAMPLE_SPLIT:
        return sample_source()
    chosen = mirror if mirror not in (None, "") else os.environ.get(ENV_MIRROR) or None
    if chosen is not None:
        source = mirror_source(chosen)
        if revision and source.revision and revision != source.revision:
            raise SourceError(
                f"mirror {source.root} holds revision {source.revision}, "
                f"not the requested {revision}"
            )
        return source
    if split is not None and split not in HUB_SPLITS:
        raise SourceError(
            f"unknown split {split!r}: choose one of {', '.join((*HUB_SPLITS, SAMPLE_SPLIT))}"
        )
    return HubSource(revision=revision or DATASET_REVISION, offline=offline)


def sample_source() -> SampleSource:
    manifest = read_manifest(SAMPLE_DIR)
    return SampleSource(revision=manifest.get("revision"), root=SAMPLE_DIR)


def mirror_source(directory: str | os.PathLike[str]) -> MirrorSource:
    root = Path(directory).expanduser().absolute()
    if not root.is_dir():
        raise SourceError(f"mirror directory {root} does not exist")
    manifest = read_manifest(root)
    return MirrorSource(
        revision=manifest.get("revision"),
        root=root,
        repo_id=manifest.get("dataset", DATASET_REPO_ID),
    )


@dataclass(frozen=True, kw_only=True)
class HubSource(DataSource):
    """The pinned revision on the Hub, read through huggingface_hub's cache and ours."""

    kind: ClassVar[SourceKind] = "hub"
    offline: bool = False

    def describe(self) -> str:
        return f"{self.repo_id}@{self.revision} (Hub, cached)"

    def manifest(self) -> Manifest:
        return {}

    def available_splits(self) -> tuple[str, ...]:
        return HUB_SPLITS

    def reads_from(self, directory: Path) -> bool:
        return False

    def revision_of(self, parquet: Path) -> str | None:
        # a branch revision resolves to one commit, which names the snapshot directory
        match = _SNAPSHOT_COMMIT.search(parquet.as_posix())
        return match.group(1) if match else self.revision

    def _split_files(self, split: str) -> tuple[Path, Path]:
        if split not in HUB_SPLITS:
            raise SourceError(f"unknown split {split!r}: the Hub has {', '.join(HUB_SPLITS)}")
        assert self.revision is not None
        cache_dir = ContentCache().hub_dir
        try:
            path = hub.download_dataset_file(
                split_parquet_path(split),
                revision=self.revision,
                cache_dir=cache_dir,
                repo_id=self.repo_id,
                offline=self.offline,
            )
        except (hub.HubUnavailable, hub.RemoteNotFound) as exc:
            raise SourceError(str(exc)) from exc
        return path, _checked_hub_blob(path, cache_dir / hub.repo_cache_name(self.repo_id))

    def task_tables(
        self,
        task: TaskRecord,
        *,
        offline: bool,
        max_file_bytes: int | None,
        on_bytes: Callable[[int], None] | None,
    ) -> TableSet:
        return resolve_from_hub(
            task,
            ContentCache(),
            offline=offline or self.offline,
            max_file_bytes=max_file_bytes,
            on_bytes=on_bytes,
        )

    def prefix_manifests(self, pairs: Sequence[tuple[str, str]]) -> PrefixManifests:
        cache = ContentCache()
        return {
            f"{bucket}/{prefix}": _sizes_and_hashes(
                ((cache.load_manifest(bucket, prefix) or {}).get("files") or {}).items()
            )
            for bucket, prefix in pairs
        }

    def prefetch(
        self,
        tasks: Sequence[TaskRecord],
        *,
        jobs: int,
        max_file_bytes: int | None,
        refresh: bool,
        progress: ProgressSink,
    ) -> PrefetchSummary:
        return fetch_into_cache(
            tasks, jobs=jobs, max_file_bytes=max_file_bytes, refresh=refresh, progress=progress
        )


@dataclass(frozen=True, kw_only=True)
class MirrorSource(DataSource):
    """A mirror directory (docs/design.md "Mirror layout"), read in place with no network."""

    kind: ClassVar[SourceKind] = "mirror"
    root: Path

    def describe(self) -> str:
        return f"mirror {self.root} ({self.repo_id}@{self.revision})"

    def manifest(self) -> Manifest:
        return read_manifest(self.root)

    def available_splits(self) -> tuple[str, ...]:
        found = sorted(
            path.name.split("-00000-of-00001.parquet")[0]
            for path in (self.root / "data").glob("*-00000-of-00001.parquet")
        )
        return tuple(found)

    def reads_from(self, directory: Path) -> bool:
        return self.root.resolve() == directory.resolve()

    def revision_of(self, parquet: Path) -> str | None:
        return self.revision

    def _split_files(self, split: str) -> tuple[Path, Path]:
        path = self.root / split_parquet_path(split)
        if not path.is_file() and not path.is_symlink():
            have = ", ".join(self.available_splits()) or "none"
            raise SourceError(f"{self.describe()} has no split {split!r} (it has: {have})")
        verified = verified_split(self.root, split, self.manifest())
        return verified, verified

    def task_tables(
        self,
        task: TaskRecord,
        *,
        offline: bool,
        max_file_bytes: int | None,
        on_bytes: Callable[[int], None] | None,
    ) -> TableSet:
        return resolve_in_place(task, self.root, self.manifest(), max_file_bytes=max_file_bytes)

    def prefix_manifests(self, pairs: Sequence[tuple[str, str]]) -> PrefixManifests:
        recorded = self.manifest().get("files") or {}
        described: PrefixManifests = {}
        for bucket, prefix in pairs:
            head = prefix_head(bucket, prefix)
            described[f"{bucket}/{prefix}"] = _sizes_and_hashes(
                (key[len(head) :], info) for key, info in recorded.items() if key.startswith(head)
            )
        return described

    def prefetch(
        self,
        tasks: Sequence[TaskRecord],
        *,
        jobs: int,
        max_file_bytes: int | None,
        refresh: bool,
        progress: ProgressSink,
    ) -> PrefetchSummary:
        return check_in_place(tasks, self, max_file_bytes)


@dataclass(frozen=True, kw_only=True)
class SampleSource(MirrorSource):
    """The bundled sample: a mirror inside the package holding the one split "sample"."""

    kind: ClassVar[SourceKind] = "sample"

    def describe(self) -> str:
        return f"bundled sample ({self.revision})"

    def _split_files(self, split: str) -> tuple[Path, Path]:
        if split != SAMPLE_SPLIT:
            raise SourceError(
                f"the bundled sample holds only split {SAMPLE_SPLIT!r}, not {split!r}"
            )
        return super()._split_files(split)


def _sizes_and_hashes(
    files: Iterable[tuple[str, Mapping[str, Any]]],
) -> dict[str, dict[str, object]] | None:
    """A prefix's files (path under it, manifest entry) as a tables digest describes them."""
    described = {
        path: {"size": info.get("size"), "sha256": info.get("sha256")}
        for path, info in sorted(files)
    }
    return described or None


def _checked_hub_blob(entry: Path, repo_cache: Path) -> Path:
    """The blob behind a snapshot entry of the Hub cache (`hub_snapshot_blob`'s checks). A blob is
    named by its sha256: one whose bytes no longer match its name was edited after download, and
    its rows are not the dataset's."""

    try:
        blob = hub_snapshot_blob(entry, repo_cache)
    except UnsafePathError as exc:
        raise SourceError(f"the cached dataset file is not the Hub's: {exc}") from None
    if SHA256_HEX.fullmatch(blob.name) and content_sha256(blob) != blob.name:
        raise SourceError(
            f"{entry}: the cached dataset file differs from the Hub's (its sha256 is not "
            f"{blob.name[:12]}…); `smoldataenvs cache verify --delete` removes it"
        )
    return blob


def default_source(
    task: TaskRecord | None = None,
    *,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> DataSource:
    """The source a task's tables come from when the caller names none."""
    if (
        task is not None
        and task.hf_bucket == SAMPLE_BUCKET
        and (SAMPLE_DIR / "buckets" / SAMPLE_BUCKET / task.bucket_prefix).is_dir()
    ):
        return sample_source()
    return resolve_source(None, mirror=mirror, revision=revision)


def resolve_tables(
    task: TaskRecord,
    *,
    source: DataSource | None = None,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    offline: bool = False,
    max_file_bytes: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> TableSet:
    """The task's tables as host paths (`tables.tables_of`) from `source`, or from the one the
    precedence picks for it; never raises for a table that cannot be had."""
    return tables_of(
        task,
        lambda: source or default_source(task, mirror=mirror, revision=revision),
        offline=offline,
        max_file_bytes=max_file_bytes,
        on_bytes=on_bytes,
    )


def load_tasks(
    split: str = "eval",
    *,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
    offline: bool = False,
) -> list[TaskRecord]:
    """The split's task records from the source the precedence picks, filtered.

    Filters accept a list or a comma-separated string. In a string, `empty` (or `""`) stands for
    the empty reward mode.
    """
    source = resolve_source(split, mirror=mirror, revision=revision, offline=offline)
    return source.load_tasks(split, tiers=tiers, reward_modes=reward_modes, task_ids=task_ids)
