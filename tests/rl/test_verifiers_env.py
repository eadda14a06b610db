"""`load_environment`: a verifiers SingleTurnEnv whose rubric is the program reward."""

from __future__ import annotations

import asyncio

import pytest

from smoldataenvs_tasks.rl import HeldOutSplitError, load_environment, rl_dataset
from tests.report.replays import MISSING_TABLE_TASK, MIXED, gold_completions


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
