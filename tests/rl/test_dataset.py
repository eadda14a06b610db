"""`rl_dataset`: the prompts Inspect and lm-eval send, never the gold, and no held-out rows."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.prompts import PROGRAM_SYSTEM_PROMPT, agent_system_prompt
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.rl import HeldOutSplitError, rl_dataset
from smoldataenvs_tasks.variants import PROTOCOL_KEY


@pytest.mark.unit
@pytest.mark.parametrize("split", ["test", "eval"])
def test_a_held_out_split_is_refused_with_one_line(split):
    with pytest.raises(HeldOutSplitError) as refused:
        rl_dataset(split)
    message = str(refused.value)
    assert "\n" not in message
    assert repr(split) in message and "allow_heldout=True" in message


@pytest.mark.unit
def test_an_unknown_split_is_named():
    with pytest.raises(SmolDataEnvsError, match="split=trian is not valid"):
        rl_dataset("trian", allow_heldout=True)


@pytest.mark.unit
def test_rows_carry_the_task_and_never_its_gold():
    dataset = rl_dataset("sample")
    records = {r.task_id: r for r in load_tasks("sample")}
    assert dataset.column_names == [
        "prompt",
        "task_id",
        "split",
        "mirror",
        "revision",
        "difficulty_tier",
        "reward_mode",
        PROTOCOL_KEY,
    ]
    assert sorted(dataset["task_id"]) == sorted(records)
    for row in dataset:
        record = records[row["task_id"]]
        # The row names its data: the bundled sample has no mirror or revision to name.
        assert (row["split"], row["mirror"], row["revision"]) == ("sample", None, None)
        assert row["difficulty_tier"] == record.difficulty_tier
        # No column is the gold, and the prompt does not state it (golds like "East" are words
        # a question may use, so only the long ones are looked for in the text).
        assert record.answer not in {v for k, v in row.items() if k != "prompt"}
        if len(record.answer) > 6:
            assert all(record.answer not in m["content"] for m in row["prompt"])


@pytest.mark.slow
def test_the_prompt_is_the_one_inspects_program_task_sends():
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    task = smoldataenvs_program(split="sample", sandbox="bwrap")
    inspect_inputs = {str(sample.id): sample.input for sample in task.dataset}
    rows = {row["task_id"]: row["prompt"] for row in rl_dataset("sample")}
    assert set(rows) == set(inspect_inputs)
    for task_id, prompt in rows.items():
        assert prompt == [
            {"role": "system", "content": PROGRAM_SYSTEM_PROMPT},
            {"role": "user", "content": inspect_inputs[task_id]},
        ]


@pytest.mark.slow
def test_the_prompt_is_the_one_lm_eval_sends_with_a_chat_template():
    from smoldataenvs_tasks.lm_eval.paths import task_manager

    name = "smoldataenvs_program_sample"
    task = task_manager(include_defaults=False).load([name])["tasks"][name]
    rendered: list[list[dict[str, str]]] = []

    def template(messages, add_generation_prompt=True):
        rendered.append([{"role": m["role"], "content": m["content"]} for m in messages])
        return "<rendered>"

    task.build_all_requests(rank=0, world_size=1, apply_chat_template=True, chat_template=template)
    lm_eval_messages = {doc["task_id"]: rendered[i] for i, doc in enumerate(task.eval_docs)}
    rows = {row["task_id"]: row["prompt"] for row in rl_dataset("sample")}
    assert rows == lm_eval_messages


@pytest.mark.slow
def test_the_agentic_prompt_completed_by_reset_is_the_one_inspects_agentic_task_sends():
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs
    from smoldataenvs_tasks.rl.dataset import agent_task_text

    task = smoldataenvs(split="sample", sandbox="bwrap")
    inspect_inputs = {str(sample.id): sample.input for sample in task.dataset}
    records = {r.task_id: r for r in load_tasks("sample")}
    for row in rl_dataset("sample", variant="agentic"):
        system, user = row["prompt"]
        assert system == {"role": "system", "content": agent_system_prompt()}
        # TRL appends reset()'s text to the last user turn.
        assert (
            user["content"] + agent_task_text(records[row["task_id"]])
            == inspect_inputs[row["task_id"]]
        )
