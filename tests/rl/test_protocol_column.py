"""Rows carry the task protocol their plan declares (issue 47): `rl_dataset` writes it as JSON text
under `variants.PROTOCOL_KEY`, TRL hands it with the other columns to a reward function and to
`DataAnalysisEnv.reset`, and each refuses a row of the other variant in one line, as it refuses a
row of another mirror (`SourceMismatchError`).

Nothing here opens a sandbox: the check comes before any task is staged or graded."""

from __future__ import annotations

import json

import pytest

from smoldataenvs_tasks.rl import DataAnalysisEnv, make_program_reward, rl_dataset
from smoldataenvs_tasks.rl.plan import plan_split
from smoldataenvs_tasks.rl.reward import SourceMismatchError, VariantMismatchError
from smoldataenvs_tasks.run_plan import OptionError
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM, PROTOCOL_FIELDS, PROTOCOL_KEY
from tests.replies import ORDERS_TASK

pytestmark = pytest.mark.unit


def _row(variant: str) -> dict:
    return next(r for r in rl_dataset("sample", variant=variant) if r["task_id"] == ORDERS_TASK)


def _columns(row: dict) -> dict:
    return {name: [value] for name, value in row.items() if name != "prompt"}


@pytest.mark.parametrize("variant", [PROGRAM, AGENTIC])
def test_every_row_carries_the_protocol_its_plan_declares(variant):
    planned = plan_split("sample", variant=variant.name).protocol
    assert planned["variant"] == variant.name and planned["protocol"] == variant.protocol
    assert planned["max_turns"] == variant.max_turns and planned["framework"] == "rl"
    dataset = rl_dataset("sample", variant=variant.name)
    # JSON text: Arrow keeps one schema for every row, as lm-eval's doc columns do.
    assert dataset.features[PROTOCOL_KEY].dtype == "string"
    for row in dataset:
        declared = json.loads(row[PROTOCOL_KEY])
        assert list(declared) == list(PROTOCOL_FIELDS)
        assert declared == planned


def test_an_unknown_variant_is_the_run_plans_one_line():
    with pytest.raises(OptionError) as refused:
        rl_dataset("sample", variant="agentc")
    message = str(refused.value)
    assert message == "rl variant=agentc is not valid: choose program, agentic"


def test_a_program_reward_given_an_agentic_row_refuses_it_in_one_line():
    reward = make_program_reward(sandbox="local")
    with pytest.raises(VariantMismatchError) as refused:
        reward(completions=["print(1)"], **_columns(_row(AGENTIC.name)))
    message = str(refused.value)
    assert "\n" not in message
    assert "poses the agentic variant (protocol answer_file)" in message
    assert "make_program_reward grades the program variant" in message
    assert "variant='program'" in message and "with DataAnalysisEnv" in message
    # One of the mismatches a caller already catches.
    assert isinstance(refused.value, SourceMismatchError)


def test_the_environment_given_a_program_row_refuses_it_before_any_sandbox():
    env = DataAnalysisEnv(sandbox="bwrap")
    with pytest.raises(VariantMismatchError) as refused:
        env.reset(**_row(PROGRAM.name))
    message = str(refused.value)
    assert "\n" not in message
    assert "poses the program variant (protocol program)" in message
    assert "DataAnalysisEnv grades the agentic variant (protocol answer_file)" in message
    assert "with program_reward" in message
    assert env._episode.session is None and env._episode.stage_dir is None


def test_rows_of_their_own_variant_pass_and_rows_without_the_column_are_graded_as_given():
    reward = make_program_reward(sandbox="local")
    env = DataAnalysisEnv(sandbox="bwrap")
    assert reward.tasks.source(ORDERS_TASK, _row(PROGRAM.name)).split == "sample"
    assert env._tasks.source(ORDERS_TASK, _row(AGENTIC.name)).split == "sample"
    # A dataset of the caller's own, with no protocol column, is not refused for lacking one.
    bare = {"task_id": ORDERS_TASK, "split": "sample"}
    assert reward.tasks.source(ORDERS_TASK, bare) == env._tasks.source(ORDERS_TASK, bare)


@pytest.mark.parametrize("stored", ["{not json", "[1, 2]", '"agentic"'])
def test_a_protocol_column_that_is_no_json_object_is_one_line(stored):
    reward = make_program_reward(sandbox="local")
    row = {**_row(PROGRAM.name), PROTOCOL_KEY: stored}
    with pytest.raises(VariantMismatchError) as refused:
        reward(completions=["print(1)"], **_columns(row))
    message = str(refused.value)
    assert "\n" not in message and f"{PROTOCOL_KEY} column that is not the JSON object" in message


def test_another_answer_rule_of_the_agentic_variant_is_refused_by_the_environment():
    """The environment has no `submit` tool: a row declaring that rule was posed another way."""
    row = _row(AGENTIC.name)
    declared = {**json.loads(row[PROTOCOL_KEY]), "protocol": "submit"}
    env = DataAnalysisEnv(sandbox="bwrap")
    with pytest.raises(
        VariantMismatchError, match=r"poses the agentic variant \(protocol submit\)"
    ):
        env.reset(**{**row, PROTOCOL_KEY: json.dumps(declared)})
