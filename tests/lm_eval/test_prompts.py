"""The model sees the same prompt in lm-eval as in Inspect: with a chat template, the very same two
messages; without one, the same two texts with a blank line between them (not glued together)."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from smoldataenvs_tasks.data.prompts import PROGRAM_SYSTEM_PROMPT
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
from smoldataenvs_tasks.lm_eval.paths import task_manager
from tests.replies import gold_program_rows, write_jsonl

TASK = "smoldataenvs_program_sample"


def _inspect_messages(tmp_path: Path) -> dict[str, list[tuple[str, str]]]:
    replay = write_jsonl(tmp_path / "gold.jsonl", gold_program_rows())
    (log,) = inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        model="replay/prompts",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.samples is not None
    return {
        str(sample.id): [
            (message.role, message.text)
            for message in sample.messages
            if isinstance(message, ChatMessageSystem | ChatMessageUser)
        ]
        for sample in log.samples
    }


@pytest.mark.slow
def test_with_a_chat_template_lm_eval_sends_inspects_two_messages(tmp_path):
    inspect_messages = _inspect_messages(tmp_path)
    task = task_manager(include_defaults=False).load([TASK])["tasks"][TASK]
    rendered: list[list[tuple[str, str]]] = []

    def template(messages, add_generation_prompt=True):
        rendered.append([(m["role"], m["content"]) for m in messages])
        return "<rendered>"

    task.build_all_requests(rank=0, world_size=1, apply_chat_template=True, chat_template=template)
    by_id = {doc["task_id"]: rendered[i] for i, doc in enumerate(task.eval_docs)}
    assert set(by_id) == set(inspect_messages)
    # A sample whose table is missing ends before its solver adds the system message.
    reached_the_model = {k: v for k, v in inspect_messages.items() if len(v) == 2}
    assert len(reached_the_model) == len(by_id) - 1
    for task_id, messages in reached_the_model.items():
        assert by_id[task_id] == messages, task_id
        assert messages[0] == ("system", PROGRAM_SYSTEM_PROMPT)


def test_without_a_chat_template_the_system_text_and_question_are_a_blank_line_apart():
    task = task_manager(include_defaults=False).load([TASK])["tasks"][TASK]
    task.build_all_requests(rank=0, world_size=1, apply_chat_template=False)
    for instance in task.instances:
        context = instance.args[0]
        question = task.doc_to_text(instance.doc)
        assert context == f"{PROGRAM_SYSTEM_PROMPT}\n\n{question}"
