"""The bundled `sample` split: loads offline, covers the benchmark's shapes, gold replies are right."""

from __future__ import annotations

import itertools
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

from smoldataenvs_tasks._pins import KNOWN_REWARD_MODES, TIERS
from smoldataenvs_tasks.data import prompts
from smoldataenvs_tasks.data.kinds import load_tasks, resolve_source, resolve_tables
from smoldataenvs_tasks.data.source import SAMPLE_BUCKET, SAMPLE_DIR
from smoldataenvs_tasks.data.staging import new_stage_dir, stage_tables
from smoldataenvs_tasks.data.tables import tables_manifest_digest
from smoldataenvs_tasks.sample import _build_sample as builder

MISSING = "sample/0009/returns.ipynb_qa_1"


def replay(name: str) -> list[dict]:
    lines = (SAMPLE_DIR / "replays" / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def records():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown modes, nothing odd
        return load_tasks("sample")


def test_the_sample_loads_offline_and_validates(records, data_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    assert load_tasks("sample") == records
    assert 8 <= len(records) <= 12
    source = resolve_source("sample")
    assert source.kind == "sample" and source.revision
    for record in records:
        assert record.hf_bucket == SAMPLE_BUCKET
        assert "/" in record.task_id and ".ipynb_qa_" in record.task_id
        assert record.instruction and record.question in record.instruction


def test_the_sample_covers_every_reward_mode_tier_and_table_shape(records):
    assert {r.reward_mode for r in records} == set(KNOWN_REWARD_MODES)
    assert {r.difficulty_tier for r in records} == set(TIERS)
    assert sum(1 for r in records if not r.files) == 1
    tables = [resolve_tables(r) for r in records]
    names = {t.name for ts in tables for t in ts.files}
    suffixes = {Path(n).suffix for n in names}
    assert {".csv", ".xlsx", ".parquet", ".json", ".sqlite", ".h5"} <= suffixes
    latin = SAMPLE_DIR / "buckets" / SAMPLE_BUCKET / "sample__city-survey" / "survey_latin1.csv"
    with pytest.raises(UnicodeDecodeError):
        latin.read_bytes().decode("utf-8")
    assert "Zürich" in latin.read_bytes().decode("latin-1")
    nested = [t for ts in tables for t in ts.files if t.remote_path.count("/") > 1]
    assert [t.name for t in nested] == ["daily_weather.parquet"]
    assert nested[0].remote_path == "sample__weather-station/data/2023/daily_weather.parquet"


def test_exactly_one_sample_table_is_missing_and_that_task_is_ungraded(records):
    errors = {r.task_id: resolve_tables(r).error for r in records}
    assert {k: v for k, v in errors.items() if v} == {
        MISSING: "returns.csv: not found under prefix 'sample__retail-orders'"
    }
    manifest = json.loads((SAMPLE_DIR / "manifest.json").read_text(encoding="utf-8"))
    assert list(manifest["missing"]) == [MISSING]


def test_the_sample_is_small_and_its_manifest_is_true(records):
    files = [p for p in SAMPLE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in files) < 1_000_000
    manifest = json.loads((SAMPLE_DIR / "manifest.json").read_text(encoding="utf-8"))
    from smoldataenvs_tasks.data.mirror import verify_mirror

    assert verify_mirror(SAMPLE_DIR) == []
    assert manifest["splits"]["sample"]["tasks"] == len(records)
    assert tables_manifest_digest(records, resolve_source("sample")) is not None


def _program(reply: str) -> str:
    blocks = re.findall(r"```(?:python|py)?\n(.*?)```", reply, flags=re.DOTALL)
    assert blocks, reply
    return blocks[-1]


def test_gold_program_replay_rows_follow_the_replay_format(records):
    rows = replay("gold_program.jsonl")
    assert [r["task_id"] for r in rows] == [r.task_id for r in records]
    for row, record in zip(rows, records, strict=True):
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system", "user", "assistant"]
        assert row["messages"][1]["content"] == prompts.program_prompt(
            record.question, record.files
        )


@pytest.mark.slow
def test_gold_programs_print_their_gold_answers(records, data_env, tmp_path):
    from smoldataenvs_tasks import grade

    rows = {r["task_id"]: r for r in replay("gold_program.jsonl")}
    checked = 0
    for index, record in enumerate(records):
        program = _program(rows[record.task_id]["messages"][-1]["content"])
        tables = resolve_tables(record)
        if not tables.available:
            assert record.task_id == MISSING
            continue
        stage = stage_tables(tables, new_stage_dir())
        input_dir = tmp_path / f"input-{index}"
        input_dir.mkdir()
        for name in tables.paths():
            (input_dir / name).symlink_to(stage / name)  # like /home/user/input -> /mnt/tables
        stdout = builder.run_program(program, input_dir, python=sys.executable)
        printed = builder.last_line(stdout)
        assert printed == record.answer, record.task_id
        assert (
            grade(
                record.answer,
                printed,
                reward_mode=record.reward_mode,
                abs_tol=record.atol,
                rel_tol=record.rtol,
            ).reward
            == 1.0
        )
        checked += 1
    assert checked == len(records) - 1


def test_gold_agentic_replay_has_the_sft_shape(records):
    rows = replay("gold_agentic.jsonl")
    assert [r["task_id"] for r in rows] == [r.task_id for r in records]
    for row, record in zip(rows, records, strict=True):
        messages = row["messages"]
        assert messages[0]["role"] == "system"
        assert messages[0]["content"] == prompts.agent_system_prompt()
        assert messages[1] == {"role": "user", "content": record.instruction}
        calls = []
        for message, following in itertools.pairwise(messages[2:]):
            if message["role"] == "assistant":
                [call] = message["tool_calls"]
                assert call["type"] == "function" and call["function"]["name"] == "bash"
                arguments = json.loads(call["function"]["arguments"])
                assert list(arguments) == ["command"]
                assert following == {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": following["content"],
                }
                calls.append(arguments["command"])
        assert all("/home/user/input" in c or "/workdir" in c for c in calls)
        assert calls[-1].startswith(f'echo -n "{record.answer}" > /workdir/answer.txt')
        assert messages[-1]["role"] == "assistant" and "tool_calls" not in messages[-1]


@pytest.mark.slow
def test_gold_agentic_commands_write_the_gold_answer_when_replayed(records, data_env, tmp_path):
    rows = {r["task_id"]: r for r in replay("gold_agentic.jsonl")}
    for index, record in enumerate(records):
        tables = resolve_tables(record)
        if not tables.available:
            continue
        run = tmp_path / f"run-{index}"
        stage = stage_tables(tables, new_stage_dir())
        input_dir, workdir = run / "input", run / "workdir"
        input_dir.mkdir(parents=True)
        workdir.mkdir()
        for name in tables.paths():
            (input_dir / name).symlink_to(stage / name)
        for message in rows[record.task_id]["messages"]:
            for call in message.get("tool_calls") or []:
                command = json.loads(call["function"]["arguments"])["command"]
                builder.run_command(command, input_dir, workdir, python=sys.executable)
        assert (workdir / "answer.txt").read_text(encoding="utf-8") == record.answer, record.task_id


@pytest.mark.slow
def test_the_build_script_reproduces_the_bundled_rows(tmp_path):
    import pyarrow.parquet as pq

    builder.build(tmp_path)
    fresh = pq.read_table(tmp_path / "data" / "sample-00000-of-00001.parquet").to_pylist()
    bundled = pq.read_table(SAMPLE_DIR / "data" / "sample-00000-of-00001.parquet").to_pylist()
    assert fresh == bundled
    for name in ("gold_program.jsonl", "gold_agentic.jsonl"):
        assert (tmp_path / "replays" / name).read_text(encoding="utf-8") == (
            SAMPLE_DIR / "replays" / name
        ).read_text(encoding="utf-8")
