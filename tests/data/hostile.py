"""Hostile data for the data-layer tests: a mirror built from the bundled sample that can carry
invalid rows, and ways to tamper with it (same-size edits, links in place of tables).

The sample's rows are moved to their own bucket id (`HOSTILE_BUCKET`): rows of the sample's bucket
always read the bundled copy, and these tests need tables they can damage.

    from tests.data.hostile import sample_mirror
    mirror = sample_mirror(tmp_path / "mirror", extra_rows=[{"task_id": "x", ...}])
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from smoldataenvs_tasks._pins import split_parquet_path
from smoldataenvs_tasks.data.layout import file_entry, mirror_key, split_entry, write_manifest
from smoldataenvs_tasks.data.source import SAMPLE_BUCKET, SAMPLE_DIR

HOSTILE_BUCKET = "hostile/tables"
SPLIT = "test"

ORDERS_TASK = "sample/0001/orders.ipynb_qa_1"  # gold "East", reads orders.csv
ORDERS_PREFIX = "sample__retail-orders"


def _bad(task_id: str | None, **overrides: Any) -> dict[str, Any]:
    row = {
        "task_id": task_id,
        "question": f"Hostile question {task_id}?",
        "answer": "1",
        "reward_mode": "numeric",
        "atol": 0.0,
        "rtol": 0.0,
        "difficulty_tier": "easy",
        "files": ["orders.csv"],
        "hf_bucket": HOSTILE_BUCKET,
        "bucket_prefix": ORDERS_PREFIX,
    }
    row.update(overrides)
    return row


# Each row the issue saw abort a whole run; `<row N>` is the id a row without one gets.
INVALID_ROWS: dict[str, dict[str, Any]] = {
    "hostile/escaping_file": _bad("hostile/escaping_file", files=["../../etc/passwd"]),
    "hostile/nan_atol": _bad("hostile/nan_atol", atol=math.nan),
    "hostile/negative_rtol": _bad("hostile/negative_rtol", rtol=-1.0),
    "hostile/inf_atol": _bad("hostile/inf_atol", atol=math.inf),
    "hostile/missing_answer": _bad("hostile/missing_answer", answer=None),
    "hostile/escaping_prefix": _bad("hostile/escaping_prefix", bucket_prefix=".."),
}
DUPLICATE = "hostile/duplicate"
WHAT_IS_WRONG = {
    "hostile/escaping_file": "bare name",
    "hostile/nan_atol": "not finite",
    "hostile/negative_rtol": "negative",
    "hostile/inf_atol": "not finite",
    "hostile/missing_answer": "answer is missing",
    "hostile/escaping_prefix": "escape",
    DUPLICATE: "duplicate task_id",
}


def hostile_rows() -> list[dict[str, Any]]:
    """Every invalid row of INVALID_ROWS, one id on two rows, and a row without an id."""
    return [
        *INVALID_ROWS.values(),
        _bad(DUPLICATE),
        _bad(DUPLICATE, answer="2"),
        _bad(None),
    ]


def sample_rows() -> list[dict[str, Any]]:
    rows = pq.read_table(SAMPLE_DIR / split_parquet_path("sample")).to_pylist()
    for row in rows:
        row["hf_bucket"] = HOSTILE_BUCKET
    return rows


def sample_mirror(
    root: Path,
    *,
    extra_rows: Iterable[Mapping[str, Any]] = (),
    split: str = SPLIT,
) -> Path:
    """A mirror (docs/design.md layout, manifest written by the one writer) of the bundled
    sample's rows and tables, plus `extra_rows`, as split `split`; the tables are copies."""
    source = SAMPLE_DIR / "buckets" / SAMPLE_BUCKET
    tables = root / "buckets" / HOSTILE_BUCKET
    shutil.copytree(source, tables)
    for path in tables.rglob("*"):
        if path.is_file():
            path.chmod(0o644)  # as a hand-made mirror would have them
    rows = [*sample_rows(), *extra_rows]
    parquet = root / split_parquet_path(split)
    parquet.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    files = {}
    for path in sorted(tables.rglob("*")):
        if path.is_file():
            prefix, relpath = path.relative_to(tables).as_posix().split("/", 1)
            files[mirror_key(HOSTILE_BUCKET, prefix, relpath)] = file_entry(path)
    write_manifest(
        root,
        dataset="hostile-sample",
        revision="hostile-1",
        splits={split: split_entry(root, split, len(rows))},
        files=files,
    )
    return root


def table_path(mirror: Path, prefix: str, relpath: str) -> Path:
    return mirror / mirror_key(HOSTILE_BUCKET, prefix, relpath)


def edit_same_size(path: Path) -> None:
    """Change the file's bytes without changing its size (what a size check cannot see)."""
    data = bytearray(path.read_bytes())
    index = data.index(b"East") if b"East" in data else len(data) // 2
    data[index : index + 4] = b"West" if b"East" in data else bytes(4)
    path.chmod(0o644)
    path.write_bytes(bytes(data))
