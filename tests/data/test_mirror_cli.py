"""`smoldataenvs mirror | prefetch | cache` through the real CLI, against the fake Hub."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks._pins import DATASET_REVISION
from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks, mirror_source, resolve_source, resolve_tables
from smoldataenvs_tasks.data.mirror import MirrorDestinationError, verify_mirror, write_mirror
from smoldataenvs_tasks.data.source import SourceError

RETURNS = "t/0002/returns.ipynb_qa_1"
BIG = "t/0004/big.ipynb_qa_1"


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result


def digests(records, **kwargs):
    out = {}
    for record in records:
        tables = resolve_tables(record, **kwargs)
        out[record.task_id] = (
            tables.error,
            {t.name: hashlib.sha256(t.path.read_bytes()).hexdigest() for t in tables.files},
        )
    return out


def test_mirror_then_env_mirror_gives_the_same_records_and_bytes_with_the_server_gone(
    hub_scenario, data_env, tmp_path, monkeypatch
):
    target = tmp_path / "mirror"
    result = invoke("mirror", "--split", "eval", "--split", "test", str(target))
    assert result.exit_code == 0, result.output
    assert "eval: 6 tasks" in result.output and "test: 2 tasks" in result.output
    online = {split: load_tasks(split) for split in ("eval", "test")}
    online_bytes = {split: digests(records) for split, records in online.items()}

    hub_scenario.hub.stop()
    hub_scenario.hub.reset_log()
    shutil.rmtree(data_env.cache)  # nothing may come from the cache either
    monkeypatch.setenv("SMOLDATAENVS_MIRROR", str(target))
    for split in ("eval", "test"):
        source = resolve_source(split)
        assert (source.kind, source.revision) == ("mirror", DATASET_REVISION)
        mirrored = load_tasks(split)
        assert mirrored == online[split]
        assert digests(mirrored) == online_bytes[split]
    assert hub_scenario.hub.requests == []
    assert not data_env.cache.exists()
    assert verify_mirror(target) == []


def test_the_mirror_layout_and_manifest(hub_scenario, tmp_path):
    target = tmp_path / "m"
    write_mirror(target, ["eval"])
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["revision"] == DATASET_REVISION
    assert manifest["splits"]["eval"]["path"] == "data/eval-00000-of-00001.parquet"
    assert (target / "data" / "eval-00000-of-00001.parquet").is_file()
    key = "buckets/testowner/kaggle-tables/acme__retail/extra/customers.csv"
    data = hub_scenario.tables[("acme__retail", "extra/customers.csv")]
    assert manifest["files"][key] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert (target / key).read_bytes() == data
    # the deeper look-alike was never needed, so it is not mirrored
    assert not (target / "buckets/testowner/kaggle-tables/acme__retail/old").exists()
    assert list(manifest["missing"]) == [RETURNS]


def test_a_tampered_mirror_file_is_reported_by_size_and_by_verify(hub_scenario, tmp_path):
    target = tmp_path / "m"
    write_mirror(target, ["test"])
    path = target / "buckets/testowner/kaggle-tables/acme__survey/survey.csv"
    path.chmod(0o644)
    path.write_bytes(path.read_bytes() + b"extra\n")
    record = load_tasks("test", mirror=target)[0]
    assert "differs from the mirror manifest" in resolve_tables(record, mirror=target).error
    assert any("survey.csv" in problem for problem in verify_mirror(target))


def test_mirror_max_file_mb_leaves_tables_out_and_says_so(hub_scenario, tmp_path):
    target = tmp_path / "m"
    result = invoke("mirror", "--split", "eval", "--max-file-mb", "1", str(target))
    assert result.exit_code == 0, result.output
    assert "left out by --max-file-mb" in result.output
    big = load_tasks("eval", mirror=target, task_ids=BIG)[0]
    size_mb = len(hub_scenario.tables[("acme__big", "big.csv")]) / 1e6
    assert resolve_tables(big, mirror=target).error == (
        f"big.csv: {size_mb:.0f} MB over --max-file-mb 1 (left out of the mirror)"
    )


def test_mirror_refuses_to_mix_revisions_or_write_into_its_source(hub_scenario, tmp_path):
    target = tmp_path / "m"
    write_mirror(target, ["test"])
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    manifest["revision"] = "f" * 40
    (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    try:
        write_mirror(target, ["eval"])
    except SourceError as exc:
        assert "mix dataset revisions" in str(exc)
    else:
        raise AssertionError("mixing revisions must fail")
    result = invoke("mirror", "--split", "test", "--from-mirror", str(target), str(target))
    assert result.exit_code != 0 and "into itself" in result.output


def test_prefetch_cli_summary_and_the_skip_record(hub_scenario, data_env):
    result = invoke("prefetch", "--split", "eval", "--max-file-mb", "1", "--jobs", "3")
    assert result.exit_code == 3, result.output  # only RETURNS, a data defect; a skip is no failure
    assert "tasks ready: 4 of 6" in result.output
    assert "data defects (no tables to fetch: ungraded in every run): 1 task(s)" in result.output
    assert RETURNS in result.output and "tables missing" not in result.output
    assert "skipped by --max-file-mb 1: 1 task(s)" in result.output and BIG in result.output
    skipped = json.loads((data_env.cache / "skipped.json").read_text(encoding="utf-8"))["tables"]
    assert list(skipped) == ["testowner/kaggle-tables/acme__big/big.csv"]
    as_json = invoke(
        "prefetch", "--split", "eval", "--tier", "easy,hard", "--json", "--max-file-mb", "1"
    )
    summary = json.loads(as_json.output)["eval"]
    assert summary["tasks"] == 2 and summary["ready"] == 1 and summary["files_downloaded"] == 0


def test_prefetch_exits_3_when_only_data_defects_are_left_and_lists_them_in_json(hub_scenario):
    result = invoke("prefetch", "--split", "eval", "--json")
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)["eval"]
    assert list(summary["defects"]) == [RETURNS] and summary["missing"] == {}
    assert "returns.csv: not found under prefix 'acme__retail'" in summary["defects"][RETURNS]
    again = invoke("prefetch", "--split", "eval")  # everything else is cached: still 3, not 0
    assert again.exit_code == 3 and "tasks ready: 5 of 6" in again.output


def test_prefetch_exits_1_when_a_retry_could_bring_more_than_the_defects(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "1")
    hub_scenario.hub.fail(hub_scenario.route("acme__survey", "survey.csv"), 503)
    result = invoke("prefetch", "--split", "eval")
    assert result.exit_code == 1, result.output
    assert "tables missing (a retry may bring them): 1 task(s)" in result.output
    assert "data defects (no tables to fetch: ungraded in every run): 1 task(s)" in result.output
    assert "run it again" in result.output


def test_prefetch_help_documents_its_exit_status():
    text = invoke("prefetch", "--help").output
    assert "Exit status" in text and "3  everything obtainable is cached" in text


def test_prefetch_against_a_mirror_checks_it_without_network(hub_scenario, tmp_path):
    target = tmp_path / "m"
    write_mirror(target, ["eval"])
    hub_scenario.hub.stop()
    hub_scenario.hub.reset_log()
    result = invoke("prefetch", "--split", "eval", "--mirror", str(target))
    assert result.exit_code == 3, result.output  # RETURNS lacks its table: a data defect
    assert "tasks ready: 5 of 6" in result.output
    assert hub_scenario.hub.requests == []


def test_prefetch_of_an_unknown_split_is_a_clean_error(hub_scenario):
    result = invoke("prefetch", "--split", "validation")
    assert result.exit_code != 0 and "unknown split" in result.output


def test_cache_info_and_clear(hub_scenario, data_env):
    invoke("prefetch", "--split", "test")
    info = json.loads(invoke("cache", "info", "--json").output)
    assert info["root"] == str(data_env.cache)
    assert info["table_files"] == 2 and info["prefixes"] == 2
    expected = sum(
        len(hub_scenario.tables[k])
        for k in (("acme__survey", "survey.csv"), ("acme__retail", "orders.csv"))
    )
    assert info["table_bytes"] == expected
    assert info["hub_files"] >= 1
    text = invoke("cache", "info").output
    assert "tables: 2 files" in text
    cleared = invoke("cache", "clear", "--tables", "--yes")
    assert cleared.exit_code == 0
    after = json.loads(invoke("cache", "info", "--json").output)
    assert after["table_files"] == 0 and after["hub_files"] == info["hub_files"]
    invoke("cache", "clear", "--yes")
    assert json.loads(invoke("cache", "info", "--json").output)["hub_files"] == 0


def test_the_sample_can_be_mirrored_and_read_back(data_env, tmp_path):
    target = tmp_path / "sample-mirror"
    summary = write_mirror(target, ["sample"])
    assert summary.splits == {"sample": 10}
    records = load_tasks("sample", mirror=target)  # "sample" still means the bundled one
    assert mirror_source(target).load_tasks("sample") == records
    assert verify_mirror(target) == []


def test_leftovers_of_an_interrupted_copy_are_not_taken_as_tables(hub_scenario, tmp_path):
    target = tmp_path / "m"
    write_mirror(target, ["eval"])
    leftover = target / "buckets/testowner/kaggle-tables/acme__sales/.sales.csv.x1y2z3"
    leftover.write_bytes(b"half a file")
    [sales] = load_tasks("eval", mirror=target, task_ids="t/0003/sales.ipynb_qa_1")
    names = sorted(t.name for t in resolve_tables(sales, mirror=target).files)
    assert names == ["regions.csv", "sales.csv"]


def test_a_destination_that_cannot_be_written_is_one_line_before_any_copy(data_env, tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder\n")
    for dest, why in [
        ("/proc/smoldataenvs-mirror", "No such file or directory"),
        (str(in_the_way / "mirror"), "Not a directory"),
    ]:
        result = invoke("mirror", "--split", "sample", dest)
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == [
            f"Error: cannot write the mirror into {dest}: {why}"
        ]
    # The Python API raises the package's own error, which is also a ValueError.
    with pytest.raises(MirrorDestinationError) as refused:
        write_mirror(in_the_way / "mirror", ["sample"])
    assert isinstance(refused.value, ValueError)
    assert in_the_way.read_text() == "not a folder\n"
