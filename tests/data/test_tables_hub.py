"""Tables through the real download code against the fake Hub (HF_ENDPOINT=127.0.0.1:<port>)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.data.kinds import load_tasks, resolve_source, resolve_tables
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.tables import tables_manifest_digest
from tests.fakehub_fixtures import Scenario

REPO_ROOT = Path(__file__).resolve().parents[2]
ORDERS = "t/0001/orders.ipynb_qa_1"
ORDERS_AND_CUSTOMERS = "t/0001/orders.ipynb_qa_2"
RETURNS = "t/0002/returns.ipynb_qa_1"
SALES_ALL = "t/0003/sales.ipynb_qa_1"
BIG = "t/0004/big.ipynb_qa_1"
SURVEY = "t/0005/survey.ipynb_qa_1"


def task(scenario: Scenario, task_id: str) -> TaskRecord:
    return TaskRecord.from_doc(scenario.task(task_id))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_gets(scenario: Scenario, prefix: str) -> int:
    return scenario.hub.count("GET", scenario.tree_route(prefix))


def test_first_fetch_lists_once_downloads_and_records_the_manifest(hub_scenario, data_env):
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert result.available, result.error
    [table] = result.files
    expected = hub_scenario.tables[("acme__retail", "orders.csv")]
    assert table.name == "orders.csv"
    assert table.remote_path == "acme__retail/orders.csv"
    assert table.path.read_bytes() == expected
    assert table.sha256 == sha(expected)
    assert table.size == len(expected)
    assert table.path.is_relative_to(data_env.cache)
    assert not os.access(table.path, os.W_OK) or os.geteuid() == 0
    assert (table.path.stat().st_mode & 0o222) == 0  # read-only
    manifest = ContentCache().load_manifest(Scenario.BUCKET, "acme__retail")
    assert manifest["files"]["orders.csv"]["sha256"] == sha(expected)
    assert manifest["files"]["orders.csv"]["fetched_at"]
    assert {e["path"] for e in manifest["listing"]} == {
        "orders.csv",
        "old/deep/orders.csv",
        "extra/customers.csv",
    }
    assert tree_gets(hub_scenario, "acme__retail") == 1
    assert hub_scenario.hub.count("GET", hub_scenario.route("acme__retail", "orders.csv")) == 1


def test_second_run_with_the_server_stopped_makes_no_network_call(hub_scenario):
    records = load_tasks("eval")
    first = {r.task_id: resolve_tables(r) for r in records}
    hub_scenario.hub.stop()
    hub_scenario.hub.reset_log()
    started = time.monotonic()
    again_records = load_tasks("eval")
    again = {r.task_id: resolve_tables(r) for r in again_records}
    assert time.monotonic() - started < 5  # no retry loops against a dead server either
    assert again_records == records
    assert again == first
    assert again[ORDERS].available and not again[RETURNS].available
    assert hub_scenario.hub.requests == []


def test_a_404_table_makes_the_task_ungraded_with_a_reason(hub_scenario):
    hub_scenario.hub.fail(hub_scenario.route("acme__survey", "survey.csv"), 404)
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert not result.available
    assert result.error == "survey.csv: 404 from bucket"
    assert not ContentCache().file_path(Scenario.BUCKET, "acme__survey", "survey.csv").exists()
    # a 4xx is not retried
    assert hub_scenario.hub.count("GET", hub_scenario.route("acme__survey", "survey.csv")) == 1


def test_a_table_missing_from_the_listing_is_not_found(hub_scenario):
    result = resolve_tables(task(hub_scenario, RETURNS))
    assert result.error == "returns.csv: not found under prefix 'acme__retail'"


def test_500_then_success_is_retried(hub_scenario):
    route = hub_scenario.route("acme__survey", "survey.csv")
    hub_scenario.hub.fail(route, 500, times=2)
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == hub_scenario.tables[("acme__survey", "survey.csv")]
    assert [r.status for r in hub_scenario.hub.requests if r.path == route] == [500, 500, 200]


def test_503_forever_gives_up_with_a_reason(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "2")
    route = hub_scenario.route("acme__survey", "survey.csv")
    hub_scenario.hub.fail(route, 503)
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert result.error is not None and "survey.csv" in result.error and "503" in result.error
    assert hub_scenario.hub.count("GET", route) == 3


def test_a_connection_cut_mid_file_is_resumed_with_a_range_request(hub_scenario):
    route = hub_scenario.route("acme__retail", "orders.csv")
    expected = hub_scenario.tables[("acme__retail", "orders.csv")]
    hub_scenario.hub.cut(route, after_bytes=200_000, times=1)
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == expected
    gets = [r for r in hub_scenario.hub.requests if r.path == route]
    assert len(gets) == 2
    assert gets[0].range is None and gets[0].body_bytes == 200_000
    offset = int(gets[1].range.removeprefix("bytes=").rstrip("-"))
    assert 0 < offset <= 200_000
    assert gets[1].status == 206


def test_persistent_cuts_leave_no_corrupt_entry_and_the_next_run_completes(
    hub_scenario, monkeypatch
):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "1")
    route = hub_scenario.route("acme__retail", "orders.csv")
    expected = hub_scenario.tables[("acme__retail", "orders.csv")]
    # every attempt delivers nothing new past the first 100 kB... then the network dies
    hub_scenario.hub.cut(route, after_bytes=100_000, times=1)
    hub_scenario.hub.fail(route, 502)
    failed = resolve_tables(task(hub_scenario, ORDERS))
    assert not failed.available
    cache = ContentCache()
    final = cache.file_path(Scenario.BUCKET, "acme__retail", "orders.csv")
    assert not final.exists()  # no corrupt cache entry
    part = final.with_name("orders.csv.part")
    assert 0 < part.stat().st_size < len(expected)
    kept = part.stat().st_size
    assert expected.startswith(part.read_bytes())

    hub_scenario.hub.clear_faults()
    hub_scenario.hub.reset_log()
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == expected
    [get] = [r for r in hub_scenario.hub.requests if r.path == route]
    assert get.range == f"bytes={kept}-"
    assert get.body_bytes == len(expected) - kept
    assert not part.exists()


def test_a_server_ignoring_range_restarts_the_file_cleanly(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "1")
    route = hub_scenario.route("acme__retail", "orders.csv")
    expected = hub_scenario.tables[("acme__retail", "orders.csv")]
    hub_scenario.hub.cut(route, after_bytes=150_000, times=1)
    hub_scenario.hub.fail(route, 502)
    assert not resolve_tables(task(hub_scenario, ORDERS)).available
    hub_scenario.hub.clear_faults()
    hub_scenario.hub.ignore_range = True  # the resume request gets the whole file with 200
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == expected
    last = [r for r in hub_scenario.hub.requests if r.path == route][-1]
    assert last.range is not None and last.status == 200


def _python(code: str, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_RESOLVE_BIG = f"""
from smoldataenvs_tasks.data.kinds import load_tasks, resolve_tables
[task] = load_tasks("eval", task_ids="{BIG}")
print(resolve_tables(task).error)
"""


@pytest.mark.slow
def test_a_download_killed_mid_file_is_resumed_by_the_next_process(hub_scenario, data_env):
    route = hub_scenario.route("acme__big", "big.csv")
    expected = hub_scenario.tables[("acme__big", "big.csv")]
    hub_scenario.hub.throttle(route, chunk=32_768, pause_s=0.05, times=1)
    child = _python(_RESOLVE_BIG, data_env.env(HF_ENDPOINT=hub_scenario.hub.endpoint))
    part = (
        ContentCache().file_path(Scenario.BUCKET, "acme__big", "big.csv").with_name("big.csv.part")
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not part.exists() or part.stat().st_size < 200_000):
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    kept = part.stat().st_size
    assert 0 < kept < len(expected)

    hub_scenario.hub.reset_log()
    result = resolve_tables(task(hub_scenario, BIG))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == expected
    [get] = [r for r in hub_scenario.hub.requests if r.path == route]
    resumed_from = int(get.range.removeprefix("bytes=").rstrip("-"))
    assert resumed_from >= kept  # bytes already on disk are not downloaded again


_PREFETCH = """
import json, os, sys, time
from smoldataenvs_tasks.data.prefetch import prefetch_tasks
from smoldataenvs_tasks.data.kinds import resolve_source
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):  # start together, whatever the import times
    time.sleep(0.005)
print(time.time(), flush=True)
source = resolve_source("eval")
tasks = [t for t in source.load_tasks("eval") if t.bucket_prefix == "acme__retail"]
print(json.dumps(prefetch_tasks(tasks, source=source, jobs=2).to_dict()))
"""


@pytest.mark.slow
def test_two_processes_prefetching_one_prefix_download_each_file_once(hub_scenario, data_env):
    routes = [
        hub_scenario.route("acme__retail", "orders.csv"),
        hub_scenario.route("acme__retail", "extra/customers.csv"),
    ]
    for route in routes:
        hub_scenario.hub.throttle(route, chunk=16_384, pause_s=0.05)
    env = data_env.env(HF_ENDPOINT=hub_scenario.hub.endpoint)
    go = data_env.root / "go"
    children = [_python(_PREFETCH, env, str(go)) for _ in range(2)]
    for child in children:
        assert child.stdout.readline().strip() == "ready"
    go.touch()
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (_out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
    summaries = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    for summary in summaries:
        assert summary["ready"] == 2
        assert list(summary["defects"]) == [RETURNS] and summary["missing"] == {}
    for route in routes:
        assert hub_scenario.hub.count("GET", route) == 1, route
    assert sum(s["files_downloaded"] for s in summaries) == 2
    # both processes were running while the download was in flight: one of them waited
    starts = [float(out.splitlines()[0]) for out, _ in outputs]  # ("ready" was read above)
    [orders_get] = [r for r in hub_scenario.hub.requests if r.path == routes[0]]
    assert max(starts) < orders_get.finished_at
    cache = ContentCache()
    for path in ("orders.csv", "extra/customers.csv"):
        on_disk = cache.file_path(Scenario.BUCKET, "acme__retail", path).read_bytes()
        assert on_disk == hub_scenario.tables[("acme__retail", path)]


def test_a_prefix_shared_by_several_tasks_is_listed_and_downloaded_once(hub_scenario):
    tasks = [task(hub_scenario, ORDERS), task(hub_scenario, ORDERS_AND_CUSTOMERS)] * 3
    hub_scenario.hub.throttle(hub_scenario.route("acme__retail", "orders.csv"), pause_s=0.001)
    results: list = [None] * len(tasks)

    def run(index: int) -> None:
        results[index] = resolve_tables(tasks[index])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.available for r in results), [r.error for r in results]
    assert tree_gets(hub_scenario, "acme__retail") == 1
    assert hub_scenario.hub.count("GET", hub_scenario.route("acme__retail", "orders.csv")) == 1
    route = hub_scenario.route("acme__retail", "extra/customers.csv")
    assert hub_scenario.hub.count("GET", route) == 1
    assert len({str(r.files[0].path) for r in results}) == 1


def test_a_file_in_a_sub_folder_is_found_by_base_name_and_the_shallowest_wins(hub_scenario):
    result = resolve_tables(task(hub_scenario, ORDERS_AND_CUSTOMERS))
    assert result.available, result.error
    by_name = {t.name: t for t in result.files}
    assert by_name["customers.csv"].remote_path == "acme__retail/extra/customers.csv"
    assert (
        by_name["customers.csv"].path.read_bytes()
        == hub_scenario.tables[("acme__retail", "extra/customers.csv")]
    )
    # old/deep/orders.csv has the same base name but lies deeper
    assert by_name["orders.csv"].remote_path == "acme__retail/orders.csv"
    route = hub_scenario.route("acme__retail", "old/deep/orders.csv")
    assert hub_scenario.hub.count("GET", route) == 0


def test_empty_files_take_every_file_of_the_prefix_and_never_a_look_alike_prefix(hub_scenario):
    # a server matching bare string prefixes would also list acme__salesdb/...
    hub_scenario.hub.sloppy_tree_prefix = True
    result = resolve_tables(task(hub_scenario, SALES_ALL))
    assert result.available, result.error
    assert sorted(t.name for t in result.files) == ["regions.csv", "sales.csv"]
    assert all(t.remote_path.startswith("acme__sales/") for t in result.files)


def test_the_listing_follows_pagination(hub_scenario):
    hub_scenario.hub.page_size = 1
    result = resolve_tables(task(hub_scenario, ORDERS_AND_CUSTOMERS))
    assert result.available, result.error
    assert tree_gets(hub_scenario, "acme__retail") == 3


def test_max_file_bytes_reports_the_size_and_downloads_nothing(hub_scenario):
    big = task(hub_scenario, BIG)
    result = resolve_tables(big, max_file_bytes=1_000_000)
    size_mb = len(hub_scenario.tables[("acme__big", "big.csv")]) / 1e6
    assert result.error == f"big.csv: {size_mb:.0f} MB over --max-file-mb 1"
    assert hub_scenario.hub.count("GET", hub_scenario.route("acme__big", "big.csv")) == 0


def test_bytes_that_disagree_with_the_listing_never_enter_the_cache(hub_scenario):
    survey = task(hub_scenario, SURVEY)
    route = hub_scenario.route("acme__survey", "survey.csv")
    original = hub_scenario.tables[("acme__survey", "survey.csv")]
    source = resolve_source("eval")
    # list first, then the bucket changes under us (same size, other bytes)
    from smoldataenvs_tasks.data.tables import prefix_listing

    prefix_listing(ContentCache(), Scenario.BUCKET, "acme__survey", offline=False)
    tampered = original[:-2] + b"9\n"
    hub_scenario.hub.add_bucket_file(Scenario.BUCKET, "acme__survey/survey.csv", tampered)
    result = resolve_tables(survey, source=source)
    assert result.error is not None and "differs from the listing" in result.error
    final = ContentCache().file_path(Scenario.BUCKET, "acme__survey", "survey.csv")
    assert not final.exists() and not final.with_name("survey.csv.part").exists()
    assert hub_scenario.hub.count("GET", route) == 2  # a second, clean attempt before giving up


def test_offline_resolution_serves_the_cache_and_names_what_is_missing(hub_scenario, monkeypatch):
    assert resolve_tables(task(hub_scenario, ORDERS)).available
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_scenario.hub.reset_log()
    assert resolve_tables(task(hub_scenario, ORDERS)).available
    missing = resolve_tables(task(hub_scenario, ORDERS_AND_CUSTOMERS))
    assert missing.error == (
        "customers.csv: not in the cache and the Hub is offline; "
        "run `smoldataenvs prefetch` with network first"
    )
    never_listed = resolve_tables(task(hub_scenario, SURVEY))
    assert "not in the cache and the Hub is offline" in never_listed.error
    assert hub_scenario.hub.requests == []


def test_listing_paths_that_would_escape_are_dropped(hub_scenario):
    hub_scenario.hub.add_bucket_file(Scenario.BUCKET, "acme__evil/../escape.csv", b"x\n")
    hub_scenario.hub.add_bucket_file(Scenario.BUCKET, "acme__evil/fine.csv", b"y\n")
    evil = TaskRecord(
        task_id="evil",
        question="q",
        answer="1",
        hf_bucket=Scenario.BUCKET,
        bucket_prefix="acme__evil",
    )
    result = resolve_tables(evil)
    assert [t.name for t in result.files] == ["fine.csv"]
    assert not (ContentCache().root / "buckets" / "testowner" / "escape.csv").exists()


def test_an_unknown_bucket_is_a_clear_error(hub_scenario):
    ghost = TaskRecord(
        task_id="ghost",
        question="q",
        answer="1",
        files=("a.csv",),
        hf_bucket="nobody/nothing",
        bucket_prefix="x__y",
    )
    assert "bucket 'nobody/nothing' not found" in resolve_tables(ghost).error


def test_manifest_digest_is_stable_and_changes_with_the_bytes(hub_scenario):
    tasks = [task(hub_scenario, ORDERS), task(hub_scenario, SURVEY)]
    assert tables_manifest_digest(tasks, resolve_source("eval")) is None  # nothing fetched
    for t in tasks:
        resolve_tables(t)
    first = tables_manifest_digest(tasks, resolve_source("eval"))
    assert first is not None and len(first) == 64
    assert tables_manifest_digest(list(reversed(tasks)), resolve_source("eval")) == first
    hub_scenario.hub.add_bucket_file(
        Scenario.BUCKET, "acme__survey/survey.csv", b"respondent,age\n1,2\n"
    )
    from smoldataenvs_tasks.data.tables import prefix_listing

    prefix_listing(ContentCache(), Scenario.BUCKET, "acme__survey", offline=False, refresh=True)
    refreshed = resolve_tables(tasks[1])
    assert refreshed.files[0].path.read_bytes() == b"respondent,age\n1,2\n"
    assert tables_manifest_digest(tasks, resolve_source("eval")) != first


def test_a_row_without_prefix_is_ungraded_not_a_crash(hub_scenario):
    bare = TaskRecord(task_id="bare", question="q", answer="1", files=("a.csv",))
    assert resolve_tables(bare).error == "the row has no bucket_prefix, so no tables"


@pytest.mark.parametrize("jobs", [1, 4])
def test_prefetch_in_process_reports_ready_missing_and_skipped(hub_scenario, jobs):
    from smoldataenvs_tasks.data.prefetch import prefetch_tasks

    source = resolve_source("eval")
    summary = prefetch_tasks(
        source.load_tasks("eval"), source=source, jobs=jobs, max_file_bytes=1_000_000
    )
    assert summary.tasks == 6
    assert summary.ready == 4
    assert list(summary.defects) == [RETURNS] and not summary.missing  # the data's own defect
    assert list(summary.skipped) == [BIG]
    assert summary.files == 5 and summary.files_downloaded == 5
    # the skip is remembered: a later eval reports the task ungraded with that reason
    later = resolve_tables(task(hub_scenario, BIG))
    assert later.error is not None and later.error.endswith("(skipped by prefetch)")
    assert hub_scenario.hub.count("GET", hub_scenario.route("acme__big", "big.csv")) == 0
    # prefetching again without the cap fetches it and forgets the skip
    again = prefetch_tasks([task(hub_scenario, BIG)], source=source, jobs=jobs)
    assert again.ready == 1 and again.files_downloaded == 1
    assert resolve_tables(task(hub_scenario, BIG)).available
