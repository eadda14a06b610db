"""Tampered and linked data never reaches a sandbox unseen (issue 13, items 6 and 7).

- A same-size edit of a cached or mirrored table, or of a mirror's parquet, is caught by its
  sha256: the sample is ungraded `table_corrupt` (never graded on the wrong bytes), the rows are
  refused, and `smoldataenvs cache verify` / `smoldataenvs mirror --verify` name the file.
- The log's `table_sha256` is the hash of the bytes staged, not a copy of the manifest's.
- Each table is hashed once per (inode, size, mtime) in a process, not once per sample.
- A mirror or cache entry that is a symbolic link is never followed: its target is neither
  served to a sandbox nor has its mode changed; staging changes no mode of a file it did not make.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from smoldataenvs_tasks._pins import split_parquet_path
from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.data.integrity import TableCorruptError
from smoldataenvs_tasks.data.kinds import load_tasks, resolve_tables
from smoldataenvs_tasks.data.mirror import verify_mirror
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import SourceError
from smoldataenvs_tasks.data.staging import new_stage_dir, stage_tables, staged_sha256
from smoldataenvs_tasks.data.tables import TableFile, TableSet
from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies
from tests.data.hostile import (
    ORDERS_PREFIX,
    ORDERS_TASK,
    SPLIT,
    edit_same_size,
    sample_mirror,
    table_path,
)
from tests.fakehub_fixtures import Scenario
from tests.replies import GOLD_PROGRAM

GOLD_ORDERS = "```python\nimport pandas as pd\nprint(pd.read_csv('orders.csv')['region'][0])\n```"
HUB_ORDERS = "t/0001/orders.ipynb_qa_1"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    return sample_mirror(tmp_path / "mirror")


def orders(mirror: Path) -> TaskRecord:
    [record] = load_tasks(SPLIT, mirror=str(mirror), task_ids=ORDERS_TASK)
    return record


def inspect_run(mirror: Path, tmp_path: Path, **task_args):
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    [log] = inspect_eval(
        smoldataenvs_program(split=SPLIT, mirror=str(mirror), task_ids=ORDERS_TASK, **task_args),
        model="replay/test",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    return sample.scores["program_scorer"]


# --- item 6: content hashes -----------------------------------------------------------------


@pytest.mark.slow
def test_a_same_size_edit_of_a_mirror_table_is_ungraded_table_corrupt(mirror, tmp_path, data_env):
    path = table_path(mirror, ORDERS_PREFIX, "orders.csv")
    size = path.stat().st_size
    edit_same_size(path)
    assert path.stat().st_size == size
    record = orders(mirror)
    tables = resolve_tables(record, mirror=str(mirror))
    with pytest.raises(TableCorruptError, match=r"orders\.csv: sha256"):
        stage_tables(tables, new_stage_dir())
    [verdict] = grade_program_replies(
        [ProgramReply(record, GOLD_ORDERS)], mirror=str(mirror), sandbox="bwrap"
    )
    assert (verdict.reward, verdict.detail) == (None, "table_corrupt")
    score = inspect_run(mirror, tmp_path, sandbox="bwrap")
    assert math.isnan(score.value)
    assert score.metadata["detail"] == "table_corrupt"
    assert "orders.csv" in score.explanation
    problems = verify_mirror(mirror)
    assert problems == [
        f"buckets/hostile/tables/{ORDERS_PREFIX}/orders.csv: "
        "sha256 differs from the recorded one (edited or corrupt)"
    ]
    result = invoke("mirror", "--verify", str(mirror))
    assert result.exit_code == 1
    assert "orders.csv: sha256 differs" in result.output and "1 problem(s)" in result.output


def test_the_log_records_the_sha256_of_the_bytes_staged(mirror, tmp_path):
    # a manifest that vouches for sizes only: the log must still say which bytes were read
    manifest = json.loads((mirror / "manifest.json").read_text(encoding="utf-8"))
    for info in manifest["files"].values():
        info.pop("sha256")
    (mirror / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    path = table_path(mirror, ORDERS_PREFIX, "orders.csv")
    score = inspect_run(mirror, tmp_path, sandbox="bwrap")
    assert score.value == 1.0
    assert score.metadata["table_sha256"] == {"orders.csv": sha(path)}


def test_an_intact_mirror_verifies_and_its_tables_grade(mirror, tmp_path):
    result = invoke("mirror", "--verify", str(mirror))
    assert result.exit_code == 0, result.output
    assert "all intact" in result.output
    score = inspect_run(mirror, tmp_path, sandbox="bwrap")
    assert score.value == 1.0
    path = table_path(mirror, ORDERS_PREFIX, "orders.csv")
    assert score.metadata["table_sha256"] == {"orders.csv": sha(path)}


def test_a_mirror_parquet_with_an_edited_gold_is_refused(mirror, tmp_path):
    parquet = mirror / split_parquet_path(SPLIT)
    rows = pq.read_table(parquet).to_pylist()
    for row in rows:
        if row["task_id"] == ORDERS_TASK:
            row["answer"] = "West"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    with pytest.raises(SourceError, match=r"sha256 differs from the one manifest\.json records"):
        load_tasks(SPLIT, mirror=str(mirror))
    from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    # the task says it in one line (Inspect's PrerequisiteError), the data layer's error beneath
    with pytest.raises(PrerequisiteError, match="rows were edited") as caught:
        smoldataenvs_program(split=SPLIT, mirror=str(mirror), sandbox="local")
    assert isinstance(caught.value.__cause__, SourceError)
    result = invoke("mirror", "--verify", str(mirror))
    assert result.exit_code == 1
    assert f"{split_parquet_path(SPLIT)}: " in result.output


def test_mirror_verify_of_a_directory_that_is_no_mirror_is_one_line_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["mirror", "--verify", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "no manifest.json" in result.output


def test_a_same_size_edit_in_the_cache_is_caught_and_cache_verify_repairs_it(hub_scenario):
    record = TaskRecord.from_doc(hub_scenario.task(HUB_ORDERS))
    [table] = resolve_tables(record).files
    assert invoke("cache", "verify").exit_code == 0
    edit_same_size(table.path)
    again = resolve_tables(record)
    assert again.available  # sizes agree: only the content hash can tell
    with pytest.raises(TableCorruptError, match=r"orders\.csv"):
        stage_tables(again, new_stage_dir())
    [verdict] = grade_program_replies([ProgramReply(record, GOLD_ORDERS)], sandbox="bwrap")
    assert (verdict.reward, verdict.detail) == (None, "table_corrupt")

    found = invoke("cache", "verify")
    assert found.exit_code == 1
    assert f"{Scenario.BUCKET}/acme__retail/orders.csv: sha256 differs" in found.output
    repaired = invoke("cache", "verify", "--delete")
    assert repaired.exit_code == 1 and "removed" in repaired.output
    fresh = resolve_tables(record)  # downloads it again
    assert fresh.files[0].path.read_bytes() == hub_scenario.tables[("acme__retail", "orders.csv")]
    stage_tables(fresh, new_stage_dir())
    assert invoke("cache", "verify").exit_code == 0


def test_an_edited_dataset_file_in_the_hub_cache_is_refused(hub_scenario, data_env):
    load_tasks("eval")
    [blob] = [p for p in (data_env.cache / "hub").rglob("blobs/*") if len(p.name) == 64]
    data = bytearray(blob.read_bytes())
    data[-20] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    with pytest.raises(SourceError, match="differs from the Hub's"):
        load_tasks("eval")
    result = invoke("cache", "verify")
    assert result.exit_code == 1 and blob.name in result.output


def test_each_table_is_read_once_however_many_samples_stage_it(data_env, tmp_path, monkeypatch):
    table = tmp_path / "store" / "big.csv"
    table.parent.mkdir()
    table.write_bytes(b"x" * 3_000_000)
    table.chmod(0o444)
    digest = sha(table)
    tables = TableSet("t", (TableFile("big.csv", table, 3_000_000, digest, "p/big.csv"),))
    read = {"bytes": 0}
    real_pread = os.pread

    def counting_pread(fd: int, size: int, offset: int) -> bytes:
        chunk = real_pread(fd, size, offset)
        read["bytes"] += len(chunk)
        return chunk

    monkeypatch.setattr(os, "pread", counting_pread)
    root = new_stage_dir()
    for _ in range(20):
        stage = stage_tables(tables, new_stage_dir(root))
        assert staged_sha256(tables, stage) == {"big.csv": digest}
    assert read["bytes"] == 3_000_000  # once, not 20 times
    # a new version of the file (new mtime) is a new key: read again, and caught
    table.chmod(0o644)
    table.write_bytes(b"y" * 3_000_000)
    with pytest.raises(TableCorruptError):
        stage_tables(tables, new_stage_dir(root))
    assert read["bytes"] == 6_000_000


# --- item 7: links ----------------------------------------------------------------------------


def _outside(tmp_path: Path, data: bytes) -> Path:
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_bytes(data)
    secret.chmod(0o640)
    return secret


@pytest.mark.slow
def test_a_mirror_table_that_is_a_symlink_is_refused_and_its_target_untouched(
    mirror, tmp_path, data_env
):
    path = table_path(mirror, ORDERS_PREFIX, "orders.csv")
    secret = _outside(tmp_path, path.read_bytes())  # same bytes, so only the link gives it away
    path.unlink()
    path.symlink_to(secret)
    record = orders(mirror)
    tables = resolve_tables(record, mirror=str(mirror))
    assert not tables.available and tables.corrupt
    assert "symbolic link" in tables.error
    [verdict] = grade_program_replies(
        [ProgramReply(record, GOLD_ORDERS)], mirror=str(mirror), sandbox="bwrap"
    )
    assert verdict.detail == "table_corrupt"
    score = inspect_run(mirror, tmp_path, sandbox="bwrap")
    assert score.metadata["detail"] == "table_corrupt"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o640  # never chmod-ed
    staged = [p for p in (data_env.cache / "stage").rglob("*") if p.is_file()]
    assert all(p.stat().st_ino != secret.stat().st_ino for p in staged)
    assert any("symbolic link" in problem for problem in verify_mirror(mirror))


def test_a_mirror_prefix_that_is_a_symlink_is_not_followed(mirror, tmp_path):
    prefix = table_path(mirror, ORDERS_PREFIX, "orders.csv").parent
    elsewhere = tmp_path / "elsewhere"
    prefix.rename(elsewhere)
    prefix.symlink_to(elsewhere, target_is_directory=True)
    tables = resolve_tables(orders(mirror), mirror=str(mirror))
    assert not tables.available and tables.corrupt and "symbolic link" in tables.error


def test_staging_refuses_a_source_that_is_a_link_and_changes_no_mode(data_env, tmp_path):
    secret = _outside(tmp_path, b"a,b\n1,2\n")
    link = tmp_path / "link.csv"
    link.symlink_to(secret)
    tables = TableSet("t", (TableFile("t.csv", link, 8, None, "p/t.csv"),))
    stage = new_stage_dir()
    with pytest.raises(TableCorruptError, match="symbolic link"):
        stage_tables(tables, stage)
    assert not (stage / "t.csv").exists()
    assert stat.S_IMODE(secret.stat().st_mode) == 0o640


def test_staging_leaves_the_mode_of_a_writable_mirror_file_alone(mirror, data_env):
    path = table_path(mirror, ORDERS_PREFIX, "orders.csv")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    stage = stage_tables(resolve_tables(orders(mirror), mirror=str(mirror)), new_stage_dir())
    assert (stage / "orders.csv").stat().st_ino == path.stat().st_ino  # still a hard link
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_link_planted_in_the_cache_is_replaced_not_followed(hub_scenario, tmp_path):
    record = TaskRecord.from_doc(hub_scenario.task(HUB_ORDERS))
    [table] = resolve_tables(record).files
    expected = table.path.read_bytes()
    secret = _outside(tmp_path, b"s" * len(expected))  # same size as the listing says
    table.path.unlink()
    table.path.symlink_to(secret)
    [again] = resolve_tables(record).files
    assert not again.path.is_symlink() and again.path.read_bytes() == expected
    assert secret.read_bytes() == b"s" * len(expected)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o640
    assert ContentCache().verify() == (1, [])
