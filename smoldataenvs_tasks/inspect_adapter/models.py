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
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError, sample_state
from smoldataenvs_tasks.replay import ReplayBook, ReplayFormatError, ReplayRow


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
