"""Input staging: hard links, read-only tables, in-sandbox links, cleanup."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks.contract import INPUT_DIR, TABLES_DIR
from smoldataenvs_tasks.data.staging import (
    StagingWarning,
    cleanup_stage_dirs,
    new_stage_dir,
    stage_tables,
)
from smoldataenvs_tasks.data.tables import TableFile, TableSet
from smoldataenvs_tasks.sandboxes.inputs import (
    LINK_INPUTS_COMMAND,
    link_inputs_on_host,
    link_inputs_script,
)


def table_set(tmp_path: Path, files: dict[str, bytes]) -> TableSet:
    store = tmp_path / "store"
    store.mkdir(exist_ok=True)
    tables = []
    for name, data in files.items():
        path = store / f"deep-{name}"
        path.write_bytes(data)
        path.chmod(0o444)  # as the content cache writes its files
        tables.append(TableFile(name, path, len(data), None, f"prefix/{name}"))
    return TableSet("task/1", tuple(tables))


def test_new_stage_dirs_live_under_the_cache_and_are_fresh(data_env):
    first, second = new_stage_dir(), new_stage_dir()
    assert first != second
    assert first.parent == data_env.cache / "stage"
    assert f"-p{os.getpid()}-" in first.name
    nested = new_stage_dir(first)
    assert nested.parent == first and not any(nested.iterdir())


def test_stage_tables_hard_links_flat_entries_of_read_only_cache_files(data_env, tmp_path):
    tables = table_set(tmp_path, {"orders.csv": b"a,b\n1,2\n", "with space.xlsx": b"PK\x03\x04"})
    stage = stage_tables(tables, new_stage_dir())
    assert sorted(p.name for p in stage.iterdir()) == ["orders.csv", "with space.xlsx"]
    for table in tables.files:
        staged = stage / table.name
        assert not staged.is_symlink()
        assert staged.stat().st_ino == table.path.stat().st_ino  # a hard link, no copy
        assert stat.S_IMODE(staged.stat().st_mode) & 0o222 == 0
        assert staged.read_bytes() == table.path.read_bytes()


def test_staging_twice_is_idempotent_and_replaces_stale_entries(data_env, tmp_path):
    tables = table_set(tmp_path, {"orders.csv": b"1\n"})
    stage = new_stage_dir()
    (stage / "orders.csv").write_bytes(b"stale\n")
    stage_tables(tables, stage)
    stage_tables(tables, stage)
    assert (stage / "orders.csv").read_bytes() == b"1\n"
    assert (stage / "orders.csv").stat().st_ino == tables.files[0].path.stat().st_ino


def test_staging_refuses_unavailable_sets_and_unsafe_names(data_env, tmp_path):
    with pytest.raises(ValueError, match="404 from bucket"):
        stage_tables(TableSet("t", (), "orders.csv: 404 from bucket"), new_stage_dir())
    bad = TableSet("t", (TableFile("../escape.csv", tmp_path, 0, None, "p/x"),))
    with pytest.raises(ValueError, match="bare name"):
        stage_tables(bad, new_stage_dir())


@pytest.mark.skipif(
    not Path("/dev/shm").is_dir()
    or os.stat("/dev/shm").st_dev == os.stat(tempfile.gettempdir()).st_dev,
    reason="needs /dev/shm on another filesystem than the temp dir",
)
def test_a_table_on_another_filesystem_is_copied_once_with_a_warning(data_env):
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        source = Path(other) / "far.csv"
        source.write_bytes(b"far away\n")
        tables = TableSet("t", (TableFile("far.csv", source, 9, None, "p/far.csv"),))
        root = new_stage_dir()
        with pytest.warns(StagingWarning, match="another filesystem"):
            first = stage_tables(tables, new_stage_dir(root))
        second = stage_tables(tables, new_stage_dir(root))  # reuses the one copy: no warning
        a, b = first / "far.csv", second / "far.csv"
        assert a.read_bytes() == b"far away\n"
        assert a.stat().st_ino == b.stat().st_ino != source.stat().st_ino
        assert stat.S_IMODE(a.stat().st_mode) & 0o222 == 0


def _host_version(argv: list[str], tables_dir: Path, input_dir: Path) -> list[str]:
    script = argv[2].replace(TABLES_DIR, str(tables_dir)).replace(INPUT_DIR, str(input_dir))
    return [argv[0], argv[1], script]


def test_link_inputs_command_links_every_entry_including_odd_names(tmp_path):
    tables_dir, input_dir = tmp_path / "tables", tmp_path / "home" / "input"
    tables_dir.mkdir()
    names = ["orders.csv", "with space.csv", ".hidden.json", "-dash.csv", "über.csv"]
    for name in names:
        (tables_dir / name).write_text(name, encoding="utf-8")
    result = subprocess.run(
        _host_version(LINK_INPUTS_COMMAND, tables_dir, input_dir), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in input_dir.iterdir()) == sorted(names)
    for name in names:
        link = input_dir / name
        assert link.is_symlink() and link.read_text(encoding="utf-8") == name
    # programs may write beside the tables (the input dir is writable)
    (input_dir / "scratch.txt").write_text("ok", encoding="utf-8")


def test_link_inputs_command_on_an_empty_stage_makes_an_empty_input_dir(tmp_path):
    tables_dir, input_dir = tmp_path / "tables", tmp_path / "input"
    tables_dir.mkdir()
    result = subprocess.run(_host_version(LINK_INPUTS_COMMAND, tables_dir, input_dir))
    assert result.returncode == 0 and list(input_dir.iterdir()) == []


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_link_inputs_command_inside_bwrap_with_a_read_only_stage(data_env, tmp_path):
    tables = table_set(tmp_path, {"orders.csv": b"a\n", "more.csv": b"b\n"})
    stage = stage_tables(tables, new_stage_dir())
    input_dir = tmp_path / "input"
    input_dir.mkdir()
    argv = [
        "bwrap",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        str(stage),
        TABLES_DIR,
        "--bind",
        str(input_dir),
        INPUT_DIR,
        "--unshare-all",
        "--die-with-parent",
    ]
    probe = subprocess.run([*argv, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"bwrap cannot create namespaces here: {probe.stderr!r}")
    script = LINK_INPUTS_COMMAND[2] + (
        f" && cat {INPUT_DIR}/orders.csv && echo hack > {INPUT_DIR}/orders.csv; echo rc=$?"
    )
    result = subprocess.run([*argv, "sh", "-c", script], capture_output=True, text=True)
    assert result.stdout.startswith("a\n")
    assert "rc=0" not in result.stdout  # writing through the link hits the read-only mount
    assert tables.files[0].path.read_bytes() == b"a\n"
    assert os.readlink(input_dir / "orders.csv") == f"{TABLES_DIR}/orders.csv"


def test_link_inputs_on_host_points_at_the_sandbox_tables_dir(tmp_path):
    input_dir = link_inputs_on_host(tmp_path / "input", ["a.csv", "b c.csv"])
    assert os.readlink(input_dir / "a.csv") == f"{TABLES_DIR}/a.csv"
    assert os.readlink(input_dir / "b c.csv") == f"{TABLES_DIR}/b c.csv"
    link_inputs_on_host(input_dir, ["a.csv"])  # idempotent
    with pytest.raises(ValueError):
        link_inputs_on_host(input_dir, ["../x"])


def test_link_inputs_script_links_exactly_the_named_tables(tmp_path):
    tables_dir, input_dir = tmp_path / "tables", tmp_path / "input"
    tables_dir.mkdir()
    for name in ("keep it.csv", "other.csv"):
        (tables_dir / name).write_text(name, encoding="utf-8")
    argv = _host_version(link_inputs_script(["keep it.csv"]), tables_dir, input_dir)
    assert subprocess.run(argv).returncode == 0
    assert [p.name for p in input_dir.iterdir()] == ["keep it.csv"]


def test_cleanup_removes_old_stage_dirs_of_dead_processes_only(data_env):
    mine = new_stage_dir()
    root = mine.parent
    dead = root / "20200101T000000-otherhost-p1-deadbeef"  # pid 1 lives here, not there
    dead.mkdir()
    (dead / "x.csv").write_text("x", encoding="utf-8")
    old = time.time() - 10 * 86400
    os.utime(dead, (old, old))
    os.utime(mine, (old, old))
    recent = root / "20200101T000000-otherhost-p1-cafe0000"
    recent.mkdir()
    removed = cleanup_stage_dirs(data_env.cache, max_age_s=3600)
    assert removed == [dead]
    assert mine.exists() and recent.exists() and not dead.exists()
