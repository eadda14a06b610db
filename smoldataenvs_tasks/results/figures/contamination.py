"""The contamination view's lookup: which tasks' tables also serve a train-split task.

A task's tables are identified by its row's `hf_bucket` and `bucket_prefix` (one Kaggle dataset).
When a test or eval task's prefix also appears in train, a model tuned on train has seen those
tables. The lookup happens once, when `report` writes the submission, and only from what is on
this machine: the train split's rows from a mirror (`--mirror`, SMOLDATAENVS_MIRROR) or the
local cache of the run's revision. Nothing is downloaded. The per-task flags go into the
submission, so every later figure (verify, leaderboard) comes from the submission alone. When
train is not here, the submission says so in words.

    smoldataenvs prefetch --split train    # once, with network: makes the view available
    smoldataenvs report logs/ --out report/
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from smoldataenvs_tasks._pins import SAMPLE_SPLIT
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.results.model.runs import Run, tables_key
from smoldataenvs_tasks.results.model.schema import TrainTables

TRAIN_SPLIT = "train"


def _unavailable(note: str) -> TrainTables:
    return {"available": False, "note": note, "revision": None, "n_train_tasks": None}


def _split_tables(split: str, mirror: str | None, revision: str | None) -> dict[str, str | None]:
    from smoldataenvs_tasks.data.kinds import resolve_source

    try:
        source = resolve_source(split, mirror=mirror, revision=revision, offline=True)
        records = source.load_tasks(split)
    except (SmolDataEnvsError, OSError, ValueError):
        return {}
    return {r.task_id: tables_key(r.hf_bucket, r.bucket_prefix) for r in records}


def lookup_train_tables(
    runs: Sequence[Run], *, mirror: str | None = None
) -> tuple[dict[str, bool | None], TrainTables]:
    """Per task id: are its tables also used by a train task (None: unknown); and the basis
    (`available`, a `note` for people, the train `revision` and its task count)."""
    split = runs[0].split
    if split == SAMPLE_SPLIT:
        return {}, _unavailable(
            "the bundled sample split has no train split beside it, so no task can be checked "
            "against train"
        )
    if split == TRAIN_SPLIT:
        return {}, _unavailable("this is the train split itself")
    from smoldataenvs_tasks.data.kinds import resolve_source
    from smoldataenvs_tasks.data.source import ENV_MIRROR

    revision = runs[0].dataset_revision
    try:
        source = resolve_source(TRAIN_SPLIT, mirror=mirror, revision=revision, offline=True)
        train = source.load_tasks(TRAIN_SPLIT)
    except (SmolDataEnvsError, OSError, ValueError) as exc:
        # The error text may hold a machine path; submissions get shared, so only its kind.
        where = "the mirror" if mirror or os.environ.get(ENV_MIRROR) else "this machine's cache"
        return {}, _unavailable(
            f"the train split at revision {revision} is not in {where} "
            f"({type(exc).__name__}); `smoldataenvs prefetch --split train` or a mirror with "
            "train makes it available"
        )
    train_tables = {tables_key(r.hf_bucket, r.bucket_prefix) for r in train} - {None}

    tables: dict[str, str | None] = {}
    for run in runs:
        for task_id, entry in run.tasks.items():
            tables[task_id] = tables.get(task_id) or entry.tables
    if any(value is None for value in tables.values()):
        # Runs that did not record a task's tables (lm-eval verdicts alone): the split's rows.
        rows = _split_tables(split, mirror, revision)
        tables = {task_id: value or rows.get(task_id) for task_id, value in tables.items()}
    flags = {
        task_id: None if value is None else value in train_tables
        for task_id, value in tables.items()
    }
    basis: TrainTables = {
        "available": True,
        "note": (
            f"tables (hf_bucket/bucket_prefix) compared with the {len(train)} train tasks at "
            f"revision {source.revision}"
        ),
        "revision": source.revision,
        "n_train_tasks": len(train),
    }
    return flags, basis
