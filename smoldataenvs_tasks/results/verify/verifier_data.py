"""The verifier's own copy of a split: the rows (and golds) and tables a maintainer holds, at the
pinned revision, never taken from a submission or its logs.

Where from: `--mirror DIR`, else `SMOLDATAENVS_MIRROR`, else the local cache of the pinned Hub
revision (downloaded on first use, as every run does); the bundled sample is always the package's
own. A mirror at another revision is refused. `smoldataenvs verify` reads golds here to re-grade
every recorded answer, compares the split's parquet and each table's sha256 with what the run
recorded, and decides here which tasks are ungradable.

    from smoldataenvs_tasks.results.verify.verifier_data import VerifierData
    data = VerifierData.load("sample")
    data.table_state("sample/0009/returns.ipynb_qa_1")   # ('table_unavailable', None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from smoldataenvs_tasks._pins import SPLIT_SIZES, pinned_revision
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.scorers.verdict import UngradedReason


class DataUnavailable(SmolDataEnvsError, RuntimeError):
    """The verifier has no copy of the split at the pinned revision; the message says how to
    get one."""


@dataclass
class VerifierData:
    split: str
    revision: str
    where: str  # the source, described for people
    records: dict[str, TaskRecord]
    n_rows: int
    split_sha256: str
    source: Any = field(repr=False, default=None)  # the DataSource the rows came from
    _tables: dict[str, tuple[str | None, dict[str, str] | None]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def load(cls, split: str, *, mirror: str | os.PathLike[str] | None = None) -> VerifierData:
        import warnings

        from smoldataenvs_tasks.data.kinds import resolve_source
        from smoldataenvs_tasks.data.rows import InvalidRowWarning, UnknownRewardModeWarning

        revision = pinned_revision(split)
        try:
            source = resolve_source(split, mirror=mirror, revision=revision)
            with warnings.catch_warnings():
                # the verifier's invalid rows are reported as ungradable tasks, task by task
                warnings.simplefilter("ignore", InvalidRowWarning)
                warnings.simplefilter("ignore", UnknownRewardModeWarning)
                records = source.load_tasks(split)
            digest = source.split_sha256(split)
        except (SmolDataEnvsError, OSError, ValueError) as exc:
            raise DataUnavailable(
                f"no copy of split {split!r} at the pinned revision {revision} here ({exc}); "
                f"give one with --mirror DIR (`smoldataenvs mirror --split {split} DIR` on a "
                f"machine with network), or run `smoldataenvs prefetch --split {split}`"
            ) from None
        return cls(
            split=split,
            revision=str(source.revision or revision),
            where=source.describe(),
            records={record.task_id: record for record in records},
            n_rows=len(records),
            split_sha256=digest,
            source=source,
        )

    @property
    def pinned_rows(self) -> int | None:
        return SPLIT_SIZES.get(self.split)

    def table_state(self, task_id: str) -> tuple[str | None, dict[str, str] | None]:
        """(why the task is ungradable here, or None; name -> sha256 of its tables as this
        machine holds them, each checked against its manifest). Reads each table once."""
        known = self._tables.get(task_id)
        if known is not None:
            return known
        from smoldataenvs_tasks.data.integrity import TableCorruptError
        from smoldataenvs_tasks.data.kinds import resolve_tables
        from smoldataenvs_tasks.data.staging import verify_tables

        record = self.records[task_id]
        state: tuple[str | None, dict[str, str] | None]
        if record.invalid_row is not None:
            state = (UngradedReason.INVALID_ROW.value, None)
        else:
            tables = resolve_tables(record, source=self.source)
            if not tables.available:
                reason = (
                    UngradedReason.TABLE_CORRUPT
                    if tables.corrupt
                    else UngradedReason.TABLE_UNAVAILABLE
                )
                state = (reason.value, None)
            else:
                try:
                    state = (None, verify_tables(tables))
                except (TableCorruptError, OSError):
                    state = (UngradedReason.TABLE_CORRUPT.value, None)
        self._tables[task_id] = state
        return state
