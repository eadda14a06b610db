"""`check_tool_calling`: a chat template TRL cannot carry the bash tool through is one line before
training (TRL itself runs no tool then, and says nothing), and the example's template passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from smoldataenvs_tasks.rl import ToolCallingError, check_tool_calling
from tests.rl.test_grpo_smoke import CHAT_TEMPLATE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo_agentic.py"


def _example():
    spec = importlib.util.spec_from_file_location("grpo_agentic_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tokenizer():
    example = _example()
    texts = [example.qwen2_5_template(), '{"name": "bash", "arguments": {"command": "ls"}}']
    _, tokenizer = example.tiny_model_and_tokenizer(texts)
    return tokenizer


@pytest.mark.slow
def test_the_examples_template_carries_a_bash_call_through_trl():
    check_tool_calling(_tokenizer())


@pytest.mark.slow
def test_a_template_without_tool_calls_is_one_line():
    tokenizer = _tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE  # renders role and content only
    with pytest.raises(ToolCallingError) as refused:
        check_tool_calling(tokenizer)
    assert "\n" not in str(refused.value) and "renders no tool calls" in str(refused.value)


@pytest.mark.slow
def test_a_template_trl_has_no_parser_for_is_one_line():
    tokenizer = _tokenizer()
    # Renders tool calls (TRL's own check passes) in a format TRL has no parser for.
    tokenizer.chat_template = tokenizer.chat_template.replace("<tool_call>", "<call>").replace(
        "</tool_call>", "</call>"
    )
    with pytest.raises(ToolCallingError, match="no tool-call parser") as refused:
        check_tool_calling(tokenizer)
    assert "\n" not in str(refused.value)


@pytest.mark.slow
def test_a_parser_that_finds_no_call_in_the_templates_rendering_is_one_line():
    tokenizer = _tokenizer()
    check_tool_calling(tokenizer)  # sets the Qwen parser
    # The template now writes calls the parser does not look for: TRL would see plain text.
    tokenizer.chat_template = tokenizer.chat_template.replace("<tool_call>", "<call>").replace(
        "</tool_call>", "</call>"
    )
    with pytest.raises(ToolCallingError, match="parses no bash call back") as refused:
        check_tool_calling(tokenizer)
    assert "\n" not in str(refused.value)
