"""`check_tool_calling(tokenizer)`: can TRL run `DataAnalysisEnv`'s bash tool for this model?

TRL (1.16) shows the model its tools through the chat template and reads each reply's tool calls
with the tokenizer's response parser (`response_template`, set by
`trl.chat_template_utils.add_response_schema` for the chat templates TRL ships). When that parser
finds no tool call in a reply, TRL falls back to the reply's plain text: no tool runs, the episode
ends, and nothing says why. So a model whose template TRL cannot parse trains on episodes of 0
tool calls. This check renders one bash call with the model's own template and parses it back as
TRL does, before any training step; `DataAnalysisEnv` also warns when many episodes in a row
made no call at all.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.variants import BASH

_COMMAND = "cat /home/user/input/probe.csv"
# The probe's call is to the tool DataAnalysisEnv gives (`variants.BASH`): its name and parameter
# are what TRL must parse back. The short description is the probe's own; no model reads it.
_TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": BASH.name,
        "description": "Run a shell command.",
        "parameters": {
            "type": "object",
            "properties": {BASH.parameter: {"type": "string", "description": "The command."}},
            "required": [BASH.parameter],
        },
    },
}


class ToolCallingError(SmolDataEnvsError, ValueError):
    """The model's chat template cannot carry DataAnalysisEnv's tool calls through TRL."""


_ADVICE = (
    "use a chat template TRL ships a tool-call parser for (trl/chat_templates, e.g. qwen2_5.jinja, "
    "qwen3.jinja, llama3_1.jinja) or set the tokenizer's response_template yourself "
    "(examples/grpo_agentic.py)"
)


def check_tool_calling(processing_class: Any) -> None:
    """Raise `ToolCallingError` (one line) unless TRL can both render and parse a bash tool
    call with `processing_class`'s chat template. Sets the response parser TRL would set for a
    template it knows (`add_response_schema`), as GRPOTrainer does."""
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    if not supports_tool_calling(processing_class):
        raise ToolCallingError(
            "the model's chat template renders no tool calls or tool results, so TRL cannot "
            f"show it the bash tool: {_ADVICE}"
        )
    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    if (
        getattr(tokenizer, "response_template", None) is None
        and getattr(tokenizer, "response_schema", None) is None
    ):
        try:
            add_response_schema(processing_class)
        except ValueError:
            raise ToolCallingError(
                "TRL has no tool-call parser for the model's chat template (no response_template "
                f"and TRL does not know the template), so it would run no tool: {_ADVICE}"
            ) from None
    messages = [{"role": "user", "content": "Look at the table."}]
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": BASH.name, "arguments": {BASH.parameter: _COMMAND}},
            }
        ],
    }
    prompt = tokenizer.apply_chat_template(
        messages, tools=[_TOOL_SCHEMA], add_generation_prompt=True, tokenize=False
    )
    whole = tokenizer.apply_chat_template(
        [*messages, call], tools=[_TOOL_SCHEMA], add_generation_prompt=False, tokenize=False
    )
    if not whole.startswith(prompt):
        raise ToolCallingError(
            "the model's chat template renders an assistant turn that does not continue its "
            f"generation prompt, so TRL cannot tell the reply apart: {_ADVICE}"
        )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    reply_ids = tokenizer(whole[len(prompt) :], add_special_tokens=False)["input_ids"]
    parsed = parse_response(tokenizer, reply_ids, prefix=prompt_ids, tools=[_TOOL_SCHEMA])
    calls = parsed.get("tool_calls") or []
    found = [
        c.get("function", {}).get("arguments")
        for c in calls
        if c.get("function", {}).get("name") == BASH.name
    ]
    if not any(_command_of(arguments) == _COMMAND for arguments in found):
        raise ToolCallingError(
            "TRL parses no bash call back from the model's own rendering of one (its chat "
            "template and response parser disagree, or its tokenizer cannot spell the "
            f"template's tool-call markers), so it would run no tool: {_ADVICE}"
        )


def _command_of(arguments: Any) -> Any:
    if isinstance(arguments, str):
        import json

        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments.get(BASH.parameter) if isinstance(arguments, dict) else None
