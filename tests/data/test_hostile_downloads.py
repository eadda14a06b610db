"""A bucket that lies, changes, truncates, trickles or rate-limits cannot hang a download or
`prefetch`, and `prefetch` tells the truth about what it got (issue 13, items 8 to 10).

Real huggingface_hub calls against the fake Hub (tests/fakehub.py); the retry waits are shrunk
through the same environment variables an operator would use.
"""

from __future__ import annotations

import email.utils
import json
import time

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.data.hub import RetryPolicy, retry_after_seconds
from smoldataenvs_tasks.data.kinds import resolve_tables
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.tables import prefix_listing
from tests.fakehub_fixtures import Scenario

SURVEY = "t/0005/survey.ipynb_qa_1"
ORDERS = "t/0001/orders.ipynb_qa_1"
SURVEY_PATH = "acme__survey/survey.csv"
ORDERS_PATH = "acme__retail/orders.csv"


def task(scenario: Scenario, task_id: str) -> TaskRecord:
    return TaskRecord.from_doc(scenario.task(task_id))


def gets(scenario: Scenario, path: str) -> list:
    route = scenario.hub.bucket_route(Scenario.BUCKET, path)
    return [r for r in scenario.hub.requests if r.method == "GET" and r.path == route]


def tree_gets(scenario: Scenario, prefix: str) -> int:
    return scenario.hub.count("GET", scenario.tree_route(prefix))


# --- item 8: sizes that never match -------------------------------------------------------------


def test_a_file_changed_after_its_listing_is_fetched_after_one_refresh(hub_scenario):
    prefix_listing(ContentCache(), Scenario.BUCKET, "acme__survey", offline=False)
    changed = hub_scenario.tables[("acme__survey", "survey.csv")] + b"999,99,yes\n"
    hub_scenario.hub.add_bucket_file(Scenario.BUCKET, SURVEY_PATH, changed)
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == changed
    assert tree_gets(hub_scenario, "acme__survey") == 2  # the first listing and one refresh
    assert len(gets(hub_scenario, SURVEY_PATH)) == 2


def test_a_listing_that_declares_2_gb_gives_up_after_one_refresh(hub_scenario):
    hub_scenario.hub.declare_size(Scenario.BUCKET, SURVEY_PATH, 2_000_000_000)
    served = len(hub_scenario.tables[("acme__survey", "survey.csv")])
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert result.error == (
        f"survey.csv: the bucket serves {served} bytes but its listing says 2000000000, also "
        "after listing the prefix again: the file is changing or its listing is wrong; try "
        "again later"
    )
    assert tree_gets(hub_scenario, "acme__survey") == 2
    assert len(gets(hub_scenario, SURVEY_PATH)) == 2  # one per listing, no loop
    assert not ContentCache().file_path(Scenario.BUCKET, "acme__survey", "survey.csv").exists()


def test_a_file_that_changes_after_every_listing_gives_up(hub_scenario):
    hub_scenario.hub.mutate_after_listing(Scenario.BUCKET, SURVEY_PATH)
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert not result.available
    assert "also after listing the prefix again" in result.error
    assert tree_gets(hub_scenario, "acme__survey") == 2
    assert len(gets(hub_scenario, SURVEY_PATH)) == 2


def test_a_server_ignoring_range_and_cutting_at_the_same_byte_gives_up(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "3")
    hub_scenario.hub.ignore_range = True
    hub_scenario.hub.cut(hub_scenario.route("acme__retail", "orders.csv"), 50_000, times=None)
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert not result.available
    assert result.error.startswith("orders.csv: gave up after 4 attempts in a row without progress")
    # the first attempt got 50 kB; each later one restarted at 0 and stopped at the same byte
    assert len(gets(hub_scenario, ORDERS_PATH)) == 5


def test_a_truncating_server_that_resumes_still_completes(hub_scenario, monkeypatch):
    # the same cut, but the server honours Range: every attempt is net progress
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "1")
    expected = hub_scenario.tables[("acme__retail", "orders.csv")]
    hub_scenario.hub.cut(hub_scenario.route("acme__retail", "orders.csv"), 100_000, times=4)
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert result.available, result.error
    assert result.files[0].path.read_bytes() == expected


# --- item 9: Retry-After, trickles, deadlines -------------------------------------------------


def test_retry_after_is_parsed_as_seconds_or_a_date_and_bounded():
    assert retry_after_seconds({"Retry-After": "20"}) == 20
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, now=1_000_000) == 30
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None
    policy = RetryPolicy(base_wait_s=1.0, retry_after_max_s=60.0)
    assert policy.wait(1, 20.0) == 20.0  # not the 1 s backoff
    assert policy.wait(1, 3600.0) == 60.0  # bounded
    assert policy.wait(5, 2.0) == 16.0  # never shorter than the backoff


def test_a_429_with_retry_after_is_waited_out(hub_scenario):
    route = hub_scenario.route("acme__survey", "survey.csv")
    hub_scenario.hub.rate_limit(route, "1", times=1)
    result = resolve_tables(task(hub_scenario, SURVEY))  # backoff is 0.02 s in data_env
    assert result.available, result.error
    first, second = gets(hub_scenario, SURVEY_PATH)
    assert (first.status, second.status) == (429, 200)
    assert second.started_at - first.finished_at >= 0.9  # the server's wish, not the backoff


def test_a_retry_after_of_an_hour_is_capped(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_RETRY_AFTER_MAX_S", "0.2")
    route = hub_scenario.route("acme__survey", "survey.csv")
    hub_scenario.hub.rate_limit(route, "3600", times=2)
    started = time.monotonic()
    result = resolve_tables(task(hub_scenario, SURVEY))
    assert result.available, result.error
    assert time.monotonic() - started < 60  # not the hour the server asked for
    assert [r.status for r in gets(hub_scenario, SURVEY_PATH)] == [429, 429, 200]


def test_a_trickling_server_is_given_up_on_with_the_reason(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "2")
    monkeypatch.setenv("SMOLDATAENVS_MIN_DOWNLOAD_BPS", "100000")
    monkeypatch.setenv("SMOLDATAENVS_THROUGHPUT_WINDOW_S", "0.3")
    route = hub_scenario.route("acme__retail", "orders.csv")
    hub_scenario.hub.throttle(route, chunk=256, pause_s=0.02)  # ~12 kB/s: a trickle
    result = resolve_tables(task(hub_scenario, ORDERS))
    assert not result.available
    assert "gave up after 3 attempts" in result.error and "too slow" in result.error
    assert "SMOLDATAENVS_MIN_DOWNLOAD_BPS" in result.error
    assert len(gets(hub_scenario, ORDERS_PATH)) == 3
    # each attempt resumed where the last one stopped: the bytes that came are kept
    part = ContentCache().file_path(Scenario.BUCKET, "acme__retail", "orders.csv.part")
    assert part.stat().st_size > 0


def test_a_download_past_its_deadline_gives_up(hub_scenario, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_DOWNLOAD_DEADLINE_S", "0.5")
    monkeypatch.setenv("SMOLDATAENVS_MIN_DOWNLOAD_BPS", "1000")
    route = hub_scenario.route("acme__big", "big.csv")
    hub_scenario.hub.throttle(route, chunk=8192, pause_s=0.02)  # fast enough, but 2.5 MB
    big = task(hub_scenario, "t/0004/big.ipynb_qa_1")
    result = resolve_tables(big)
    assert not result.available
    assert "within the 0.5 s deadline" in result.error
    assert len(gets(hub_scenario, "acme__big/big.csv")) == 1


# --- item 10: prefetch tells the truth --------------------------------------------------------


def test_prefetch_exits_nonzero_names_each_file_once_and_counts_accepted_bytes(
    hub_scenario, data_env
):
    # survey.csv changes after it was listed, keeping its size: every download is rejected
    prefix_listing(ContentCache(), Scenario.BUCKET, "acme__survey", offline=False)
    original = hub_scenario.tables[("acme__survey", "survey.csv")]
    hub_scenario.hub.add_bucket_file(Scenario.BUCKET, SURVEY_PATH, original[:-2] + b"7\n")
    result = CliRunner().invoke(main, ["prefetch", "--split", "test"])
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if "survey.csv" in line]
    assert line.count("survey.csv") == 1, line
    orders = len(hub_scenario.tables[("acme__retail", "orders.csv")])
    as_json = CliRunner().invoke(main, ["prefetch", "--split", "test", "--json"])
    assert as_json.exit_code == 1
    summary = json.loads(as_json.stdout)["test"]
    assert summary["files_downloaded"] == 0 and summary["bytes_downloaded"] == 0  # all cached
    assert list(summary["missing"]) == ["t/0005/survey.ipynb_qa_2"]
    # the first run downloaded orders.csv (accepted) and survey.csv twice (rejected)
    assert f"1 downloaded ({orders / 1e6:.2f} MB)" in result.output


def test_prefetch_of_everything_exits_zero(hub_scenario):
    result = CliRunner().invoke(main, ["prefetch", "--split", "test"])
    assert result.exit_code == 0, result.output
    assert "tasks ready: 2 of 2" in result.output


@pytest.mark.parametrize("status", [404, 503])
def test_prefetch_of_a_table_that_fails_exits_nonzero(hub_scenario, monkeypatch, status):
    monkeypatch.setenv("SMOLDATAENVS_HTTP_RETRIES", "1")
    hub_scenario.hub.fail(hub_scenario.route("acme__survey", "survey.csv"), status)
    result = CliRunner().invoke(main, ["prefetch", "--split", "test"])
    assert result.exit_code == 1
    assert "tasks ready: 1 of 2" in result.output
    assert "1 task(s) lack tables" in result.output
