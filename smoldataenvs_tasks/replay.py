"""Replay files: recorded model replies played back by the `replay` model in Inspect and lm-eval.

Format (docs/design.md "Replay files"): JSONL, one row per reply,
`{"task_id": ..., "messages": [...]}` in OpenAI chat format. Assistant tool calls are
`{"id", "type": "function", "function": {"name", "arguments"}}` with `arguments` a JSON string
(a dict is accepted). A row without `task_id` is matched by its first user message. Several rows for
one task serve successive epochs/repeats; when there are fewer rows than epochs they are reused in
order (row `epoch % n`), so a file of one gold reply per task replays under any `--epochs`.
Recorded tool outputs are ignored: the tools run for real.

    smoldataenvs validate --split sample --replay smoldataenvs_tasks/sample/replays/gold_program.jsonl
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError


class ReplayFormatError(SmolDataEnvsError, ValueError):
    """A replay file that does not follow the format; the message names the file and line."""


class ReplayMissingError(SmolDataEnvsError, LookupError):
    """No recorded reply for a task."""


@dataclass(frozen=True)
class ReplayToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ReplayTurn:
    content: str
    tool_calls: tuple[ReplayToolCall, ...] = ()


@dataclass(frozen=True)
class ReplayRow:
    task_id: str | None
    first_user: str | None
    turns: tuple[ReplayTurn, ...]
    line: int = 0

    @property
    def completion(self) -> str:
        """The program variant's reply: the last assistant message's content."""
        return self.turns[-1].content if self.turns else ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _parse_tool_call(raw: Any, where: str, index: int) -> ReplayToolCall:
    if not isinstance(raw, dict):
        raise ReplayFormatError(f"{where}: tool call {index} is not an object")
    function = raw.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ReplayFormatError(f"{where}: tool call {index} lacks function.name")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ReplayFormatError(
                f"{where}: tool call {index} arguments are not JSON: {exc}"
            ) from None
    if not isinstance(arguments, dict):
        raise ReplayFormatError(f"{where}: tool call {index} arguments are not an object")
    call_id = raw.get("id") or f"call_{index}"
    return ReplayToolCall(id=str(call_id), name=function["name"], arguments=arguments)


def parse_row(data: Any, where: str, line: int = 0) -> ReplayRow:
    if not isinstance(data, dict):
        raise ReplayFormatError(f"{where}: a row must be a JSON object")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise ReplayFormatError(f"{where}: 'messages' must be a list")
    task_id = data.get("task_id")
    if task_id is not None and not isinstance(task_id, str):
        task_id = str(task_id)
    first_user: str | None = None
    turns: list[ReplayTurn] = []
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            raise ReplayFormatError(f"{where}: message {position} lacks a role")
        role = message["role"]
        if role == "user" and first_user is None:
            first_user = _content_text(message.get("content"))
        elif role == "assistant":
            calls = tuple(
                _parse_tool_call(call, where, i)
                for i, call in enumerate(message.get("tool_calls") or [])
            )
            turns.append(ReplayTurn(_content_text(message.get("content")), calls))
    if not turns:
        raise ReplayFormatError(f"{where}: no assistant message to replay")
    if task_id is None and first_user is None:
        raise ReplayFormatError(f"{where}: a row needs a task_id or a user message to match on")
    return ReplayRow(task_id=task_id, first_user=first_user, turns=tuple(turns), line=line)


@dataclass
class ReplayBook:
    """All rows of one replay file, indexed by task id and by first user message."""

    source: str
    by_task: dict[str, list[ReplayRow]] = field(default_factory=lambda: defaultdict(list))
    by_first_user: dict[str, list[ReplayRow]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def load(cls, path: str | Path) -> ReplayBook:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReplayFormatError(f"cannot read replay file {path}: {exc}") from None
        except UnicodeDecodeError as exc:
            line = path.read_bytes()[: exc.start].count(b"\n") + 1
            raise ReplayFormatError(
                f"{path}:{line}: not UTF-8 text (byte {exc.start}); a replay file is JSONL"
            ) from None
        return cls.from_lines(text.splitlines(), source=str(path))

    @classmethod
    def from_lines(cls, lines: Iterable[str], *, source: str = "<replay>") -> ReplayBook:
        book = cls(source=source)
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            where = f"{source}:{number}"
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ReplayFormatError(f"{where}: not JSON: {exc}") from None
            except RecursionError:
                raise ReplayFormatError(f"{where}: JSON nested too deeply") from None
            book.add(parse_row(data, where, number))
        if not book.by_task and not book.by_first_user:
            raise ReplayFormatError(f"{source}: no rows")
        return book

    def add(self, row: ReplayRow) -> None:
        if row.task_id is not None:
            self.by_task[row.task_id].append(row)
        elif row.first_user is not None:
            self.by_first_user[row.first_user.strip()].append(row)

    def rows_for(self, task_id: str | None, first_user: str | None) -> list[ReplayRow]:
        if task_id is not None and task_id in self.by_task:
            return self.by_task[task_id]
        if first_user is not None:
            return self.by_first_user.get(first_user.strip(), [])
        return []

    def row_for(self, task_id: str | None, first_user: str | None, index: int) -> ReplayRow:
        """The row serving repeat/epoch `index` (0-based) of a task."""
        rows = self.rows_for(task_id, first_user)
        if not rows:
            raise ReplayMissingError(
                f"{self.source}: no replay row for task {task_id!r}"
                + ("" if task_id is not None else " (matched on its first user message)")
            )
        return rows[index % len(rows)]

    @property
    def task_ids(self) -> list[str]:
        return sorted(self.by_task)
