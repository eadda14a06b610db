"""`smoldataenvs prefetch`, `smoldataenvs mirror` and `smoldataenvs cache info|verify|clear`.

smoldataenvs prefetch --split test --tier hard --max-file-mb 500 --jobs 8
smoldataenvs mirror --split test --split eval ./smoldata-mirror
smoldataenvs mirror --verify ./smoldata-mirror
smoldataenvs cache info
smoldataenvs cache verify
smoldataenvs cache clear --stage --yes

Exit codes: 0 when everything asked for is there (and intact); 1 when something could not be had
(`prefetch`: a listing or download failed, worth a retry) or is damaged (`--verify`, `cache
verify`); 2 for bad input; 3 (`prefetch`) when everything obtainable is there and the only tasks
without tables are data defects (listed), which every run leaves ungraded: `prefetch; [ $? -ne 1 ]`
or `prefetch || [ $? -eq 3 ]` goes on to the eval.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click

from smoldataenvs_tasks.data.cache import MB, ContentCache
from smoldataenvs_tasks.data.tables import format_mb
from smoldataenvs_tasks.errors import BadInput

# prefetch's exit status when all that is left without tables are the data's own defects.
PREFETCH_ONLY_DEFECTS = 3


def _joined(values: Sequence[str]) -> list[str] | None:
    # --tier hard --tier medium and --tier hard,medium mean the same
    items = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return items or None


def _max_bytes(max_file_mb: float | None) -> int | None:
    return None if max_file_mb is None else int(max_file_mb * MB)


def _print_problems(title: str, problems: dict[str, str], limit: int = 10) -> None:
    if not problems:
        return
    click.echo(f"{title}: {len(problems)} task(s)")
    for task_id, reason in list(sorted(problems.items()))[:limit]:
        click.echo(f"  {task_id}: {reason}")
    if len(problems) > limit:
        click.echo(f"  ... and {len(problems) - limit} more")


@click.command()
@click.option(
    "--split",
    "splits",
    multiple=True,
    default=("eval",),
    show_default=True,
    help="train, test, eval or sample; repeat for several.",
)
@click.option("--tier", "tiers", multiple=True, help="Only these tiers (easy, medium, hard).")
@click.option("--reward-mode", "reward_modes", multiple=True, help="Only these reward modes.")
@click.option("--task-id", "task_ids", multiple=True, help="Only these task ids.")
@click.option(
    "--max-file-mb",
    type=float,
    default=None,
    help="Skip tables larger than this (MB = 10^6 bytes); their tasks are later "
    "reported ungraded with that reason.",
)
@click.option(
    "--mirror",
    type=click.Path(file_okay=False),
    default=None,
    help="Check a mirror directory instead of the Hub cache.",
)
@click.option("--revision", default=None, help="Dataset revision (default: the pinned one).")
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Concurrent listings/downloads.",
)
@click.option("--refresh", is_flag=True, help="List prefixes again (buckets are mutable).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def prefetch(
    splits: tuple[str, ...],
    tiers: tuple[str, ...],
    reward_modes: tuple[str, ...],
    task_ids: tuple[str, ...],
    max_file_mb: float | None,
    mirror: str | None,
    revision: str | None,
    jobs: int,
    refresh: bool,
    as_json: bool,
) -> None:
    """Fill the cache with the tables of a split's tasks (bytes, files, prefixes, summary).

    \b
    Exit status:
      0  every task's tables are in the cache
      1  some could not be had now (a listing or download failed): run it again
      3  everything obtainable is cached; the tasks left are data defects (a row
         naming a table its bucket lacks, an invalid row), listed, and ungraded
         in every run: `smoldataenvs prefetch --split test || [ $? -eq 3 ]`
      2  bad input (an unknown split, a filter that matches nothing)
    """
    from smoldataenvs_tasks.data.kinds import resolve_source
    from smoldataenvs_tasks.data.prefetch import NullProgress, RichProgress, prefetch_tasks
    from smoldataenvs_tasks.data.source import SourceError

    results = {}
    for split in splits:
        try:
            source = resolve_source(split, mirror=mirror, revision=revision)
            records = source.load_tasks(
                split,
                tiers=_joined(tiers),
                reward_modes=_joined(reward_modes),
                task_ids=_joined(task_ids),
            )
        except (SourceError, ValueError) as exc:
            raise BadInput(str(exc)) from exc
        show = not as_json and sys.stderr.isatty()
        progress = RichProgress() if show else NullProgress()
        with progress:
            summary = prefetch_tasks(
                records,
                source=source,
                jobs=jobs,
                max_file_bytes=_max_bytes(max_file_mb),
                refresh=refresh,
                progress=progress,
            )
        results[split] = (source, summary)

    lacking = sum(len(summary.missing) for _, summary in results.values())
    defective = sum(len(summary.defects) for _, summary in results.values())
    if as_json:
        click.echo(
            json.dumps(
                {
                    split: {"source": source.describe(), **summary.to_dict()}
                    for split, (source, summary) in results.items()
                },
                indent=1,
            )
        )
        if lacking:
            sys.exit(1)
        if defective:
            sys.exit(PREFETCH_ONLY_DEFECTS)
        return
    for split, (source, summary) in results.items():
        click.echo(f"split {split} from {source.describe()}")
        click.echo(f"tasks ready: {summary.ready} of {summary.tasks}")
        _print_problems("tables missing (a retry may bring them)", summary.missing)
        _print_problems("data defects (no tables to fetch: ungraded in every run)", summary.defects)
        _print_problems(
            f"skipped by --max-file-mb {max_file_mb:g}" if max_file_mb else "skipped",
            summary.skipped,
        )
        click.echo(
            f"files: {summary.files} needed, {summary.files_downloaded} downloaded "
            f"({format_mb(summary.bytes_downloaded)}), {summary.files_cached} already there; "
            f"{format_mb(summary.bytes_ready)} ready across {summary.prefixes} prefixes"
        )
    click.echo(f"cache: {ContentCache().root}")
    if lacking:
        # scripts must not go on to an eval that would leave these tasks ungraded
        click.echo(f"{lacking} task(s) lack tables (listed above): run it again", err=True)
        sys.exit(1)
    if defective:
        click.echo(
            f"{defective} task(s) have no tables in the data (listed above): they are "
            f"ungraded in every run; everything else is cached (exit {PREFETCH_ONLY_DEFECTS})",
            err=True,
        )
        sys.exit(PREFETCH_ONLY_DEFECTS)


@click.command()
@click.option(
    "--split",
    "splits",
    multiple=True,
    help="train, test, eval (or sample alone); repeat for several.",
)
@click.option("--revision", default=None, help="Dataset revision (default: the pinned one).")
@click.option(
    "--from-mirror",
    type=click.Path(file_okay=False),
    default=None,
    help="Copy from another mirror instead of the Hub.",
)
@click.option(
    "--max-file-mb",
    type=float,
    default=None,
    help="Leave out tables larger than this (recorded in the manifest).",
)
@click.option("--jobs", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option(
    "--link",
    is_flag=True,
    help="Hard-link files from the cache instead of copying (same filesystem only).",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Write nothing: re-read every file of DIRECTORY against its manifest.json "
    "(exit 1 when any differs).",
)
@click.argument("directory", type=click.Path(file_okay=False))
def mirror(
    splits: tuple[str, ...],
    revision: str | None,
    from_mirror: str | None,
    max_file_mb: float | None,
    jobs: int,
    link: bool,
    verify: bool,
    directory: str,
) -> None:
    """Write an air-gapped mirror of SPLITs (rows, tables, manifest.json) into DIRECTORY."""
    from smoldataenvs_tasks.data.mirror import write_mirror
    from smoldataenvs_tasks.data.prefetch import NullProgress, RichProgress
    from smoldataenvs_tasks.data.source import SourceError

    if verify:
        _verify_mirror(directory)
        return
    if not splits:
        raise click.UsageError("name at least one --split (or pass --verify to check DIRECTORY)")
    progress = RichProgress() if sys.stderr.isatty() else NullProgress()
    try:
        with progress:
            summary = write_mirror(
                directory,
                splits,
                revision=revision,
                from_mirror=from_mirror,
                jobs=jobs,
                max_file_bytes=_max_bytes(max_file_mb),
                link=link,
                progress=progress,
            )
    except (SourceError, ValueError) as exc:
        raise BadInput(str(exc)) from exc
    click.echo(f"mirror {summary.root} (revision {summary.revision})")
    for split, count in summary.splits.items():
        click.echo(f"  {split}: {count} tasks")
    click.echo(f"  {summary.files} table files, {format_mb(summary.bytes)}")
    _print_problems("tables missing (these tasks will be ungraded)", summary.missing)
    _print_problems("left out by --max-file-mb", summary.skipped)
    click.echo(f"use it with: SMOLDATAENVS_MIRROR={summary.root}  (or -T mirror=..., --mirror ...)")


def _verify_mirror(directory: str) -> None:
    from smoldataenvs_tasks.data.layout import read_manifest
    from smoldataenvs_tasks.data.mirror import verify_mirror
    from smoldataenvs_tasks.data.source import SourceError

    try:
        manifest = read_manifest(directory)
        problems = verify_mirror(directory)
    except SourceError as exc:
        raise BadInput(str(exc)) from None
    checked = len(manifest.get("files") or {}) + len(manifest.get("splits") or {})
    _report_check(f"mirror {directory}", checked, problems, "")


def _report_check(what: str, checked: int, problems: list[str], hint: str) -> None:
    for problem in problems:
        click.echo(f"  {problem}")
    if problems:
        click.echo(f"{what}: {len(problems)} problem(s) in {checked} file(s) checked{hint}")
        sys.exit(1)
    click.echo(f"{what}: {checked} file(s) checked, all intact")


@click.group()
def cache() -> None:
    """Inspect or empty the SmolDataEnvs cache (SMOLDATAENVS_CACHE)."""


@cache.command("info")
@click.option("--json", "as_json", is_flag=True)
def cache_info(as_json: bool) -> None:
    """Where the cache is and what it holds."""
    info = ContentCache().info()
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
    click.echo(f"cache: {info['root']}")
    click.echo(
        f"tables: {info['table_files']} files, {format_mb(info['table_bytes'])} "
        f"in {info['prefixes']} prefixes"
    )
    if info["partial_files"]:
        click.echo(
            f"interrupted downloads: {info['partial_files']} "
            f"({format_mb(info['partial_bytes'])}, resumed by the next fetch)"
        )
    click.echo(f"dataset files: {info['hub_files']}, {format_mb(info['hub_bytes'])}")
    click.echo(f"stage dirs: {info['stage_dirs']}")
    click.echo(f"tables skipped by --max-file-mb: {info['skipped_tables']}")


@cache.command("verify")
@click.option(
    "--delete",
    is_flag=True,
    help="Remove every damaged file (and its record), so the next fetch downloads it again.",
)
def cache_verify(delete: bool) -> None:
    """Re-read every cached table and dataset file against its recorded sha256."""
    store = ContentCache()
    checked, problems = store.verify(delete=delete)
    hint = (
        "; removed, the next fetch downloads them again"
        if delete
        else "; `smoldataenvs cache verify --delete` removes them"
    )
    _report_check(f"cache {store.root}", checked, problems, hint)


@cache.command("clear")
@click.option("--tables", is_flag=True, help="Only the bucket tables.")
@click.option("--hub", is_flag=True, help="Only the dataset files.")
@click.option("--stage", is_flag=True, help="Only the per-sample stage dirs.")
@click.option("--skipped", is_flag=True, help="Only the --max-file-mb records.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def cache_clear(tables: bool, hub: bool, stage: bool, skipped: bool, yes: bool) -> None:
    """Delete cached data (everything unless parts are named)."""
    everything = not (tables or hub or stage or skipped)
    store = ContentCache()
    if not yes:
        what = (
            "everything"
            if everything
            else ", ".join(
                name
                for name, flag in (
                    ("tables", tables),
                    ("dataset files", hub),
                    ("stage dirs", stage),
                    ("skip records", skipped),
                )
                if flag
            )
        )
        click.confirm(f"Delete {what} under {store.root}?", abort=True)
    removed = store.clear(
        tables=everything or tables,
        hub=everything or hub,
        stage=everything or stage,
        skipped=everything or skipped,
    )
    click.echo(f"removed {len(removed)} item(s) under {store.root}")
