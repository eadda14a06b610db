"""`DataAnalysisEnv` driven as TRL drives it: reset(**row), bash tool calls, get_reward().

The trajectories are scripted: the bundled gold agentic trajectories' commands (each must earn
1, as it does in Inspect's agentic task), and agents that give up in known ways (0)."""

from __future__ import annotations

import gc
import json

import pytest
from inspect_ai.model._call_tools import truncate_tool_output

from smoldataenvs_tasks.rl import DataAnalysisEnv, rl_dataset
from smoldataenvs_tasks.rl.dataset import agent_task_text
from smoldataenvs_tasks.sandboxes.tool_output import TOOL_RESULT_BYTES, shown_to_model
from tests.replies import GOLD_AGENTIC, MISSING_TABLE_TASK, ORDERS_TASK


def _gold_commands() -> dict[str, list[str]]:
    commands: dict[str, list[str]] = {}
    for line in GOLD_AGENTIC.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        commands[row["task_id"]] = [
            json.loads(call["function"]["arguments"])["command"]
            for message in row["messages"]
            for call in message.get("tool_calls") or []
        ]
    return commands


def _rows() -> dict[str, dict]:
    return {row["task_id"]: row for row in rl_dataset("sample", variant="agentic")}


@pytest.mark.slow
def test_every_gold_trajectory_earns_one_and_the_missing_table_none():
    rows = _rows()
    gold = _gold_commands()
    env = DataAnalysisEnv(sandbox="bwrap")
    rewards = {}
    for task_id, row in rows.items():
        text = env.reset(**row)
        assert "/workdir/answer.txt" in text
        for command in gold.get(task_id, []):
            env.bash(command)
        rewards[task_id] = env.get_reward()
    assert rewards.pop(MISSING_TABLE_TASK) is None
    assert set(rewards.values()) == {1.0}, rewards
    assert len(rewards) == len(rows) - 1


@pytest.mark.slow
def test_an_empty_answer_and_no_answer_earn_zero_in_a_fresh_session_each():
    row = _rows()[ORDERS_TASK]
    with DataAnalysisEnv(sandbox="bwrap") as env:
        assert env.reset(**row) == agent_task_text(
            next(r for r in _records() if r.task_id == ORDERS_TASK)
        )
        output = env.bash("head -n 2 /home/user/input/orders.csv; ls /nonexistent")
        assert "region" in output and "No such file" in output  # stdout and stderr
        env.bash(": > /workdir/answer.txt")
        assert env.get_reward() == 0.0
        assert env.last_verdict is not None and env.last_verdict.category == "no_answer"
        # The next episode starts clean: the earlier answer file is gone.
        env.reset(**row)
        assert "No such file" in env.bash("cat /workdir/answer.txt")
        assert env.get_reward() == 0.0
        # A command written as the answer is the model's 0, as in Inspect.
        env.bash("echo -n 'echo East' > /workdir/answer.txt")
        assert env.get_reward() == 0.0
        assert env.last_verdict.category == "command_answer"


def _records():
    from smoldataenvs_tasks.data.kinds import load_tasks

    return load_tasks("sample")


@pytest.mark.slow
def test_a_long_output_is_cut_as_inspect_cuts_it_and_a_dropped_env_leaves_nothing():
    env = DataAnalysisEnv(sandbox="bwrap")
    env.reset(**_rows()[ORDERS_TASK])
    output = env.bash("python3 -c \"print('a' * 20000 + 'b' * 20000)\"")
    assert "too long to be displayed" in output
    assert output.count("a") + output.count("b") <= TOOL_RESULT_BYTES + 200
    assert "aaaa" in output and "bbbb" in output  # its first and last halves
    stage_dir = env._episode.stage_dir
    assert stage_dir is not None and stage_dir.exists()
    del env
    gc.collect()
    assert not stage_dir.exists()


@pytest.mark.parametrize(
    "output",
    ["short", "x" * (TOOL_RESULT_BYTES + 1), "é" * TOOL_RESULT_BYTES, "a\n" * 50_000],
)
def test_the_model_sees_what_inspect_shows_of_a_tool_result(output):
    truncated = truncate_tool_output("bash", output, TOOL_RESULT_BYTES)
    expected = output if truncated is None else truncated.output
    assert shown_to_model("bash", output) == expected


@pytest.mark.slow
def test_a_nul_or_a_lone_surrogate_in_a_command_is_the_models_own_as_in_inspect():
    """Issue 44: a NUL in a tool call is refused with a message the model sees, and a lone
    surrogate reads as U+FFFD, through the same pipeline.tool_command as Inspect's bash tool
    (the environment used to hand the command to the sandbox as it was, which raised)."""
    with DataAnalysisEnv(sandbox="bwrap") as env:
        env.reset(**_rows()[ORDERS_TASK])
        refused = env.bash("echo -n 42 > /workdir/answer.txt\x00")
        assert "NUL" in refused and "not run" in refused
        assert "No such file" in env.bash("cat /workdir/answer.txt")
        assert "\ufffd" in env.bash("echo '\ud800'")
        assert env.get_reward() == 0.0
