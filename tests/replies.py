"""Replay rows for end-to-end tests: the bundled gold replies and replies that must fail in known ways.

Every bad reply targets one sample task and names the Verdict it must get, so the Inspect and
lm-eval tests (and their parity test) read expectations from one table.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import smoldataenvs_tasks

SAMPLE_DIR = Path(smoldataenvs_tasks.__file__).parent / "sample"
GOLD_PROGRAM = SAMPLE_DIR / "replays" / "gold_program.jsonl"
GOLD_AGENTIC = SAMPLE_DIR / "replays" / "gold_agentic.jsonl"

ORDERS_TASK = "sample/0001/orders.ipynb_qa_1"  # gold "East", exact_short, easy
REVENUE_TASK = "sample/0001/orders.ipynb_qa_2"  # gold "7438.11", numeric, atol .05 rtol .01
MISSING_TABLE_TASK = "sample/0009/returns.ipynb_qa_1"  # its table is absent from the bucket


def forge_revenue_as_gold(log_file: Path, out_dir: Path) -> Path:
    """A forged copy of an Inspect log in `out_dir`: every attempt at REVENUE_TASK recorded as
    the exact gold "7438.11", whatever its program printed (what a dishonest submitter edits).
    Returns the copy's path."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    for sample in log.samples or []:
        if sample.id == REVENUE_TASK:
            [score] = sample.scores.values()
            score.value = 1.0
            score.metadata.update(
                reward=1.0, category="correct", method="exact", prediction="7438.11"
            )
    forged = out_dir / log_file.name
    write_eval_log(log, str(forged))
    return forged


def lm_eval_gold_run(*options: str) -> list[str]:
    """The console script's command replaying the gold replies on the sample's program task,
    with lm-eval's `options` after it."""
    return [
        str(Path(sys.executable).with_name("smoldataenvs-lm-eval")),
        "--tasks",
        "smoldataenvs_program_sample",
        "--model",
        "replay",
        "--model_args",
        f"path={GOLD_PROGRAM}",
        "--confirm_run_unsafe_code",
        *options,
    ]


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my program.\n\n```{tag}\n{code.strip()}\n```\n"


@dataclass(frozen=True)
class BadProgramReply:
    name: str
    task_id: str
    completion: str
    category: str
    method: str | None = None
    detail: str | None = None


BAD_PROGRAM_REPLIES = [
    BadProgramReply(
        "wrong_value",
        ORDERS_TASK,
        fenced("import pandas as pd\nprint(pd.read_csv('orders.csv')['region'].iloc[0] + 'x')"),
        "wrong_value",
        method="miss",
    ),
    BadProgramReply(
        "crash_keyerror",
        REVENUE_TASK,
        fenced("import pandas as pd\ndf = pd.read_csv('orders.csv')\nprint(df['price'].sum())"),
        "crash",
        detail="KeyError",
    ),
    BadProgramReply("shell_block", ORDERS_TASK, fenced('echo "East"', tag="bash"), "shell_answer"),
    BadProgramReply(
        "command_answer", REVENUE_TASK, fenced("print('echo 7438.11')"), "command_answer"
    ),
    BadProgramReply("syntax_error", ORDERS_TASK, fenced("print('East'\nx = = 1"), "syntax_error"),
    BadProgramReply("empty_reply", REVENUE_TASK, "", "no_answer"),
    BadProgramReply(
        "prints_nothing", ORDERS_TASK, fenced("import pandas as pd\nx = 1"), "no_answer"
    ),
    BadProgramReply(
        "within_tolerance",
        REVENUE_TASK,
        fenced("print(7438)"),
        "correct",
        method="numeric",
    ),
]


def program_row(task_id: str, completion: str) -> dict:
    return {
        "task_id": task_id,
        "messages": [
            {"role": "user", "content": "(recorded prompt)"},
            {"role": "assistant", "content": completion},
        ],
    }


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def gold_program_rows() -> list[dict]:
    return [
        json.loads(line)
        for line in GOLD_PROGRAM.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def bash_call(call_id: str, command: str) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def agentic_row(task_id: str, commands: list[str], *, final_text: str = "Done.") -> dict:
    messages: list[dict] = [{"role": "user", "content": "(recorded instruction)"}]
    for index, command in enumerate(commands):
        messages.append(
            {"role": "assistant", "content": "", "tool_calls": [bash_call(f"c{index}", command)]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": "(ignored)"})
    messages.append({"role": "assistant", "content": final_text})
    return {"task_id": task_id, "messages": messages}
