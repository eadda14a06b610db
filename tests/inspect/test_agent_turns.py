"""The agentic task's turns (issue 43 items 4, 5): a first turn with no tool call is said, in the
log and on the sample, never a silent `no_answer`; each turn's reply is bounded."""

from __future__ import annotations

import logging

import pytest
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.inspect_adapter.tasks import NO_TOOL_CALLS, smoldataenvs
from smoldataenvs_tasks.variants import AGENTIC
from tests.replies import ORDERS_TASK, REVENUE_TASK, agentic_row, write_jsonl


@pytest.mark.slow
def test_a_model_that_never_calls_a_tool_is_said_and_each_turn_is_bounded(tmp_path, caplog):
    # What SmolLM2 did through a chat template that drops tools=: one turn of prose.
    replay = write_jsonl(
        tmp_path / "prose.jsonl",
        [
            agentic_row(ORDERS_TASK, [], final_text="The region is probably East."),
            agentic_row(REVENUE_TASK, ["echo -n 7438.11 > /workdir/answer.txt"]),
        ],
    )
    with caplog.at_level(logging.WARNING):
        [log] = inspect_eval(
            smoldataenvs(split="sample", sandbox="bwrap"),
            model="replay/prose",
            model_args={"path": str(replay)},
            log_dir=str(tmp_path / "logs"),
            display="none",
            sample_id=[ORDERS_TASK, REVENUE_TASK],
        )
    assert log.status == "success", log.error
    samples = {str(s.id): s for s in log.samples or []}
    prose = samples[ORDERS_TASK]
    assert prose.store.get(NO_TOOL_CALLS) is True
    # A long note is kept among the sample's attachments.
    notes = [str(e.data) for e in prose.events if e.event == "info"]
    notes = [prose.attachments.get(n.removeprefix("attachment://"), n) for n in notes]
    assert any("made no tool call on its first turn" in str(note) for note in notes), notes
    assert prose.scores["answer_file_scorer"].metadata["category"] == "no_answer"
    assert NO_TOOL_CALLS not in samples[REVENUE_TASK].store
    assert samples[REVENUE_TASK].scores["answer_file_scorer"].value == 1.0
    assert "docs/local-models.md" in caplog.text
    # Every model call of the run went with the turn's budget.
    calls = [e for s in log.samples or [] for e in s.events if e.event == "model"]
    assert calls and all(e.config.max_tokens == AGENTIC.max_tokens for e in calls)


def test_each_task_ends_in_its_own_solver():
    """The program task's reply goes through `program_reply` (greedy on every provider, issue 43
    item 1) and the agentic task's turns through `agent_turns` (each reply made writable, a
    first turn with no tool call said): a task built without them would send the model's
    replies past both."""
    from inspect_ai._util.registry import registry_info

    from smoldataenvs_tasks.inspect_adapter.tasks import (
        agent_turns,
        program_reply,
        smoldataenvs_program,
    )

    def last_solver(task) -> str:
        return registry_info(list(task.solver)[-1]).name

    program = smoldataenvs_program(split="sample", sandbox="bwrap")
    agentic = smoldataenvs(split="sample", sandbox="bwrap")
    assert last_solver(program) == registry_info(program_reply(0.0)).name
    assert last_solver(agentic) == registry_info(agent_turns()).name
    assert registry_info(agent_turns()).name.endswith("/agent_turns")
