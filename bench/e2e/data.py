"""The bench's generated data, built once per run under a scratch dir on the cache's filesystem.

Tasks over small csv tables whose gold answers are computed here, big-table tasks for the memory
rows (sparse files, hard-linked), one mirror per task count in the mirror layout of docs/design.md
(tables hard-linked from a shared pool), and gold replay files for the program and agentic
variants. `build_data` makes all of it; `BenchData` says where it is.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import BUCKET, MB, SPLIT


@dataclass(frozen=True)
class BenchTask:
    task_id: str
    prefix: str
    table: str
    question: str
    answer: str
    reward_mode: str
    program: str
    atol: float = 0.0
    rtol: float = 0.0


_REGIONS = ("East", "North", "South", "West")
_PRODUCTS = ("blender", "kettle", "mixer", "toaster")


def _sales_table(
    rng: random.Random, rows: int
) -> tuple[str, list[tuple[int, str, str, int, float]]]:
    records = []
    for order_id in range(1, rows + 1):
        records.append(
            (
                order_id,
                rng.choice(_REGIONS),
                rng.choice(_PRODUCTS),
                rng.randint(1, 9),
                round(rng.uniform(5, 120), 2),
            )
        )
    lines = ["order_id,region,product,units,price"]
    lines += [f"{o},{r},{p},{u},{c:.2f}" for o, r, p, u, c in records]
    return "\n".join(lines) + "\n", records


def _question(index: int, table: str, records: list) -> tuple[str, str, str, str, float, float]:
    """(question, gold answer, reward_mode, program body, atol, rtol), four kinds in turn."""
    kind = index % 4
    if kind == 0:
        total = sum(r[3] for r in records)
        body = f'df = pd.read_csv("{table}")\nprint(df.shape)\nprint(int(df["units"].sum()))\n'
        return "How many units were sold in total?", str(total), "numeric", body, 0.0, 0.0
    if kind == 1:
        totals = {region: 0 for region in _REGIONS}
        for r in records:
            totals[r[1]] += r[3]
        best = max(sorted(totals), key=lambda name: totals[name])  # first of ties, as idxmax
        body = (
            f'df = pd.read_csv("{table}")\n'
            'units = df.groupby("region")["units"].sum()\n'
            "print(units.sort_values(ascending=False))\n"
            "print(units.idxmax())\n"
        )
        return "Which region sold the most units?", best, "exact_short", body, 0.0, 0.0
    if kind == 2:
        count = sum(1 for r in records if r[3] > 5)
        body = f'df = pd.read_csv("{table}")\nprint(int((df["units"] > 5).sum()))\n'
        return "How many orders have more than 5 units?", str(count), "numeric", body, 0.0, 0.0
    mean = sum(r[4] for r in records) / len(records)
    body = (
        f'df = pd.read_csv("{table}")\nprint(df.describe())\nprint(round(df["price"].mean(), 2))\n'
    )
    question = "What is the average price, rounded to 2 decimals?"
    return question, f"{mean:.2f}", "numeric", body, 0.01, 1e-3


def make_tasks(pool: Path, count: int, *, rows: int = 400, seed: int = 0) -> list[BenchTask]:
    """`count` tasks with their tables written under `pool/<prefix>/`."""
    rng = random.Random(seed)
    tasks = []
    for index in range(count):
        prefix = f"bench__shop-{index:04d}"
        table = "sales.csv"
        text, records = _sales_table(rng, rows)
        (pool / prefix).mkdir(parents=True, exist_ok=True)
        (pool / prefix / table).write_text(text, encoding="utf-8")
        question, answer, mode, body, atol, rtol = _question(index, table, records)
        tasks.append(
            BenchTask(
                task_id=f"bench/{index:04d}/sales_qa",
                prefix=prefix,
                table=table,
                question=question,
                answer=answer,
                reward_mode=mode,
                program="import pandas as pd\n\n" + body,
                atol=atol,
                rtol=rtol,
            )
        )
    return tasks


def sparse_table(path: Path, size: int) -> Path:
    """A csv whose first rows are real and whose rest is a hole: `size` bytes, no disk blocks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(b"id,value\n1,10\n2,20\n3,30\n")
        handle.truncate(size)
    return path


def make_big_tasks(pool: Path, count: int, size: int, label: str) -> list[BenchTask]:
    """`count` tasks sharing one sparse table of `size` bytes (hard links: no extra space)."""
    source = sparse_table(pool / f".{label}-source" / "big.csv", size)
    tasks = []
    for index in range(count):
        prefix = f"bench__{label}-{index:04d}"
        (pool / prefix).mkdir(parents=True, exist_ok=True)
        target = pool / prefix / "big.csv"
        if not target.exists():
            os.link(source, target)
        program = (
            "import pandas as pd\n\n"
            '# the table is huge: read only its first rows\ndf = pd.read_csv("big.csv", nrows=2)\n'
            'print(int(df["value"].sum()))\n'
        )
        tasks.append(
            BenchTask(
                task_id=f"bench/{label}/{index:04d}",
                prefix=prefix,
                table="big.csv",
                question="What is the sum of `value` over the first two rows?",
                answer="30",
                reward_mode="numeric",
                program=program,
            )
        )
    return tasks


def _sha256(path: Path, cache: dict[int, str]) -> str:
    import hashlib

    inode = path.stat().st_ino
    if inode not in cache:  # hard-linked copies share an inode: hash the 500 MB file once
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        cache[inode] = digest.hexdigest()
    return cache[inode]


def write_mirror(root: Path, pool: Path, tasks: Sequence[BenchTask]) -> Path:
    """A mirror (docs/design.md layout) of `tasks`, its tables hard-linked from `pool`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from smoldataenvs_tasks.data.layout import file_entry, mirror_key, write_manifest
    from smoldataenvs_tasks.data.prompts import agent_instruction

    files: dict[str, dict[str, Any]] = {}
    hashes: dict[int, str] = {}
    rows = []
    for task in tasks:
        source = pool / task.prefix / task.table
        key = mirror_key(BUCKET, task.prefix, task.table)
        target = root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(source, target)
        files[key] = file_entry(source, _sha256(source, hashes))
        rows.append(
            {
                "task_id": task.task_id,
                "question": task.question,
                "answer": task.answer,
                "reward_mode": task.reward_mode,
                "atol": task.atol,
                "rtol": task.rtol,
                "difficulty_tier": ("easy", "medium", "hard")[len(rows) % 3],
                "files": [task.table],
                "hf_bucket": BUCKET,
                "bucket_prefix": task.prefix,
                "kaggle_dataset": task.prefix.replace("__", "/", 1),
                "instruction": agent_instruction(task.question, [task.table]),
            }
        )
    data = root / "data" / f"{SPLIT}-00000-of-00001.parquet"
    data.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), data)
    write_manifest(
        root,
        dataset="bench_e2e generated tasks",
        revision="bench-e2e-1",
        splits={SPLIT: {"path": data.relative_to(root).as_posix(), "tasks": len(rows)}},
        files=files,
    )
    return root


def agentic_commands(task: BenchTask) -> list[str]:
    return [
        "ls -la /home/user/input",
        f"head -n 5 /home/user/input/{task.table}",
        f"cd /home/user/input && python3 - <<'EOF'\n{task.program}EOF",
        f'echo -n "{task.answer}" > /workdir/answer.txt && cat /workdir/answer.txt',
    ]


# Prepended to a program to keep numpy's BLAS on one thread: at import its thread pool otherwise
# spins on every core (~0.08 s of CPU per program here), which two workers then fight over.
ONE_THREAD_PREFIX = (
    'import os\n\nos.environ["OPENBLAS_NUM_THREADS"] = "1"\nos.environ["OMP_NUM_THREADS"] = "1"\n'
)


def one_thread(task: BenchTask) -> BenchTask:
    return replace(task, program=ONE_THREAD_PREFIX + task.program)


def write_program_replay(path: Path, tasks: Sequence[BenchTask]) -> Path:
    from smoldataenvs_tasks.data.prompts import PROGRAM_SYSTEM_PROMPT, program_prompt

    with open(path, "w", encoding="utf-8") as handle:
        for task in tasks:
            reply = (
                f"I'll read the table and print the answer last.\n\n```python\n{task.program}```\n"
            )
            row = {
                "task_id": task.task_id,
                "messages": [
                    {"role": "system", "content": PROGRAM_SYSTEM_PROMPT},
                    {"role": "user", "content": program_prompt(task.question, [task.table])},
                    {"role": "assistant", "content": reply},
                ],
            }
            handle.write(json.dumps(row) + "\n")
    return path


def write_replays(directory: Path, tasks: Sequence[BenchTask]) -> tuple[Path, Path]:
    """Gold replay files: program.jsonl (one program per task) and agentic.jsonl (bash steps)."""
    from smoldataenvs_tasks.data.prompts import agent_instruction, agent_system_prompt

    directory.mkdir(parents=True, exist_ok=True)
    program_path = write_program_replay(directory / "program.jsonl", tasks)
    write_program_replay(directory / "program_1t.jsonl", [one_thread(t) for t in tasks])
    agentic_path = directory / "agentic.jsonl"
    with open(agentic_path, "w", encoding="utf-8") as agentic_file:
        for task in tasks:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": agent_system_prompt()},
                {"role": "user", "content": agent_instruction(task.question, [task.table])},
            ]
            for step, command in enumerate(agentic_commands(task)):
                call_id = f"call_{step}"
                messages.append(
                    {
                        "role": "assistant",
                        "content": "Next step.",
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {
                                    "name": "bash",
                                    "arguments": json.dumps({"command": command}),
                                },
                            }
                        ],
                    }
                )
                messages.append({"role": "tool", "tool_call_id": call_id, "content": ""})
            messages.append({"role": "assistant", "content": f"The answer is {task.answer}."})
            agentic_file.write(json.dumps({"task_id": task.task_id, "messages": messages}) + "\n")
    return program_path, agentic_path


@dataclass
class BenchData:
    root: Path
    tasks: list[BenchTask]
    mirrors: dict[str, Path]  # "n100", "n500", "rss1mb", ... -> mirror dir
    program_replay: Path
    agentic_replay: Path
    big_tasks: dict[str, list[BenchTask]] = field(default_factory=dict)


def build_data(root: Path, sizes: Sequence[int], rss_n: int) -> BenchData:
    pool = root / "pool"
    tasks = make_tasks(pool, max(sizes))
    big = (
        {
            "rss1mb": make_big_tasks(pool, rss_n, 1 * MB, "rss1mb"),
            "rss500mb": make_big_tasks(pool, rss_n, 500 * MB, "rss500mb"),
        }
        if rss_n
        else {"rss1mb": [], "rss500mb": []}
    )
    mirrors = {f"n{n}": write_mirror(root / f"mirror-n{n}", pool, tasks[:n]) for n in sizes}
    for label, big_tasks in big.items():
        if not big_tasks:
            continue
        mirrors[label] = write_mirror(root / f"mirror-{label}", pool, big_tasks)
    program_replay, agentic_replay = write_replays(
        root / "replays", [*tasks, *big["rss1mb"], *big["rss500mb"]]
    )
    return BenchData(root, tasks, mirrors, program_replay, agentic_replay, big)
