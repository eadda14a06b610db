"""The split parquet is read and hashed through the link huggingface_hub made, and no other.

Issue 31: huggingface_hub stores every snapshot file as a symbolic link into the repo cache's
`blobs/`, and the split digest opened that link with O_NOFOLLOW, so every eval whose rows came
from the Hub cache failed. These tests use the real huggingface_hub cache the fake Hub fills.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.data import hub
from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.data.integrity import UnsafePathError, hub_snapshot_blob
from smoldataenvs_tasks.data.kinds import resolve_source
from smoldataenvs_tasks.data.layout import SourceError

pytestmark = pytest.mark.unit


def _repo_cache() -> Path:
    return ContentCache().hub_dir / hub.repo_cache_name(DATASET_REPO_ID)


def test_a_split_from_the_hub_cache_is_a_link_into_blobs_and_is_read_and_hashed(hub_scenario):
    source = resolve_source("eval")
    entry = source.parquet_path("eval")
    assert entry.is_symlink(), "huggingface_hub's real layout: a snapshot entry is a link"
    blob = source.split_file("eval")
    assert blob.parent == _repo_cache().resolve() / "blobs"
    expected = hashlib.sha256(blob.read_bytes()).hexdigest()
    assert source.split_sha256("eval") == expected == blob.name
    assert [r.task_id for r in source.load_tasks("eval")] == [
        row["task_id"] for row in hub_scenario.splits["eval"]
    ]


def test_the_split_digest_works_offline_with_the_hub_stopped(hub_scenario, monkeypatch):
    online = resolve_source("eval").split_sha256("eval")
    hub_scenario.hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = resolve_source("eval", offline=True)
    assert offline.split_sha256("eval") == online
    assert len(offline.load_tasks("eval")) == len(hub_scenario.splits["eval"])


def test_a_snapshot_link_retargeted_outside_blobs_is_refused(hub_scenario, tmp_path):
    entry = resolve_source("eval").parquet_path("eval")
    elsewhere = tmp_path / "planted.parquet"
    elsewhere.write_bytes(Path(os.path.realpath(entry)).read_bytes())
    entry.unlink()
    entry.symlink_to(elsewhere)
    with pytest.raises(SourceError, match="outside the Hub cache's blobs"):
        resolve_source("eval").load_tasks("eval")
    with pytest.raises(SourceError, match="outside the Hub cache's blobs"):
        resolve_source("eval").split_sha256("eval")


def test_a_snapshot_link_into_another_repos_blobs_is_refused(hub_scenario, tmp_path):
    entry = resolve_source("eval").parquet_path("eval")
    other_blobs = ContentCache().hub_dir / "datasets--someone--else" / "blobs"
    other_blobs.mkdir(parents=True)
    blob = Path(os.path.realpath(entry))
    planted = other_blobs / blob.name
    planted.write_bytes(blob.read_bytes())
    entry.unlink()
    entry.symlink_to(planted)
    with pytest.raises(SourceError, match="outside the Hub cache's blobs"):
        resolve_source("eval").load_tasks("eval")


def test_a_blob_edited_after_download_is_refused(hub_scenario):
    source = resolve_source("eval")
    blob = source.split_file("eval")
    data = bytearray(blob.read_bytes())
    data[-9] ^= 0xFF
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    with pytest.raises(SourceError, match="differs from the Hub's"):
        resolve_source("eval").split_sha256("eval")


def test_a_snapshot_link_to_a_link_in_blobs_that_leaves_blobs_is_refused(tmp_path):
    repo = tmp_path / "datasets--o--n"
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots" / "abc" / "data").mkdir(parents=True)
    outside = tmp_path / "secret"
    outside.write_text("not a parquet")
    (repo / "blobs" / "hop").symlink_to(outside)
    entry = repo / "snapshots" / "abc" / "data" / "eval.parquet"
    entry.symlink_to(repo / "blobs" / "hop")
    with pytest.raises(UnsafePathError, match="outside the Hub cache's blobs"):
        hub_snapshot_blob(entry, repo)


def test_a_dangling_or_special_snapshot_entry_is_refused(tmp_path):
    repo = tmp_path / "datasets--o--n"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / "abc"
    snap.mkdir(parents=True)
    dangling = snap / "dangling.parquet"
    dangling.symlink_to(repo / "blobs" / "gone")
    with pytest.raises(UnsafePathError, match="does not exist"):
        hub_snapshot_blob(dangling, repo)
    (repo / "blobs" / "adir").mkdir()
    to_dir = snap / "dir.parquet"
    to_dir.symlink_to(repo / "blobs" / "adir")
    with pytest.raises(UnsafePathError, match="not a regular file"):
        hub_snapshot_blob(to_dir, repo)
    fifo = snap / "fifo.parquet"
    os.mkfifo(fifo)
    with pytest.raises(UnsafePathError, match="not a regular file"):
        hub_snapshot_blob(fifo, repo)


def test_an_entry_outside_the_snapshots_is_refused(tmp_path):
    repo = tmp_path / "datasets--o--n"
    (repo / "blobs").mkdir(parents=True)
    stray = tmp_path / "stray.parquet"
    stray.write_bytes(b"x")
    with pytest.raises(UnsafePathError, match="not in the snapshots"):
        hub_snapshot_blob(stray, repo)


def test_a_copied_snapshot_file_without_links_is_read(tmp_path):
    # huggingface_hub copies instead of linking where the filesystem has no symbolic links
    repo = tmp_path / "datasets--o--n"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / "abc" / "data"
    snap.mkdir(parents=True)
    copy = snap / "eval.parquet"
    copy.write_bytes(b"rows")
    assert hub_snapshot_blob(copy, repo) == copy
