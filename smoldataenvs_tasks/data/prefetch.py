"""Fill the content cache for a set of tasks before an eval: list each prefix once, download each
needed file once (concurrently), and say what is ready, what is missing and what was skipped.

Tables over `--max-file-mb` are not downloaded; they are recorded in `<cache>/skipped.json`, so a
later eval reports their tasks as ungraded with that reason instead of fetching them on demand
(numbers stay honest). A later prefetch without the cap fetches them and drops the record.

`bytes_downloaded` counts the files this run fetched and accepted (bytes a failed or rejected
download brought count nowhere). A task whose tables the data itself lacks (an invalid row, a row
with no bucket prefix, a file its bucket does not hold) is in `defects`: no retry brings it, and
every run leaves it ungraded. A task whose tables could not be had this time (a listing or a
download failed, a file was rejected) is in `missing`. The command line exits 1 when anything is
`missing` (worth a retry), else 3 when only `defects` are left, else 0.

    smoldataenvs prefetch --split test --tier hard --max-file-mb 500 --jobs 8
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from smoldataenvs_tasks.data.cache import ContentCache, RemoteEntry
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import (
    DataSource,
    FileKey,
    PrefetchSummary,
    ProgressSink,
)
from smoldataenvs_tasks.data.tables import (
    fetch_entry,
    fetch_error,
    format_mb,
    match_files,
    prefix_listing,
    tables_of,
)


class NullProgress:
    # A context manager like RichProgress, so callers need one code path for both.
    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def start_listing(self, prefixes: int) -> None:
        pass

    def prefix_listed(self) -> None:
        pass

    def start_downloads(self, files: int, total_bytes: int) -> None:
        pass

    def add_bytes(self, count: int) -> None:
        pass

    def file_done(self) -> None:
        pass


def prefetch_tasks(
    tasks: Sequence[TaskRecord],
    *,
    source: DataSource,
    jobs: int = 4,
    max_file_bytes: int | None = None,
    refresh: bool = False,
    progress: ProgressSink | None = None,
) -> PrefetchSummary:
    """Make every table of `tasks` available locally; never raises for a table problem."""
    return source.prefetch(
        tasks,
        jobs=jobs,
        max_file_bytes=max_file_bytes,
        refresh=refresh,
        progress=progress or NullProgress(),
    )


def fetch_into_cache(
    tasks: Sequence[TaskRecord],
    *,
    jobs: int,
    max_file_bytes: int | None,
    refresh: bool,
    progress: ProgressSink,
) -> PrefetchSummary:
    """The Hub's prefetch: list each prefix once, then download each needed file once."""
    summary = PrefetchSummary(tasks=len(tasks))
    cache = ContentCache()
    pairs = sorted({(t.hf_bucket, t.bucket_prefix) for t in tasks if t.bucket_prefix})
    summary.prefixes = len(pairs)
    listings: dict[tuple[str, str], list[RemoteEntry] | str] = {}
    progress.start_listing(len(pairs))

    def list_one(pair: tuple[str, str]) -> None:
        bucket, prefix = pair
        try:
            listings[pair] = prefix_listing(cache, bucket, prefix, offline=False, refresh=refresh)
        except Exception as exc:
            listings[pair] = f"cannot list prefix '{prefix}' of bucket '{bucket}': {exc}"
        progress.prefix_listed()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(list_one, pairs))

    # Plan: which distinct files are needed, which tasks already fail, which are over the cap.
    needed: dict[FileKey, RemoteEntry] = {}
    task_files: dict[str, list[FileKey]] = {}
    allowed: set[FileKey] = set()
    for task in tasks:
        if task.invalid_row is not None:
            summary.defects[task.task_id] = f"invalid row: {task.invalid_row}"
            continue
        if not task.bucket_prefix:
            summary.defects[task.task_id] = "the row has no bucket_prefix, so no tables"
            continue
        pair = (task.hf_bucket, task.bucket_prefix)
        listing = listings[pair]
        if isinstance(listing, str):
            summary.missing[task.task_id] = listing
            continue
        by_path = {entry.path: entry for entry in listing}
        found, missing = match_files(task.files, by_path)
        if missing:  # the listing answered: the bucket does not hold them
            summary.defects[task.task_id] = "; ".join(
                f"{name}: not found under prefix '{task.bucket_prefix}'" for name in missing
            )
            continue
        keys: list[FileKey] = []
        over: list[str] = []
        for name, relpath in found.items():
            key = (*pair, relpath)
            entry = by_path[relpath]
            if max_file_bytes is not None and (entry.size or 0) > max_file_bytes:
                summary.skipped_files[key] = entry.size or 0
                over.append(f"{name}: {format_mb(entry.size or 0)}")
                continue
            allowed.add(key)
            keys.append(key)
        if over:
            limit = f"{max_file_bytes / 1_000_000:g}" if max_file_bytes is not None else "?"
            summary.skipped[task.task_id] = f"{', '.join(over)} over --max-file-mb {limit}"
            continue
        task_files[task.task_id] = keys
        for key in keys:
            needed[key] = by_path[key[2]]
    cache.update_skipped(
        {
            key: {"size": size, "limit_bytes": max_file_bytes}
            for key, size in summary.skipped_files.items()
        },
        remove=allowed,
    )

    # Fetch each distinct file once; the cache's locks also make other processes wait for it.
    failed: dict[FileKey, str] = {}
    to_fetch = {
        key: entry for key, entry in needed.items() if cache.lookup(*key[:2], entry) is None
    }
    summary.files = len(needed)
    summary.files_cached = len(needed) - len(to_fetch)
    progress.start_downloads(len(to_fetch), sum(e.size or 0 for e in to_fetch.values()))
    counter_lock = threading.Lock()

    def fetch_one(item: tuple[FileKey, RemoteEntry]) -> None:
        key, entry = item
        arrived = 0  # shown live; taken back from the bar if the file is not accepted

        def count_bytes(count: int) -> None:
            nonlocal arrived
            arrived += count
            progress.add_bytes(count)

        try:
            cached = fetch_entry(cache, key[0], key[1], entry, on_bytes=count_bytes)
            with counter_lock:
                if cached.downloaded:
                    summary.files_downloaded += 1
                    summary.bytes_downloaded += cached.size
                else:  # another process fetched it while we waited for its lock
                    summary.files_cached += 1
        except Exception as exc:
            failed[key] = fetch_error(entry.name, exc)
            progress.add_bytes(-arrived)
        progress.file_done()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(fetch_one, sorted(to_fetch.items())))

    ready_keys: set[FileKey] = set()
    for task_id, keys in task_files.items():
        errors = [failed[key] for key in keys if key in failed]
        if errors:
            summary.missing[task_id] = "; ".join(errors)
        else:
            summary.ready += 1
            ready_keys.update(keys)
    summary.bytes_ready = sum(needed[key].size or 0 for key in ready_keys)
    return summary


def check_in_place(
    tasks: Sequence[TaskRecord], source: DataSource, max_file_bytes: int | None
) -> PrefetchSummary:
    """A mirror or the sample needs no fetching: report what it can serve."""
    summary = PrefetchSummary(tasks=len(tasks))
    seen: set[str] = set()
    summary.prefixes = len({(t.hf_bucket, t.bucket_prefix) for t in tasks if t.bucket_prefix})
    for task in tasks:
        table_set = tables_of(task, lambda: source, max_file_bytes=max_file_bytes)
        if table_set.error is None:
            summary.ready += 1
            for table in table_set.files:
                if str(table.path) not in seen:
                    seen.add(str(table.path))
                    summary.files += 1
                    summary.files_cached += 1
                    summary.bytes_ready += table.size
        elif "over --max-file-mb" in table_set.error:
            summary.skipped[task.task_id] = table_set.error
        else:
            # nothing is fetched from a mirror or the sample: what it lacks, a retry cannot bring
            summary.defects[task.task_id] = table_set.error
    return summary


class RichProgress:
    """Progress on stderr with rich: prefixes listed, then bytes and files downloaded."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("{task.description:<12}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._lock = threading.Lock()
        self._listing: Any = None
        self._download: Any = None
        self._prefixes = (0, 0)
        self._files = (0, 0)
        self._bytes = (0, 0)

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start_listing(self, prefixes: int) -> None:
        self._prefixes = (0, prefixes)
        self._listing = self._progress.add_task(
            "prefixes", total=max(prefixes, 1), detail=f"0/{prefixes} listed"
        )

    def prefix_listed(self) -> None:
        with self._lock:
            done, total = self._prefixes[0] + 1, self._prefixes[1]
            self._prefixes = (done, total)
            self._progress.update(self._listing, completed=done, detail=f"{done}/{total} listed")

    def start_downloads(self, files: int, total_bytes: int) -> None:
        self._files = (0, files)
        self._bytes = (0, total_bytes)
        self._download = self._progress.add_task(
            "downloading", total=max(total_bytes, 1), detail=self._download_detail()
        )

    def _download_detail(self) -> str:
        return (
            f"{format_mb(self._bytes[0])} / {format_mb(self._bytes[1])}, "
            f"{self._files[0]}/{self._files[1]} files"
        )

    def add_bytes(self, count: int) -> None:
        with self._lock:
            self._bytes = (self._bytes[0] + count, self._bytes[1])
            self._progress.update(
                self._download, completed=self._bytes[0], detail=self._download_detail()
            )

    def file_done(self) -> None:
        with self._lock:
            self._files = (self._files[0] + 1, self._files[1])
            self._progress.update(self._download, detail=self._download_detail())
