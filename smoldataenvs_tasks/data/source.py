"""Where rows and tables come from, with the precedence of docs/design.md "Where data comes from".

explicit `mirror` argument > env `SMOLDATAENVS_MIRROR` > the local cache of the pinned Hub revision
(`_pins.DATASET_REVISION`, overridable with `revision=`), filled on first use or by `prefetch`.
Split "sample" always means the bundled mirror inside the package (`smoldataenvs_tasks/sample/`).
Once the parquet of a commit-hash revision is cached, loading makes no network call at all.

A `DataSource` is one class per kind (`HubSource`, `MirrorSource`, `SampleSource`), as Inspect's
sandbox environments are: what differs between the Hub and a directory (where a split's file is,
how a task's tables are had, what prefetch does, what a tables digest reads) is a method of the
source, so no caller asks for its kind. `kind` only names the source in what a run records.

    python -c "from smoldataenvs_tasks.data.source import load_tasks; \
        print(len(load_tasks('sample', tiers='hard')))"
    SMOLDATAENVS_MIRROR=/data/smoldata-mirror python -c "from smoldataenvs_tasks.data.source \
        import DataSource; print(DataSource.resolve('test').describe())"
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict

from smoldataenvs_tasks._pins import (
    DATASET_REPO_ID,
    DATASET_REVISION,
    HUB_SPLITS,
    SAMPLE_SPLIT,
    TIERS,
    split_parquet_path,
)
from smoldataenvs_tasks.data.layout import (
    SourceError,
    prefix_head,
    read_manifest,
    verified_split,
)
from smoldataenvs_tasks.data.rows import (
    InvalidRowWarning,
    TaskRecord,
    UnknownRewardModeWarning,
    record_or_invalid,
)

if TYPE_CHECKING:
    from smoldataenvs_tasks.data.prefetch import PrefetchSummary, ProgressSink
    from smoldataenvs_tasks.data.tables import TableSet

ENV_MIRROR = "SMOLDATAENVS_MIRROR"
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample"
# The bundled sample's tables live under this (made-up) bucket id inside SAMPLE_DIR/buckets/.
SAMPLE_BUCKET = "smoldataenvs/sample-tables"

SourceKind = Literal["hub", "mirror", "sample"]
# What a tables digest hashes: per "<bucket>/<prefix>", each file's size and sha256 (None when
# nothing is known of the prefix).
PrefixManifests = dict[str, dict[str, dict[str, object]] | None]
# Filter tokens that stand for the empty reward mode in a comma-separated string.
_EMPTY_MODE_TOKENS = {'""', "''", "empty", "(empty)"}
# huggingface_hub's snapshot directory names the commit its files came from.
_SNAPSHOT_COMMIT = re.compile(r"/snapshots/([0-9a-f]{40})/")


@dataclass(frozen=True, kw_only=True)
class DataSource(ABC):
    """One place rows and tables are read from: the Hub cache, a mirror dir, or the sample.

    The tables-level methods import their modules when called: tables and prefetch import this
    module, and huggingface_hub (behind tables) stays out of a mirror run's start-up."""

    kind: ClassVar[SourceKind]
    revision: str | None
    repo_id: str = DATASET_REPO_ID

    # -- construction ------------------------------------------------------------------------
    @staticmethod
    def resolve(
        split: str | None = "eval",
        *,
        mirror: str | os.PathLike[str] | None = None,
        revision: str | None = None,
        offline: bool = False,
    ) -> DataSource:
        """Apply the precedence: sample split > `mirror` > $SMOLDATAENVS_MIRROR > Hub cache."""
        if split == SAMPLE_SPLIT:
            return DataSource.sample()
        chosen = mirror if mirror not in (None, "") else os.environ.get(ENV_MIRROR) or None
        if chosen is not None:
            source = DataSource.from_mirror(chosen)
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

    @staticmethod
    def sample() -> SampleSource:
        manifest = read_manifest(SAMPLE_DIR)
        return SampleSource(revision=manifest.get("revision"), root=SAMPLE_DIR)

    @staticmethod
    def from_mirror(directory: str | os.PathLike[str]) -> MirrorSource:
        root = Path(directory).expanduser().absolute()
        if not root.is_dir():
            raise SourceError(f"mirror directory {root} does not exist")
        manifest = read_manifest(root)
        return MirrorSource(
            revision=manifest.get("revision"),
            root=root,
            repo_id=manifest.get("dataset", DATASET_REPO_ID),
        )

    # -- what each kind answers --------------------------------------------------------------
    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def manifest(self) -> dict[str, Any]:
        """The mirror's manifest.json ({} for the Hub source)."""

    @abstractmethod
    def available_splits(self) -> tuple[str, ...]: ...

    @abstractmethod
    def reads_from(self, directory: Path) -> bool:
        """Whether this source reads its files from `directory` (a mirror must not be its own
        source)."""

    @abstractmethod
    def revision_of(self, parquet: Path) -> str | None:
        """The commit the split's parquet (`parquet_path`) came from, as far as it is known."""

    @abstractmethod
    def _split_files(self, split: str) -> tuple[Path, Path]:
        """(`parquet_path`, `split_file`) of the split."""

    @abstractmethod
    def task_tables(
        self,
        task: TaskRecord,
        *,
        offline: bool,
        max_file_bytes: int | None,
        on_bytes: Callable[[int], None] | None,
    ) -> TableSet:
        """The task's tables on this machine (a task with a bucket prefix), or why not."""

    @abstractmethod
    def prefix_manifests(self, pairs: Sequence[tuple[str, str]]) -> PrefixManifests:
        """What is known of each (bucket, prefix)'s files, for `tables_manifest_digest`."""

    @abstractmethod
    def prefetch(
        self,
        tasks: Sequence[TaskRecord],
        *,
        jobs: int,
        max_file_bytes: int | None,
        refresh: bool,
        progress: ProgressSink,
    ) -> PrefetchSummary:
        """Make the tasks' tables available here; never raises for a table problem."""

    # -- rows --------------------------------------------------------------------------------
    def parquet_path(self, split: str) -> Path:
        """The split's parquet on this machine, as the source names it (for the Hub, the entry in
        huggingface_hub's snapshot: a link into its blobs); downloaded first for the Hub, once."""
        return self._split_files(split)[0]

    def split_file(self, split: str) -> Path:
        """The regular file holding the split's rows: the one read and hashed (for the Hub, the
        blob the snapshot entry links to, checked; for a mirror, the verified file itself)."""
        return self._split_files(split)[1]

    def split_sha256(self, split: str) -> str:
        """sha256 of the split's parquet bytes: what a run records and a verifier compares."""
        from smoldataenvs_tasks.data.integrity import content_sha256

        return content_sha256(self.split_file(split))

    def load_tasks(
        self,
        split: str,
        *,
        tiers: str | Sequence[str] | None = None,
        reward_modes: str | Sequence[str] | None = None,
        task_ids: str | Sequence[str] | None = None,
    ) -> list[TaskRecord]:
        path = self.split_file(split)
        stat = path.stat()
        records = _read_records(str(path), stat.st_mtime_ns, stat.st_size, split)
        return filter_tasks(records, tiers=tiers, reward_modes=reward_modes, task_ids=task_ids)


@dataclass(frozen=True, kw_only=True)
class HubSource(DataSource):
    """The pinned revision on the Hub, read through huggingface_hub's cache and ours."""

    kind: ClassVar[SourceKind] = "hub"
    offline: bool = False

    def describe(self) -> str:
        return f"{self.repo_id}@{self.revision} (Hub, cached)"

    def manifest(self) -> dict[str, Any]:
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
        from smoldataenvs_tasks.data import hub
        from smoldataenvs_tasks.data.cache import ContentCache

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
        from smoldataenvs_tasks.data.cache import ContentCache
        from smoldataenvs_tasks.data.tables import resolve_from_hub

        return resolve_from_hub(
            task,
            ContentCache(),
            offline=offline or self.offline,
            max_file_bytes=max_file_bytes,
            on_bytes=on_bytes,
        )

    def prefix_manifests(self, pairs: Sequence[tuple[str, str]]) -> PrefixManifests:
        from smoldataenvs_tasks.data.cache import ContentCache

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
        from smoldataenvs_tasks.data.prefetch import fetch_into_cache

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

    def manifest(self) -> dict[str, Any]:
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
        from smoldataenvs_tasks.data.tables import resolve_in_place

        return resolve_in_place(task, self, max_file_bytes=max_file_bytes)

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
        from smoldataenvs_tasks.data.prefetch import check_in_place

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
    files: Iterable[tuple[str, dict[str, Any]]],
) -> dict[str, dict[str, object]] | None:
    """A prefix's files (path under it, manifest entry) as a tables digest describes them."""
    described = {
        path: {"size": info.get("size"), "sha256": info.get("sha256")}
        for path, info in sorted(files)
    }
    return described or None


@functools.lru_cache(maxsize=16)
def _read_records(path: str, mtime_ns: int, size: int, split: str) -> tuple[TaskRecord, ...]:
    """Every row of the split as a record; a row that fails validation (or shares its task id
    with another row) becomes an invalid record in its place, so it costs only itself."""
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: read_table goes through pyarrow.dataset, whose import pulls in
    # pandas (~0.45 s of every eval's start-up) for the same rows of one file.
    rows = pq.ParquetFile(path).read().to_pylist()
    records: list[TaskRecord] = []
    positions: dict[str, list[int]] = {}
    for position, row in enumerate(rows, start=1):
        record = record_or_invalid(row, position)
        positions.setdefault(record.task_id, []).append(position)
        records.append(record)
    # A task id on several rows: which gold is meant is unknown, so none of them is graded. One
    # invalid record stands for all of them, where the first was (sample ids stay unique).
    kept: list[TaskRecord] = []
    for record in records:
        where = positions[record.task_id]
        if len(where) == 1:
            kept.append(record)
        elif where:
            rows_text = ", ".join(str(p) for p in where)
            problem = (
                f"task {record.task_id!r}: duplicate task_id in split {split!r} "
                f"(rows {rows_text}); none of them is graded"
            )
            kept.append(TaskRecord.invalid(record.task_id, problem, rows[where[0] - 1]))
            where.clear()
    _warn_about(kept, split)
    return tuple(kept)


def _warn_about(records: Sequence[TaskRecord], split: str) -> None:
    """One warning per unknown reward mode and one for all invalid rows, not one per row."""
    unknown: Counter[str] = Counter()
    first_unknown: dict[str, str] = {}
    invalid = [record for record in records if record.invalid_row is not None]
    for record in records:
        if record.invalid_row is None and not record.known_reward_mode:
            unknown[record.reward_mode] += 1
            first_unknown.setdefault(record.reward_mode, record.task_id)
    for mode, count in unknown.items():
        warnings.warn(
            f"{count} task(s) in split {split!r} have unknown reward_mode {mode!r} "
            f"(first: {first_unknown[mode]!r}); the generic grader ladder grades them",
            UnknownRewardModeWarning,
            stacklevel=4,
        )
    if invalid:
        warnings.warn(
            f"{len(invalid)} row(s) of split {split!r} are invalid and will be ungraded "
            f"(invalid_row); first: {invalid[0].invalid_row}",
            InvalidRowWarning,
            stacklevel=4,
        )


def _checked_hub_blob(entry: Path, repo_cache: Path) -> Path:
    """The blob behind a snapshot entry of the Hub cache (`hub_snapshot_blob`'s checks). A blob is
    named by its sha256: one whose bytes no longer match its name was edited after download, and
    its rows are not the dataset's."""
    from smoldataenvs_tasks.data.integrity import (
        SHA256_HEX,
        UnsafePathError,
        content_sha256,
        hub_snapshot_blob,
    )

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


def as_list(value: str | Sequence[str] | None) -> list[str] | None:
    """A filter value from Python or from Inspect's CLI (which collapses ["x"] to "x")."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [item.strip() for item in items]


def _mode_list(reward_modes: str | Sequence[str] | None) -> list[str]:
    if reward_modes is None:
        return []
    if isinstance(reward_modes, str):
        # empty tokens ("numeric,") are noise; the empty mode must be spelled out
        tokens = [m.strip() for m in reward_modes.split(",")]
        return list(dict.fromkeys("" if m in _EMPTY_MODE_TOKENS else m for m in tokens if m))
    return list(dict.fromkeys(str(m).strip() for m in reward_modes))


class Filters(TypedDict):
    """A run's task filters as it records them; each a list of names, or None (unfiltered)."""

    tiers: list[str] | None
    reward_modes: list[str] | None
    task_ids: list[str] | None


def recorded_filters(
    *,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
) -> Filters:
    """The filters as a run records them (reports show them): each a list, or None for none."""
    return {
        "tiers": [t for t in as_list(tiers) or [] if t] or None,
        "reward_modes": _mode_list(reward_modes) or None,
        "task_ids": [t for t in as_list(task_ids) or [] if t] or None,
    }


def filter_tasks(
    records: Sequence[TaskRecord],
    *,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
) -> list[TaskRecord]:
    """Keep records matching every given filter, in the split's order."""
    selected = list(records)
    tier_list = [t for t in as_list(tiers) or [] if t]
    if tier_list:
        unknown = sorted(set(tier_list) - set(TIERS))
        if unknown:
            raise ValueError(f"unknown tier(s) {unknown}: choose from {', '.join(TIERS)}")
        selected = [r for r in selected if r.difficulty_tier in tier_list]
    modes = _mode_list(reward_modes)
    if modes:
        selected = [r for r in selected if r.reward_mode in set(modes)]
    id_list = [t for t in as_list(task_ids) or [] if t]
    if id_list:
        present = {r.task_id for r in records}
        missing = [t for t in id_list if t not in present]
        if missing:
            shown = ", ".join(repr(t) for t in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise ValueError(f"task id(s) not in this split: {shown}{more}")
        wanted = set(id_list)
        selected = [r for r in selected if r.task_id in wanted]
    return selected


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
    source = DataSource.resolve(split, mirror=mirror, revision=revision, offline=offline)
    return source.load_tasks(split, tiers=tiers, reward_modes=reward_modes, task_ids=task_ids)
