"""Recorded real replies (tests/realmodel/recorded/): what SmolLM2-135M-Instruct said through
llama-cpp-python's server on the sample split, as replay files (smoldataenvs_tasks/replay.py), and
the verdicts the served run gave them. tests/realmodel/test_recorded.py replays them without a
server; the real-model tier rewrites them with REALMODEL_RECORD=1.

- program.jsonl: one row per task, the program task's two messages and the model's reply.
- agentic.jsonl: one row per task, the agent's turns (its text and its tool calls); the tools'
  outputs are left out, as replay ignores them (the tools run again for real).
- verdicts.json: {"program"|"agentic": {task_id: [value or null, category, detail or null]}}.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parent / "recorded"
VERDICTS = RECORDED / "verdicts.json"


def _openai_message(message: Any) -> dict[str, Any] | None:
    if message.role == "tool":
        return None
    out: dict[str, Any] = {"role": message.role, "content": message.text}
    for call in getattr(message, "tool_calls", None) or []:
        out.setdefault("tool_calls", []).append(
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function, "arguments": json.dumps(call.arguments)},
            }
        )
    return out


def recorded_rows(log: Any) -> list[dict[str, Any]]:
    rows = []
    for sample in sorted(log.samples, key=lambda s: str(s.id)):
        messages = [m for m in map(_openai_message, sample.messages) if m is not None]
        if not any(m["role"] == "assistant" for m in messages):
            continue  # never asked (its table is missing): nothing to replay
        rows.append({"task_id": str(sample.id), "messages": messages})
    return rows


def recorded_verdicts(log: Any) -> dict[str, list[Any]]:
    out = {}
    for sample in sorted(log.samples, key=lambda s: str(s.id)):
        [score] = sample.scores.values()
        value = None if math.isnan(score.value) else float(score.value)
        meta = score.metadata or {}
        out[str(sample.id)] = [value, meta.get("category"), meta.get("detail")]
    return out


def write_recorded(log: Any) -> None:
    """Write one run's replies and verdicts (program or agentic, from the log's task)."""
    variant = "agentic" if log.eval.task.endswith("/smoldataenvs") else "program"
    RECORDED.mkdir(exist_ok=True)
    lines = [json.dumps(row, ensure_ascii=False) for row in recorded_rows(log)]
    (RECORDED / f"{variant}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    verdicts = json.loads(VERDICTS.read_text(encoding="utf-8")) if VERDICTS.is_file() else {}
    verdicts[variant] = recorded_verdicts(log)
    VERDICTS.write_text(json.dumps(verdicts, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def add_unrecorded(variant: str, rows: list[dict[str, Any]]) -> None:
    """Append rows for tasks the file lacks: lm-eval asks the model about the missing-table task,
    which Inspect leaves unasked, and its replay needs a reply for every doc."""
    path = RECORDED / f"{variant}.jsonl"
    have = {json.loads(line)["task_id"] for line in path.read_text(encoding="utf-8").splitlines()}
    new = [json.dumps(row, ensure_ascii=False) for row in rows if row["task_id"] not in have]
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in new)
