"""`load_environment`: a verifiers SingleTurnEnv whose rubric is the program reward, found under
the names verifiers users type, raising (never a silent 0.0) when the sandbox fails, and run by
`vf-eval` against an OpenAI-compatible server (a local stand-in replaying the gold programs)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.rl import (
    HeldOutSplitError,
    RewardInfrastructureError,
    load_environment,
    rl_dataset,
)
from tests.report.replays import MISSING_TABLE_TASK, MIXED, gold_completions
from tests.rl.openai_stub import serving_gold

VF_EVAL = Path(sys.executable).with_name("vf-eval")


def _score(env, row: dict, completion: str) -> float:
    state = {
        "prompt": row["prompt"],
        "completion": [{"role": "assistant", "content": completion}],
        "info": row["info"],
        "answer": "",
        "task": "default",
        "input": row,
        "trajectory": [],
    }
    asyncio.run(env.rubric.score_rollout(state))
    return state["reward"]


@pytest.mark.unit
def test_a_held_out_split_is_refused_before_verifiers_loads():
    with pytest.raises(HeldOutSplitError):
        load_environment("test")


@pytest.mark.slow
def test_the_environment_grades_with_the_program_reward():
    import verifiers as vf

    env = load_environment("sample", sandbox="bwrap")
    assert isinstance(env, vf.SingleTurnEnv)
    rows = {row["task_id"]: row for row in env.dataset}
    expected_prompts = {row["task_id"]: row["prompt"] for row in rl_dataset("sample")}
    assert {t: r["prompt"] for t, r in rows.items()} == expected_prompts
    assert "answer" not in env.dataset.column_names
    gold = gold_completions()
    wrong_task = "sample/0001/orders.ipynb_qa_2"
    assert (
        _score(env, rows["sample/0001/orders.ipynb_qa_1"], gold["sample/0001/orders.ipynb_qa_1"])
        == 1.0
    )
    assert _score(env, rows[wrong_task], MIXED[wrong_task].text) == 0.0
    # No reward is "none" in verifiers: every rollout of a task without tables gets 0.
    assert _score(env, rows[MISSING_TABLE_TASK], gold[MISSING_TABLE_TASK]) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smoldataenvs_tasks", "smoldataenvs-tasks"])
def test_verifiers_finds_the_environment_under_the_package_name(name):
    import verifiers as vf

    env = vf.load_environment(name, split="sample", sandbox="bwrap")
    assert isinstance(env, vf.SingleTurnEnv)
    assert sorted(env.dataset["task_id"]) == sorted(rl_dataset("sample")["task_id"])


@pytest.mark.slow
def test_a_broken_sandbox_raises_instead_of_scoring_zero(monkeypatch):
    # An engine that is not there: the Docker sandbox cannot start, twice, which is the run's
    # failure. verifiers' Rubric turned the reward's exception into a logged 0.0.
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/smoldataenvs-test.sock")
    env = load_environment("sample", sandbox="docker")
    rows = {row["task_id"]: row for row in env.dataset}
    task = "sample/0001/orders.ipynb_qa_1"
    with pytest.raises(RewardInfrastructureError, match="sandbox_failed") as raised:
        _score(env, rows[task], gold_completions()[task])
    # The advice is spelled for a Python caller, not as Inspect's -T option.
    assert 'sandbox="bwrap"' in str(raised.value)
    assert "-T " not in str(raised.value)


@pytest.mark.slow
def test_vf_eval_against_an_openai_compatible_server(tmp_path):
    # As a user runs it against vLLM or an API: here a local server replaying the gold programs.
    with serving_gold() as (base_url, requests):
        run = subprocess.run(
            [
                str(VF_EVAL),
                "smoldataenvs-tasks",
                "-a",
                json.dumps({"split": "sample", "sandbox": "bwrap"}),
                "-b",
                base_url,
                "-k",
                "STUB_API_KEY",
                "-m",
                "gold",
                "-n",
                "10",
                "-r",
                "1",
                "--disable-tui",
                "-s",
                "--output-dir",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "STUB_API_KEY": "none"},
            timeout=900,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(requests) == 10
    [results] = tmp_path.glob("evals/*/*/results.jsonl")
    rewards = {
        json.loads(line)["info"]["task_id"]: json.loads(line)["reward"]
        for line in results.read_text().splitlines()
    }
    assert rewards.pop(MISSING_TABLE_TASK) == 0.0  # no reward is "none" in verifiers
    assert set(rewards.values()) == {1.0} and len(rewards) == 9


@pytest.mark.slow
def test_verifiers_0_4_is_one_line_naming_the_version_to_install(tmp_path):
    # verifiers 0.4's package root as it ships (its v1 API lives in verifiers.v1; no
    # SingleTurnEnv or Rubric at the top), first on the path of a fresh interpreter.
    root = tmp_path / "site" / "verifiers"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text('"""The verifiers package root."""\n__version__ = "0.4.0"\n')
    code = (
        "from smoldataenvs_tasks.rl import load_environment\n"
        "from smoldataenvs_tasks.errors import SmolDataEnvsError\n"
        "try:\n"
        "    load_environment('sample')\n"
        "except SmolDataEnvsError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "site")},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    [line] = run.stdout.strip().splitlines()
    assert "verifiers 0.4.0 has no SingleTurnEnv/Rubric" in line
    # What a 0.4 user runs instead (tests/rl/test_verifiers_v1.py runs it), and why not here.
    assert "vf-eval smoldataenvs-tasks --env.taskset.split SPLIT" in line
    assert "0.4 needs openai<3, Inspect's OpenAI providers >=3.4" in line
    assert "pip install 'verifiers>=0.3.1,<0.4'" in line
