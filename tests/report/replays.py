"""Replay files for the report tests: known replies over the bundled sample, with known verdicts.

`MIXED` gives each sample task one reply whose category is known in advance (correct, wrong
value, crash by exception, shell answer, syntax error, no answer, command answer), so tests can
check the report's counts against the replies rather than against numbers copied from a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.replay import ReplayBook
from smoldataenvs_tasks.validate import BUNDLED_GOLD

MISSING_TABLE_TASK = "sample/0009/returns.ipynb_qa_1"


@dataclass(frozen=True)
class Reply:
    """A reply and the verdict it must earn (category, detail); None = the gold program."""

    text: str | None
    category: str
    detail: str | None = None


def _fenced(code: str, tag: str = "python") -> str:
    return f"Here is my program.\n\n```{tag}\n{code}\n```\n"


GOLD = Reply(None, "correct")
# One reply per sample task; the missing-table task stays gold (it is ungraded whatever it says).
MIXED: dict[str, Reply] = {
    "sample/0001/orders.ipynb_qa_1": GOLD,
    "sample/0001/orders.ipynb_qa_2": Reply(_fenced('print("1.0")'), "wrong_value"),
    "sample/0002/survey.ipynb_qa_1": Reply(
        _fenced('counts = {}\nprint(counts["Zurich"])'), "crash", "KeyError"
    ),
    "sample/0003/sales.ipynb_qa_1": Reply(_fenced("echo Blenders", "bash"), "shell_answer"),
    "sample/0004/weather.ipynb_qa_1": Reply(_fenced("print((1"), "syntax_error"),
    "sample/0005/books.ipynb_qa_1": Reply(_fenced("total = 1 + 1"), "no_answer"),
    "sample/0006/library.ipynb_qa_1": Reply(_fenced('print("echo yes")'), "command_answer"),
    "sample/0007/sensors.ipynb_qa_1": Reply(_fenced("print(1 / 0)"), "crash", "ZeroDivisionError"),
    "sample/0008/flights.ipynb_qa_1": GOLD,
    MISSING_TABLE_TASK: Reply(None, "ungraded", "table_unavailable"),
}
# The same rewards as MIXED with other categories on two tasks (for compare's category changes).
MIXED_OTHER_FAILURES: dict[str, Reply] = {
    **MIXED,
    "sample/0001/orders.ipynb_qa_2": Reply(
        _fenced("import missing_module"), "crash", "ModuleNotFoundError"
    ),
    "sample/0002/survey.ipynb_qa_1": Reply(_fenced('print("3")'), "wrong_value"),
}


# Two answers the default profile accepts and the strict one refuses (docs/scoring.md): a hedge
# for gold 22 (one_number) and 0.2229 for gold 22.29 without a % (percent_bridge). Their
# categories here are the default profile's; under strict both are wrong_value.
HEDGED: dict[str, Reply] = {
    **MIXED,
    "sample/0002/survey.ipynb_qa_1": Reply(_fenced('print("22 or maybe 23")'), "correct"),
    "sample/0004/weather.ipynb_qa_1": Reply(_fenced('print("0.2229")'), "correct"),
}
STRICT_REFUSES = ("sample/0002/survey.ipynb_qa_1", "sample/0004/weather.ipynb_qa_1")


def gold_completions() -> dict[str, str]:
    book = ReplayBook.load(BUNDLED_GOLD)
    return {task_id: rows[0].completion for task_id, rows in book.by_task.items()}


def write_replay(path: Path, *epochs: dict[str, Reply], drop: tuple[str, ...] = ()) -> Path:
    """A replay file with one row per task per epoch (rows in epoch order), minus `drop`."""
    gold = gold_completions()
    records = {r.task_id: r for r in load_tasks("sample")}
    lines = []
    for replies in epochs:
        for task_id, reply in replies.items():
            if task_id in drop:
                continue
            record = records[task_id]
            text = gold[task_id] if reply.text is None else reply.text
            row = {
                "task_id": task_id,
                "messages": [
                    {"role": "user", "content": record.question},
                    {"role": "assistant", "content": text},
                ],
            }
            lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def expected_reward(reply: Reply) -> float | None:
    if reply.category == "ungraded":
        return None
    return 1.0 if reply.category == "correct" else 0.0
