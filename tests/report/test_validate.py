"""`smoldataenvs validate`: gold replies reproduce on the sample; a broken environment fails loudly.

The broken environment is real: a sandbox Python environment without pandas (a bare venv of the
system interpreter, marked built) placed where the bwrap sandbox looks for its environment, under
a throwaway SMOLDATAENVS_CACHE. The command runs in a subprocess so that cache applies to it alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks
from tests.report.replays import MISSING_TABLE_TASK, MIXED, expected_reward

AGENTIC_GOLD = (
    Path(__file__).resolve().parents[2] / "smoldataenvs_tasks/sample/replays/gold_agentic.jsonl"
)


def validate(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["validate", *args, "--json"], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)  # progress lines go to stderr


@pytest.mark.slow
def test_validate_reproduces_every_bundled_gold_program(sandbox_kind):
    code, result = validate("--split", "sample")
    assert code == 0
    graded = [r.task_id for r in load_tasks("sample") if r.task_id != MISSING_TABLE_TASK]
    assert result["variant"] == "program"
    assert result["sandbox"] == sandbox_kind
    assert result["n_reproduced"] == result["n_graded"] == len(graded)
    assert result["rate"] == 1.0 and result["passed"]
    assert result["not_reproduced"] == []
    assert [(u["task_id"], u["category"], u["detail"]) for u in result["ungraded"]] == [
        (MISSING_TABLE_TASK, "ungraded", "table_unavailable")
    ]


@pytest.mark.slow
def test_validate_lists_every_task_that_does_not_reproduce(sandbox_kind, mixed_replay):
    code, result = validate("--split", "sample", "--replay", str(mixed_replay))
    assert code == 1
    assert not result["passed"]
    wrong = {t: r for t, r in MIXED.items() if expected_reward(r) == 0.0}
    listed = {row["task_id"]: row for row in result["not_reproduced"]}
    assert set(listed) == set(wrong)
    for task_id, reply in wrong.items():
        assert listed[task_id]["category"] == reply.category
        if reply.detail:
            assert listed[task_id]["detail"] == reply.detail
    assert result["n_reproduced"] == sum(expected_reward(r) == 1.0 for r in MIXED.values())


@pytest.mark.slow
def test_validate_min_rate_sets_the_bar(sandbox_kind, mixed_replay):
    n_graded = sum(expected_reward(r) is not None for r in MIXED.values())
    n_correct = sum(expected_reward(r) == 1.0 for r in MIXED.values())
    rate = n_correct / n_graded
    code, result = validate("--replay", str(mixed_replay), "--min-rate", f"{rate - 0.01:.4f}")
    assert code == 0 and result["passed"]
    assert result["rate"] == pytest.approx(rate)


@pytest.mark.slow
def test_validate_text_output_names_failures_and_ungraded(sandbox_kind, mixed_replay):
    result = CliRunner().invoke(main, ["validate", "--replay", str(mixed_replay)])
    assert result.exit_code == 1
    assert "sample/0007/sensors.ipynb_qa_1: crash (ZeroDivisionError)" in result.output
    assert f"{MISSING_TABLE_TASK}: table_unavailable" in result.output
    assert "FAILED: below --min-rate" in result.output


@pytest.mark.slow
def test_validate_replays_sft_trajectories_through_the_agentic_task(sandbox_kind):
    code, result = validate("--split", "sample", "--replay", str(AGENTIC_GOLD))
    assert code == 0
    assert result["variant"] == "agentic"
    assert result["n_reproduced"] == result["n_graded"] == len(load_tasks("sample")) - 1
    assert [u["detail"] for u in result["ungraded"]] == ["table_unavailable"]


def test_validate_of_another_split_needs_a_replay_file():
    result = CliRunner().invoke(main, ["validate", "--split", "test"])
    assert result.exit_code != 0
    assert "pass --replay FILE" in result.output


def test_validate_of_a_misspelled_split_names_the_split_not_the_replay_file():
    result = CliRunner().invoke(main, ["validate", "--split", "evl"])
    assert result.exit_code == 2
    # Checked by run_plan, as every framework's options are, and named as validate spells it.
    assert result.output == ("Error: --split evl is not valid: choose train, test, eval, sample\n")


@pytest.mark.parametrize("option", ["--mirror", "--revision"])
def test_validate_refuses_a_data_source_beside_the_bundled_sample(tmp_path, option):
    """The bundled sample has no mirror or revision: one given would be ignored, so the
    replay would not be of what was asked (run_plan's rule for every framework)."""
    value = str(tmp_path) if option == "--mirror" else "abc123"
    result = CliRunner().invoke(main, ["validate", "--split", "sample", option, value])
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {option} {value} is not valid: split=sample is")
    assert len(result.output.splitlines()) == 1


# --- a broken environment -------------------------------------------------------------------


@pytest.fixture
def cache_without_pandas(tmp_path, monkeypatch) -> Path:
    """A cache dir whose sandbox environment is a bare venv: Python works, pandas is missing."""
    from smoldataenvs_tasks.sandboxes.envbuild import LOCK_FILE, env_path, lock_python_minor

    cache = tmp_path / "cache"
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(cache))
    env = env_path()
    python = Path(f"/usr/bin/python{lock_python_minor(LOCK_FILE.read_text(encoding='utf-8'))}")
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(env)], check=True)
    (env / ".smoldataenvs-env-complete").write_text(
        "a venv without the locked libraries\n", encoding="utf-8"
    )
    monkeypatch.delenv("SMOLDATAENVS_CACHE")
    return cache


def run_validate(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "smoldataenvs_tasks", "validate", "--sandbox", "bwrap", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "SMOLDATAENVS_CACHE": str(cache)},
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_validate_fails_loudly_when_the_sandbox_lacks_pandas(sandbox_kind, cache_without_pandas):
    if sandbox_kind != "bwrap":
        pytest.skip("the broken environment is built for the bwrap sandbox")
    done = run_validate(cache_without_pandas)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "BROKEN ENVIRONMENT" in done.stderr
    assert "cannot import pandas (ModuleNotFoundError" in done.stderr


@pytest.mark.slow
def test_validate_without_the_probe_still_fails_on_the_broken_environment(
    sandbox_kind, cache_without_pandas
):
    if sandbox_kind != "bwrap":
        pytest.skip("the broken environment is built for the bwrap sandbox")
    done = run_validate(cache_without_pandas, "--no-probe")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "crash (ModuleNotFoundError)" in done.stdout
    assert "hint: gold programs fail with ModuleNotFoundError" in done.stdout
    assert "FAILED" in done.stdout
