"""What a model is sent is unchanged by issue 47's moves of the protocol into `variants.py`: every
framework's prompts for every task of the sample split, the tools Inspect offers, the generate
config each call is sent with, and each Inspect task's config, turn limit and epochs, against
prompts_golden.json, captured by tests/inspect/protocol_capture.py from the tree before the
moves (26d4468). The task metadata of that tree (its loose protocol keys) is what older logs
hold: tests/inspect/test_protocol_record.py reads such logs back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.inspect import protocol_capture as capture

GOLDEN: dict[str, Any] = json.loads(
    (Path(__file__).parent / "prompts_golden.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("name", list(capture.INSPECT_CONFIGS))
def test_inspect_task_config_turns_and_epochs_are_unchanged(name: str) -> None:
    now = capture.inspect_task(name)
    before = GOLDEN["inspect_tasks"][name]
    for key in ("config", "turn_limit", "epochs", "version"):
        assert now[key] == before[key], key


@pytest.mark.slow
@pytest.mark.parametrize("name", capture.CALLED)
def test_inspect_sends_the_same_messages_tools_and_config(name: str) -> None:
    now = capture.inspect_calls(name)
    before = GOLDEN["inspect_calls"][name]
    assert sorted(now) == sorted(before)
    for task_id, call in before.items():
        assert now[task_id] == call, task_id


def test_rl_rows_prompt_as_before() -> None:
    assert capture.rl_rows() == GOLDEN["rl"]


def test_lm_eval_prompts_and_generation_as_before() -> None:
    assert capture.lm_eval_prompts() == GOLDEN["lm_eval"]


def test_harbor_instructions_as_before() -> None:
    assert capture.harbor_instructions() == GOLDEN["harbor_instructions"]
