"""What a source of rows and tables is: the `DataSource` base, what its methods return
(`TableSet`, `PrefetchSummary`), and the split's rows read and filtered.

A `DataSource` is one class per kind (data/kinds.py: `HubSource`, `MirrorSource`,
`SampleSource`), as Inspect's sandbox environments are: what differs between the Hub and a
directory (where a split's file is, how a task's tables are had, what prefetch does, what a tables
digest reads) is a method of the source, so no caller asks for its kind. `kind` only names the
source in what a run records. Which source a run reads (the precedence of docs/design.md "Where
data comes from") is `kinds.resolve_source`.

The layers inside data/ (pyproject.toml's contract): kinds -> prefetch -> tables -> source. This
module is the bottom of the four, so it names the types the kinds return and imports none of them.

    python -c "from smoldataenvs_tasks.data.kinds import load_tasks; \
        print(len(load_tasks('sample', tiers='hard')))"
"""

from __future__ import annotations

import functools
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypedDict

from smoldataenvs_tasks._pins import DATASET_REPO_ID, TIERS

# Raised by the kinds, and caught by callers as this module's.
from smoldataenvs_tasks.data.layout import Manifest
from smoldataenvs_tasks.data.layout import SourceError as SourceError
from smoldataenvs_tasks.data.rows import (
    InvalidRowWarning,
    TaskRecord,
    UnknownRewardModeWarning,
    record_or_invalid,
)

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
FileKey = tuple[str, str, str]  # (bucket, prefix, path under the prefix)


@dataclass(frozen=True)
class TableFile:
    name: str  # flat base name, as staged into /home/user/input
    path: Path  # the cached or mirror file on this host
    size: int
    sha256: str | None  # what its bytes must hash to (the manifest's); staging checks it
    remote_path: str  # "<prefix>/<path under the prefix>"


@dataclass(frozen=True)
class TableSet:
    task_id: str
    files: tuple[TableFile, ...] = ()
    error: str | None = None
    # The error is about bytes that are there but wrong (ungraded `table_corrupt`), not absent.
    corrupt: bool = False

    @property
    def available(self) -> bool:
        return self.error is None

    def paths(self) -> dict[str, Path]:
        return {table.name: table.path for table in self.files}


class ProgressSink(Protocol):
    def start_listing(self, prefixes: int) -> None: ...
    def prefix_listed(self) -> None: ...
    def start_downloads(self, files: int, total_bytes: int) -> None: ...
    def add_bytes(self, count: int) -> None: ...
    def file_done(self) -> None: ...


@dataclass
class PrefetchSummary:
    tasks: int = 0
    ready: int = 0
    missing: dict[str, str] = field(default_factory=dict)  # task_id -> why they were not had
    defects: dict[str, str] = field(default_factory=dict)  # task_id -> what the data lacks
    skipped: dict[str, str] = field(default_factory=dict)  # task_id -> over --max-file-mb
    prefixes: int = 0
    files: int = 0  # distinct files the ready-or-fetched tasks need
    files_downloaded: int = 0
    files_cached: int = 0  # already in the cache before this run
    bytes_downloaded: int = 0  # size of the files this run downloaded and accepted
    bytes_ready: int = 0  # size of every distinct table now available
    skipped_files: dict[FileKey, int] = field(default_factory=dict)  # -> size

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "ready": self.ready,
            "missing": self.missing,
            "defects": self.defects,
            "skipped": self.skipped,
            "prefixes": self.prefixes,
            "files": self.files,
            "files_downloaded": self.files_downloaded,
            "files_cached": self.files_cached,
            "bytes_downloaded": self.bytes_downloaded,
            "bytes_ready": self.bytes_ready,
        }


@dataclass(frozen=True, kw_only=True)
class DataSource(ABC):
    """One place rows and tables are read from: the Hub cache, a mirror dir, or the sample.

    Its kinds (data/kinds.py) sit above tables and prefetch, whose functions they call; this base
    and what it returns sit below them, so neither needs to import upwards."""

    kind: ClassVar[SourceKind]
    revision: str | None
    repo_id: str = DATASET_REPO_ID

    # -- what each kind answers --------------------------------------------------------------
    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def manifest(self) -> Manifest:
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
