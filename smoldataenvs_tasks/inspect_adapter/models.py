"""The `replay` model provider for Inspect: plays recorded replies back, never the network.

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T split=sample \
        --model replay/gold -M path=smoldataenvs_tasks/sample/replays/gold_program.jsonl

The label after `replay/` is free text (it names the run in logs and reports). For each call the
provider finds the sample's row (by sample id = task id, else by the first user message), picks the
row for the sample's epoch, and returns the assistant turn whose index equals the number of
assistant messages already in the conversation, tool calls included. When no tools are offered (the
single-shot program variant) it returns the row's last assistant message. Past the last recorded
turn it returns an empty reply, which ends an agent loop. Token usage is a character estimate
(Inspect's default counter downloads a tokenizer, which fails offline).

What the tasks need of any provider lives here too: `honour_greedy` (the `hf/` provider decodes
greedily when the run asks for temperature 0) and `writable_message` (a reply's lone surrogates
read as U+FFFD, so Inspect can hash and write the conversation).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError, sample_state
from smoldataenvs_tasks.replay import ReplayBook, ReplayFormatError, ReplayRow
from smoldataenvs_tasks.scorers.answers import without_lone_surrogates


def _current_sample() -> tuple[str | None, int]:
    state = sample_state()
    if state is None:
        return None, 1
    return str(state.sample_id), int(state.epoch)


def _first_user_text(messages: list[ChatMessage]) -> str | None:
    for message in messages:
        if isinstance(message, ChatMessageUser):
            return message.text
    return None


def _rescoring() -> bool:
    """Whether this process is Inspect's `inspect score` (the command line is all there is to
    tell: Inspect creates the model before any scorer runs)."""
    return Path(sys.argv[0]).name.startswith("inspect") and sys.argv[1:2] == ["score"]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class ReplayModel(ModelAPI):
    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008  (ModelAPI signature)
        path: str | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if not path:
            raise PrerequisiteError(
                "the replay model needs a replay file: --model replay/<label> -M path=FILE.jsonl"
            )
        self.path = path
        self._book: ReplayBook | None = None
        self._book_stamp: tuple[int, int] | None = None
        if _rescoring():
            # `inspect score LOG` re-creates the log's model and never calls it: the file, named
            # as the run was given it (relative to the run's folder), need not be there now.
            return
        # A bad file fails at model creation, as one line naming it, not at the first sample.
        try:
            self.book  # noqa: B018
        except (ReplayFormatError, OSError) as error:
            raise PrerequisiteError(f"replay model: {error}") from error

    @property
    def book(self) -> ReplayBook:
        # Inspect caches model instances per process, so `eval_retry` after fixing the replay
        # file would otherwise replay the old rows.
        stat = os.stat(self.path)
        stamp = (stat.st_mtime_ns, stat.st_size)
        if self._book is None or stamp != self._book_stamp:
            self._book, self._book_stamp = ReplayBook.load(self.path), stamp
        return self._book

    async def count_text_tokens(self, text: str) -> int:
        return _estimate_tokens(text)

    def max_connections(self) -> int:
        return 64

    def _row(self, input: list[ChatMessage]) -> ReplayRow:
        sample_id, epoch = _current_sample()
        return self.book.row_for(sample_id, _first_user_text(input), epoch - 1)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        row = self._row(input)
        if not tools:
            message = ChatMessageAssistant(content=row.completion, model=self.model_name)
        else:
            turn_index = sum(isinstance(m, ChatMessageAssistant) for m in input)
            if turn_index < len(row.turns):
                turn = row.turns[turn_index]
                calls = [
                    ToolCall(id=call.id, function=call.name, arguments=dict(call.arguments))
                    for call in turn.tool_calls
                ]
                message = ChatMessageAssistant(
                    content=turn.content, tool_calls=calls or None, model=self.model_name
                )
            else:
                message = ChatMessageAssistant(content="", model=self.model_name)
        output = ModelOutput.from_message(
            message, stop_reason="tool_calls" if message.tool_calls else "stop"
        )
        prompt_tokens = sum(_estimate_tokens(m.text) for m in input)
        completion_tokens = _estimate_tokens(message.text)
        output.usage = ModelUsage(
            input_tokens=prompt_tokens,
            output_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        return output


@modelapi(name="replay")
def replay() -> type[ModelAPI]:
    return ReplayModel


# --- what any provider's replies need before the task uses them ---------------------------------

# Inspect's transformers provider (`hf/...`): it samples unless `-M do_sample=false`, and
# transformers refuses a temperature of 0 when sampling.
_HF_PROVIDER = ("inspect_ai.model._providers.hf", "HuggingFaceAPI")
# Set on a provider instance whose sampling this module turned off, so it turns it back on.
_GREEDY_MARK = "_smoldataenvs_made_greedy"


def honour_greedy(model: Model, task_temperature: float | None) -> None:
    """Make the `hf/` provider decode greedily when the run asks for temperature 0.

    Every other provider reads temperature 0 as greedy; Inspect's `hf` provider samples by
    default, so the program task's greedy request made transformers raise "`temperature` (=0.0)
    has to be a strictly positive float" after the model loaded, and only `-M do_sample=false`
    (which nothing said) ran it (issue 43). The temperature is the run's own (`--temperature`),
    else the task's. Sampling is only ever turned off for a temperature of 0, and back on for a
    later sampled run in the same process (`pass_k`), never against a `-M do_sample` the user
    gave with a temperature that needs it."""
    api = model.api
    if (type(api).__module__, type(api).__name__) != _HF_PROVIDER:
        return
    temperature = model.config.temperature
    if temperature is None:
        temperature = task_temperature
    greedy = temperature == 0
    if greedy and getattr(api, "do_sample", False):
        api.do_sample = False  # type: ignore[attr-defined]
        setattr(api, _GREEDY_MARK, True)
    elif not greedy and getattr(api, _GREEDY_MARK, False):
        api.do_sample = True  # type: ignore[attr-defined]
        setattr(api, _GREEDY_MARK, False)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {key: _without_surrogates(item) for key, item in value.items()}
    return value


def writable_message(message: ChatMessageAssistant) -> ChatMessageAssistant:
    """`message` with every lone surrogate (text, tool-call arguments) read as U+FFFD; the
    message itself when it has none.

    A provider can pass `"\\ud800"` through from its JSON. Inspect keeps it in the conversation,
    and at the sample's end it cannot hash or write the message (a PydanticSerializationError
    that ended the whole eval, issue 44). The tools read the same text (`pipeline.tool_command`),
    so what ran is what the log shows."""
    try:
        message.model_dump_json()
    except ValueError:  # pydantic's serialisation error is a ValueError
        return ChatMessageAssistant.model_validate(_without_surrogates(message.model_dump()))
    return message
