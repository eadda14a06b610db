"""Rows from the Hub cache, a mirror or the sample: precedence, filters, offline behaviour."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from smoldataenvs_tasks._pins import DATASET_REPO_ID, DATASET_REVISION
from smoldataenvs_tasks.data.kinds import load_tasks, mirror_source, resolve_source
from smoldataenvs_tasks.data.rows import InvalidRowWarning, UnknownRewardModeWarning
from smoldataenvs_tasks.data.source import SAMPLE_DIR, SourceError


def test_first_load_downloads_the_pinned_parquet_with_hf_hub_download(hub_scenario, data_env):
    records = load_tasks("eval")
    assert [r.task_id for r in records] == [row["task_id"] for row in hub_scenario.splits["eval"]]
    route = hub_scenario.hub.dataset_route(DATASET_REPO_ID, "data/eval-00000-of-00001.parquet")
    assert hub_scenario.hub.count("GET", route) == 1
    assert DATASET_REVISION in route
    # hf_hub_download's own cache layout, under our cache dir
    cached = list((data_env.cache / "hub").rglob("eval-00000-of-00001.parquet"))
    assert cached and f"snapshots/{DATASET_REVISION}" in cached[0].as_posix()


def test_second_load_makes_no_network_call_even_with_the_server_stopped(hub_scenario):
    first = load_tasks("eval")
    hub_scenario.hub.stop()
    hub_scenario.hub.reset_log()
    again = load_tasks("eval")
    assert again == first
    assert hub_scenario.hub.requests == []


def test_offline_with_nothing_cached_is_a_clear_error(hub_scenario, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SourceError, match="not in the cache and offline mode is on"):
        load_tasks("test")
    assert hub_scenario.hub.requests == []


def test_offline_after_a_fetch_reads_the_cache(hub_scenario, monkeypatch):
    expected = load_tasks("test")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_tasks("test") == expected


def test_revision_override_is_used_for_the_download(hub_scenario):
    other = "1" * 40
    hub_scenario.hub.add_dataset_file(
        DATASET_REPO_ID,
        "data/eval-00000-of-00001.parquet",
        hub_scenario.hub.add_dataset_split("eval", hub_scenario.splits["eval"][:2]),
        commit=other,
    )
    records = load_tasks("eval", revision=other)
    assert len(records) == 2
    assert resolve_source("eval", revision=other).revision == other
    with pytest.raises(SourceError, match="not found"):
        load_tasks("eval", revision="2" * 40)


def test_unknown_split_is_refused():
    with pytest.raises(SourceError, match="unknown split"):
        resolve_source("validation")


def test_sample_split_always_means_the_bundled_mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_MIRROR", str(tmp_path))
    source = resolve_source("sample", mirror=tmp_path)
    assert source.kind == "sample"
    assert source.root == SAMPLE_DIR


def test_precedence_explicit_mirror_over_env_over_hub(tmp_path, monkeypatch):
    for name in ("explicit", "from-env"):
        (tmp_path / name / "data").mkdir(parents=True)
        (tmp_path / name / "manifest.json").write_text(
            f'{{"revision": "{name}"}}', encoding="utf-8"
        )
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    assert resolve_source("eval").kind == "hub"
    monkeypatch.setenv("SMOLDATAENVS_MIRROR", str(tmp_path / "from-env"))
    assert resolve_source("eval").revision == "from-env"
    chosen = resolve_source("eval", mirror=tmp_path / "explicit")
    assert (chosen.kind, chosen.revision) == ("mirror", "explicit")


def test_mirror_without_manifest_or_split_is_a_clear_error(tmp_path):
    (tmp_path / "data").mkdir()
    with pytest.raises(SourceError, match=r"no manifest\.json"):
        mirror_source(tmp_path)
    (tmp_path / "manifest.json").write_text('{"revision": "abc"}', encoding="utf-8")
    with pytest.raises(SourceError, match="has no split 'test'"):
        mirror_source(tmp_path).load_tasks("test")
    with pytest.raises(SourceError, match="does not exist"):
        mirror_source(tmp_path / "nope")


def test_mirror_revision_must_match_a_requested_revision(tmp_path):
    (tmp_path / "manifest.json").write_text('{"revision": "abc"}', encoding="utf-8")
    with pytest.raises(SourceError, match="holds revision abc"):
        resolve_source("eval", mirror=tmp_path, revision="def")


def test_filters_accept_lists_and_comma_strings(hub_scenario):
    by_list = load_tasks("eval", tiers=["easy", "hard"])
    by_string = load_tasks("eval", tiers="easy,hard")
    by_single = load_tasks("eval", tiers="hard")
    assert [r.task_id for r in by_list] == [r.task_id for r in by_string]
    assert {r.difficulty_tier for r in by_list} == {"easy", "hard"}
    assert [r.task_id for r in by_single] == ["t/0004/big.ipynb_qa_1"]
    assert [r.task_id for r in load_tasks("eval", reward_modes="list")] == [
        "t/0003/sales.ipynb_qa_1"
    ]
    assert [r.task_id for r in load_tasks("eval", reward_modes="empty")] == [
        "t/0005/survey.ipynb_qa_1"
    ]
    assert [r.task_id for r in load_tasks("eval", reward_modes=[""])] == [
        "t/0005/survey.ipynb_qa_1"
    ]
    ids = "t/0002/returns.ipynb_qa_1,t/0001/orders.ipynb_qa_1"
    assert [r.task_id for r in load_tasks("eval", task_ids=ids)] == [
        "t/0001/orders.ipynb_qa_1",
        "t/0002/returns.ipynb_qa_1",
    ]


def test_filter_typos_are_errors_not_empty_runs(hub_scenario):
    with pytest.raises(ValueError, match="unknown tier"):
        load_tasks("eval", tiers="hrad")
    with pytest.raises(ValueError, match="not in this split"):
        load_tasks("eval", task_ids=["t/9999/nope_qa_1"])


def test_a_split_with_a_malicious_row_keeps_the_other_rows_and_names_it(fake_hub, data_env):
    fake_hub.add_dataset_split(
        "eval",
        [
            {"task_id": "good", "question": "q", "answer": "1", "files": ["a.csv"]},
            {"task_id": "evil", "question": "q", "answer": "1", "files": ["../../x"]},
        ],
        commit=DATASET_REVISION,
    )
    with pytest.warns(InvalidRowWarning, match="evil"):
        good, evil = load_tasks("eval")
    assert (good.task_id, good.invalid_row, good.files) == ("good", None, ("a.csv",))
    assert evil.task_id == "evil" and "bare name" in evil.invalid_row and evil.files == ()


def test_duplicate_task_ids_become_one_invalid_record(fake_hub, data_env):
    fake_hub.add_dataset_split(
        "test",
        [{"task_id": "same", "question": "q", "answer": "1"}] * 2,
        commit=DATASET_REVISION,
    )
    with pytest.warns(InvalidRowWarning, match="duplicate"):
        [record] = load_tasks("test")
    assert record.task_id == "same" and "rows 1, 2" in record.invalid_row


def test_unknown_reward_modes_warn_once_per_mode_per_split(fake_hub, data_env):
    rows = [
        {"task_id": f"t{i}", "question": "q", "answer": "1", "reward_mode": "fuzzy"}
        for i in range(50)
    ]
    fake_hub.add_dataset_split("train", rows, commit=DATASET_REVISION)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = load_tasks("train")
    relevant = [w for w in caught if issubclass(w.category, UnknownRewardModeWarning)]
    assert len(records) == 50
    assert len(relevant) == 1
    assert "50 task(s)" in str(relevant[0].message)


def test_describe_names_the_source(hub_scenario):
    assert DATASET_REVISION in resolve_source("eval").describe()
    assert "sample" in resolve_source("sample").describe()


def test_sample_dir_is_inside_the_package():
    assert SAMPLE_DIR == Path(__file__).resolve().parents[2] / "smoldataenvs_tasks" / "sample"
