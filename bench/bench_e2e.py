"""End-to-end throughput of the SmolDataEnvs tasks next to the same programs run bare (issue 8).

    .venv/bin/python bench/bench_e2e.py            # full: medians of 3 runs, ~25 min on 2 cores
    .venv/bin/python bench/bench_e2e.py --quick    # smaller N, one run each: ~6 min
    .venv/bin/python bench/bench_e2e.py --smoke    # 3 tasks: proves it runs (tests/bench)
    .venv/bin/python bench/bench_e2e.py --only core,threads --wait-quiet 2.5 --json out.json

Groups (`--only`): core (repeated, interleaved), defaults, threads, scale, agentic, lmeval, docker,
rss. The numbers, the machine and the levers are in docs/performance.md.

What it does, all in one run so the ratios are measured side by side:

1. Generates tasks in the mirror layout (DECISIONS.md) under a scratch dir on the cache's
   filesystem: one small csv per task (a few hundred rows) and a question whose gold answer is
   computed here; replay files with one gold reply per task (a pandas program for the program
   variant; `ls`, `head`, a python heredoc and an `echo > /workdir/answer.txt` for the agentic one).
2. The floor: the same programs run bare, `python3 prog.py` with the sandbox env's interpreter (so
   library import costs are the same) in a fresh temp dir holding the table, sequentially and with
   2 workers; for the agentic variant the same bash commands, paths pointed at temp dirs.
3. The harness: each configuration in its own fresh process (so peak RSS is that run's): Inspect's
   `eval()` with the replay model (program variant N=100 and N=500 in bwrap, N=50 in Docker; the
   agentic variant N=100 in bwrap) with `max_samples = max_sandboxes = workers`; lm-eval's
   `simple_evaluate` with the replay LM (N=100, bwrap, runner concurrency = workers). Every run
   must grade all its samples correct, or its row is marked INVALID.
4. Eval-process peak RSS with 1 MB and 500 MB tables (sparse files, hard-linked, never read whole).

Printed: per-sample time (wall time of the whole eval call, task creation to returned log, / N),
the harness overhead per sample (per-sample time - bare per-program time at the same number of
workers), the ratio to bare, throughput scaling from 1 to 2 workers, peak RSS and log sizes.
Runs of the repeated configurations are interleaved (bare, harness, bare, ...) so drifting machine
load hits both sides alike. Not a pass/fail test: targets are printed next to the numbers.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SPLIT = (
    "test"  # the mirrors hold their tasks under a real split name, as `smoldataenvs mirror` does
)
BUCKET = "bench/e2e-tables"
MB = 1_000_000
STOCK_INSPECT_DOCKER_S = 2.5  # Inspect's stock docker sandbox, per sample, on this class of machine
TARGET_RATIO = 1.5
TARGET_SCALING = 1.7


# ---------------------------------------------------------------------------------------- tasks
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
        (pool / prefix / table).write_text(text)
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
    """A mirror (DECISIONS.md layout) of `tasks`, its tables hard-linked from `pool`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from smoldataenvs_tasks.data.layout import file_entry, table_key, write_manifest
    from smoldataenvs_tasks.data.prompts import agent_instruction

    files: dict[str, dict[str, Any]] = {}
    hashes: dict[int, str] = {}
    rows = []
    for task in tasks:
        source = pool / task.prefix / task.table
        key = table_key(BUCKET, task.prefix, task.table)
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

    with open(path, "w") as handle:
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
    with open(agentic_path, "w") as agentic_file:
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


# ----------------------------------------------------------------------------------------- bare
def sandbox_python() -> Path:
    from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

    return ensure_env() / "bin" / "python3"


def _bare_env(python: Path, home: Path) -> dict[str, str]:
    return {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
    }


def _answer_matches(printed: str, gold: str) -> bool:
    last = next((line for line in reversed(printed.splitlines()) if line.strip()), "").strip()
    if last == gold:
        return True
    try:
        return abs(float(last) - float(gold)) <= 0.011
    except ValueError:
        return False


def _bare_program(python: Path, scratch: Path, pool: Path, task: BenchTask) -> bool:
    run_dir = Path(tempfile.mkdtemp(dir=scratch))
    try:
        os.link(pool / task.prefix / task.table, run_dir / task.table)
        (run_dir / "prog.py").write_text(task.program)
        done = subprocess.run(
            [str(python), "prog.py"],
            cwd=run_dir,
            env=_bare_env(python, run_dir),
            capture_output=True,
            text=True,
            timeout=120,
        )
        return _answer_matches(done.stdout, task.answer)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _bare_agentic(python: Path, scratch: Path, pool: Path, task: BenchTask) -> bool:
    run_dir = Path(tempfile.mkdtemp(dir=scratch))
    try:
        input_dir, workdir = run_dir / "input", run_dir / "workdir"
        input_dir.mkdir()
        workdir.mkdir()
        os.link(pool / task.prefix / task.table, input_dir / task.table)
        for command in agentic_commands(task):
            command = command.replace("/home/user/input", str(input_dir))
            command = command.replace("/workdir", str(workdir))
            subprocess.run(
                ["bash", "-c", command],
                cwd=workdir,
                env=_bare_env(python, run_dir),
                capture_output=True,
                timeout=120,
            )
        return (workdir / "answer.txt").read_text() == task.answer
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def child_bare(spec: dict[str, Any]) -> dict[str, Any]:
    """The floor: the same programs (or agent commands) run bare, `workers` at a time."""
    tasks = [BenchTask(**row) for row in json.loads(Path(spec["tasks_file"]).read_text())]
    if spec.get("one_thread"):
        tasks = [one_thread(task) for task in tasks]
    python = sandbox_python()
    one = _bare_agentic if spec["variant"] == "agentic" else _bare_program
    pool = Path(spec["pool"])
    scratch = Path(tempfile.mkdtemp(prefix="bare-", dir=spec["scratch"]))
    meter = CpuMeter.own(spec.get("cpu_group"))
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(spec["workers"]) as executor:
        oks = list(executor.map(lambda task: one(python, scratch, pool, task), tasks))
    wall = time.perf_counter() - started
    cpu = meter.seconds()
    shutil.rmtree(scratch, ignore_errors=True)
    return {"wall_s": wall, "cpu_s": cpu, "n": len(tasks), "correct": sum(oks)}


# ------------------------------------------------------------------------------ harness (child)
def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class CpuMeter:
    """CPU seconds used since creation by every process in the run's accounting cgroup.

    rusage cannot see the programs: bwrap's in-namespace init is not reaped by the process that
    waits for bwrap. A cgroup can: the parent puts each run's process into a fresh cpuacct group
    (v1; `cpu.stat` in v2) that the sandboxes' own cgroups do not touch, so launchers, bwrap and
    programs are all charged to it. None where no such group could be made.
    """

    def __init__(self, group: Path | None) -> None:
        self.group = group
        self.start = self._read()

    @classmethod
    def own(cls, group: str | None) -> CpuMeter:
        return cls(Path(group) if group else None)

    def _read(self) -> float | None:
        if self.group is None:
            return None
        try:
            if (self.group / "cpuacct.usage").exists():
                return int((self.group / "cpuacct.usage").read_text()) / 1e9
            for line in (self.group / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def seconds(self) -> float | None:
        now = self._read()
        return None if now is None or self.start is None else now - self.start


def _own_cgroup_dir() -> Path | None:
    """A directory under which this process may create a CPU-accounting group, or None."""
    with open("/proc/self/cgroup") as handle:
        lines = [line.rstrip("\n").split(":", 2) for line in handle]
    for _, controllers, path in lines:
        if "cpuacct" in controllers.split(","):
            for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
                base = Path("/sys/fs/cgroup", mount)
                if (base / "cpuacct.usage").exists():
                    return base / path.lstrip("/")
    for _, controllers, path in lines:
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup") / path.lstrip("/")
    return None


def new_cpu_group(name: str) -> Path | None:
    parent = _own_cgroup_dir()
    if parent is None:
        return None
    group = parent / name
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def remove_cpu_group(group: Path | None) -> None:
    if group is not None:
        for _ in range(50):  # the run's processes may take a moment to leave it
            try:
                group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def child_inspect(spec: dict[str, Any]) -> dict[str, Any]:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program

    rss_before = _current_rss_mb()
    meter = CpuMeter.own(spec.get("cpu_group"))
    began_at = time.time()
    started = time.perf_counter()
    task_fn = smoldataenvs_program if spec["variant"] == "program" else smoldataenvs
    task = task_fn(split=SPLIT, mirror=spec["mirror"], sandbox=spec["sandbox"])
    workers = spec["workers"]
    options: dict[str, Any] = {}
    if workers:  # 0 = Inspect's defaults (what a user who sets nothing gets)
        # Only max_samples: setting max_sandboxes makes Inspect sleep random() s before every
        # sample's sandbox starts (a fairness delay between tasks, see docs/performance.md).
        options = {"max_samples": workers}
    [header] = inspect_eval(
        task,
        model="replay/bench",
        model_args={"path": spec["replay"]},
        log_dir=spec["log_dir"],
        display="none",
        log_level="warning",
        # as `inspect eval` does: the samples are in the log file, not returned in memory
        log_header_only=True,
        **options,
    )
    wall = time.perf_counter() - started
    ended_at = time.time()
    # Docker's containers are charged to Docker's cgroups, not this run's: leave CPU out.
    cpu = meter.seconds() if spec["sandbox"] != "docker" else None
    peak_rss = _peak_rss_mb()  # before reading the log back below
    log = read_eval_log(header.location)
    samples = log.samples or []
    scorer = "program_scorer" if spec["variant"] == "program" else "answer_file_scorer"
    correct = sum(1 for s in samples if s.scores and s.scores[scorer].value == 1.0)
    times = [s.total_time for s in samples if s.total_time is not None]
    runs = [_program_run_s(s) for s in samples]
    runs = [r for r in runs if r is not None]
    starts = [_epoch_s(s.started_at) for s in samples if s.started_at]
    ends = [_epoch_s(s.completed_at) for s in samples if s.completed_at]
    # Time outside the samples (task creation, eval start-up, log finalisation): fixed per run.
    fixed = (min(starts) - began_at) + (ended_at - max(ends)) if starts and ends else None
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "n": len(samples),
        "correct": correct,
        "status": log.status,
        "error": str(log.error.message)[:500] if log.error else None,
        "sample_time_median_s": statistics.median(times) if times else None,
        "fixed_s": fixed,
        "program_run_median_s": statistics.median(runs) if runs else None,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak_rss,
        "log_bytes": Path(header.location).stat().st_size,
    }


def _program_run_s(sample: Any) -> float | None:
    """How long the sample's program ran (its sandbox exec of /tmp/solve.py), from the log."""
    for event in sample.events:
        cmd = str(getattr(event, "cmd", "") or "")
        if event.event == "sandbox" and event.action == "exec" and "solve.py" in cmd:
            if event.completed is not None:
                return (event.completed - event.timestamp).total_seconds()
    return None


def _epoch_s(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


def child_lmeval(spec: dict[str, Any]) -> dict[str, Any]:
    import lm_eval

    from smoldataenvs_tasks.lm_eval.models import ReplayLM
    from smoldataenvs_tasks.lm_eval.paths import task_manager

    rss_before = _current_rss_mb()
    meter = CpuMeter.own(spec.get("cpu_group"))
    started = time.perf_counter()
    metadata = {"mirror": spec["mirror"], "sandbox": spec["sandbox"]}
    if spec["workers"]:
        metadata["concurrency"] = spec["workers"]
    results = lm_eval.simple_evaluate(
        model=ReplayLM(path=spec["replay"]),
        tasks=["smoldataenvs_program_test"],
        task_manager=task_manager(include_defaults=False, metadata=metadata),
        confirm_run_unsafe_code=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    wall = time.perf_counter() - started
    cpu = meter.seconds()
    peak_rss = _peak_rss_mb()
    samples = results["samples"]["smoldataenvs_program_test"]
    correct = sum(1 for s in samples if json.loads(s["filtered_resps"][0]).get("reward") == 1.0)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "n": len(samples),
        "correct": correct,
        "status": "success",
        "error": None,
        "rss_before_mb": rss_before,
        "peak_rss_mb": peak_rss,
        "log_bytes": None,
    }


def run_child(spec: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """One harness run in a fresh interpreter; its JSON result, or an error row."""
    spec_path = Path(tempfile.mkstemp(suffix=".json", dir=scratch)[1])
    out_path = spec_path.with_suffix(".out.json")
    spec_path.write_text(json.dumps({**spec, "out": str(out_path)}))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("INSPECT_EVAL_MAX_SAMPLES", None)
    env.pop("SMOLDATAENVS_MAX_PROGRAMS", None)
    env.update(spec.get("env") or {})
    group = new_cpu_group(f"bench-e2e-{os.getpid()}-{spec_path.stem}")
    if group is not None:
        spec_path.write_text(json.dumps({**spec, "out": str(out_path), "cpu_group": str(group)}))

    def join_group() -> None:  # in the child before exec: every descendant is charged there
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            preexec_fn=join_group,  # safe: this process runs no other threads here
        )
    finally:
        remove_cpu_group(group)
    if done.returncode != 0 or not out_path.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
        return {"wall_s": None, "n": 0, "correct": 0, "status": "crashed", "error": "\n".join(tail)}
    return json.loads(out_path.read_text())


def child_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    runners = {"bare": child_bare, "lmeval": child_lmeval, "inspect": child_inspect}
    result = runners[spec["harness"]](spec)
    Path(spec["out"]).write_text(json.dumps(result))


# ----------------------------------------------------------------------------- orchestration
@dataclass
class Config:
    key: str  # unique row id
    label: str  # what the table shows
    harness: str  # "bare", "inspect", "lmeval"
    variant: str  # "program", "agentic"
    sandbox: str  # "-", "bwrap", "docker"
    n: int
    workers: int  # 0 = the harness's defaults
    repeated: bool  # part of the interleaved, repeated core
    mirror: str = ""
    group: str = "core"
    env: dict[str, str] = field(default_factory=dict)  # for the run's process
    one_thread: bool = False  # programs pin numpy's BLAS to one thread (ONE_THREAD_PREFIX)


@dataclass
class Measured:
    config: Config
    runs: list[dict[str, Any]] = field(default_factory=list)

    def ok_runs(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r.get("wall_s") and r["correct"] == r["n"] == self.config.n]

    def per_sample(self) -> float | None:
        ok = self.ok_runs()
        return statistics.median(r["wall_s"] / r["n"] for r in ok) if ok else None

    def cpu_per_sample(self) -> float | None:
        ok = [r for r in self.ok_runs() if r.get("cpu_s") is not None]
        return statistics.median(r["cpu_s"] / r["n"] for r in ok) if ok else None

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.ok_runs() if r.get(key) is not None]
        return statistics.median(values) if values else None

    @property
    def invalid(self) -> str | None:
        bad = [r for r in self.runs if r not in self.ok_runs()]
        if not bad:
            return None
        first = bad[0]
        return (
            f"{len(bad)}/{len(self.runs)} runs INVALID ({first.get('status')}: "
            f"{first['correct']}/{first['n']} correct of {self.config.n}) {first.get('error') or ''}"
        )


SIZES = {  # (N for the core rows, N for the scale rows, N in Docker, N per big-table run)
    "full": (100, 500, 50, 20),
    "quick": (20, 60, 10, 10),
    "smoke": (3, 0, 0, 0),
}


def plan(mode: str, only: str | None, docker_ok: bool) -> list[Config]:
    """Every configuration to measure, in the order they are run."""
    n_small, n_large, n_docker, n_rss = SIZES[mode]
    small = f"n{n_small}"
    configs: list[Config] = []

    def add(
        key: str,
        label: str,
        harness: str,
        variant: str,
        sandbox: str,
        n: int,
        workers: int,
        group: str,
        mirror: str = small,
        env: dict[str, str] | None = None,
    ) -> None:
        repeated = group == "core"
        configs.append(
            Config(
                key,
                label,
                harness,
                variant,
                sandbox,
                n,
                workers,
                repeated,
                mirror,
                group,
                env or {},
                one_thread=group == "threads",
            )
        )

    for w in (1, 2):
        add(f"bare-p-{w}", "bare programs", "bare", "program", "-", n_small, w, "core")
        add(f"insp-p-bwrap-{n_small}-{w}", "Inspect program", "inspect", "program", "bwrap",
            n_small, w, "core")  # fmt: skip
    if mode != "smoke":
        add("insp-p-bwrap-default", "Inspect program, default concurrency", "inspect", "program",
            "bwrap", n_small, 0, "defaults")  # fmt: skip
        # the same without the program slots: every sample in flight runs its program at once
        add("insp-p-bwrap-default-unlimited", "Inspect program, default concurrency, no program "
            "slots", "inspect", "program", "bwrap", n_small, 0, "defaults",
            env={"SMOLDATAENVS_MAX_PROGRAMS": "1000"})  # fmt: skip
        for w in (1, 2):  # the harness's own scaling, with programs that use one core each
            add(f"bare-p1t-{w}", "bare programs, 1 BLAS thread", "bare", "program", "-", n_small,
                w, "threads")  # fmt: skip
            add(f"insp-p1t-bwrap-{n_small}-{w}", "Inspect program, 1 BLAS thread", "inspect",
                "program", "bwrap", n_small, w, "threads")  # fmt: skip
        for w in (1, 2):
            add(f"insp-p-bwrap-{n_large}-{w}", "Inspect program", "inspect", "program", "bwrap",
                n_large, w, "scale", f"n{n_large}")  # fmt: skip
        for w in (1, 2):
            add(f"bare-a-{w}", "bare agent commands", "bare", "agentic", "-", n_small, w,
                "agentic")  # fmt: skip
            add(f"insp-a-bwrap-{w}", "Inspect agentic", "inspect", "agentic", "bwrap", n_small,
                w, "agentic")  # fmt: skip
        for w in (1, 2):
            add(f"lmeval-p-bwrap-{w}", "lm-eval program", "lmeval", "program", "bwrap", n_small,
                w, "lmeval")  # fmt: skip
        if docker_ok:
            for w in (1, 2):
                add(f"insp-p-docker-{w}", "Inspect program", "inspect", "program", "docker",
                    n_docker, w, "docker", f"n{n_docker}")  # fmt: skip
            # DockerSession (docker run/exec/rm), the path lm-eval and `validate` take
            add("lmeval-p-docker-2", "lm-eval program", "lmeval", "program", "docker", n_docker,
                2, "docker", f"n{n_docker}")  # fmt: skip
        for label in ("rss1mb", "rss500mb"):
            add(f"insp-p-bwrap-{label}", f"Inspect program, {label[3:].upper()} tables",
                "inspect", "program", "bwrap", n_rss, 2, "rss", label)  # fmt: skip
    if only:
        wanted = set(only.split(","))
        configs = [c for c in configs if c.group in wanted or c.key.startswith("bare-p-")]
    return configs


def measure(config: Config, data: BenchData, scratch: Path, index: int) -> dict[str, Any]:
    if config.harness == "bare":
        tasks_file = scratch / f"tasks-{config.n}.json"
        if not tasks_file.exists():
            tasks_file.write_text(json.dumps([asdict(t) for t in data.tasks[: config.n]]))
        spec = {
            "harness": "bare",
            "variant": config.variant,
            "workers": config.workers,
            "tasks_file": str(tasks_file),
            "pool": str(data.root / "pool"),
            "scratch": str(scratch),
            "one_thread": config.one_thread,
        }
        return run_child(spec, scratch)
    log_dir = scratch / "logs" / f"{config.key}-{index}"
    replay = data.program_replay if config.variant == "program" else data.agentic_replay
    if config.one_thread:
        replay = data.program_replay.with_name("program_1t.jsonl")
    spec = {
        "harness": config.harness,
        "variant": config.variant,
        "sandbox": config.sandbox,
        "workers": config.workers,
        "mirror": str(data.mirrors[config.mirror]),
        "replay": str(replay),
        "log_dir": str(log_dir),
        "env": config.env,
    }
    return run_child(spec, scratch)


def wait_for_quiet(
    threshold: float | None, say: Callable[[str], None], *, limit_s: float = 300
) -> None:
    """On a shared machine: wait (up to `limit_s`) for the 1-minute load average to drop below
    `threshold`, so a burst of someone else's work does not land in one side of a ratio."""
    if threshold is None:
        return
    deadline = time.monotonic() + limit_s
    waited = False
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        if not waited:
            say(
                f"    waiting for the load average ({os.getloadavg()[0]:.1f}) to drop below {threshold}"
            )
            waited = True
        time.sleep(5)


def run_all(
    configs: Sequence[Config],
    data: BenchData,
    runs: int,
    say: Callable[[str], None],
    *,
    quiet_load: float | None = None,
) -> dict[str, Measured]:
    measured = {c.key: Measured(c) for c in configs}
    scratch = data.root / "runs"
    scratch.mkdir(exist_ok=True)
    schedule: list[Config] = []
    repeated = [c for c in configs if c.repeated]
    for _ in range(runs):
        schedule += repeated  # interleaved: bare c1, harness c1, bare c2, harness c2, again...
    schedule += [c for c in configs if not c.repeated]
    for index, config in enumerate(schedule, start=1):
        wait_for_quiet(quiet_load, say)
        started = time.perf_counter()
        load = os.getloadavg()[0]
        result = measure(config, data, scratch, index)
        result["load_before"] = load
        measured[config.key].runs.append(result)
        status = "ok" if result.get("wall_s") and result["correct"] == config.n else "INVALID"
        say(
            f"  [{index}/{len(schedule)}] {config.key}: {time.perf_counter() - started:.1f}s "
            f"({result['correct']}/{config.n} correct, {status}; load average before {load:.1f})"
        )
        if status != "ok" and result.get("error"):
            say("      " + str(result["error"]).replace("\n", "\n      "))
    return measured


# ----------------------------------------------------------------------------------- report
def _fmt(value: float | None, spec: str = ".3f", unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    return "\n".join([line, rule, *body])


def report(measured: dict[str, Measured], runs: int) -> tuple[str, dict[str, Any]]:
    by = measured.get
    out: list[str] = []
    summary: dict[str, Any] = {}

    def bare_for(config: Config) -> Measured | None:
        prefix = "bare-a" if config.variant == "agentic" else "bare-p"
        if config.one_thread:
            prefix = "bare-p1t"
        return by(f"{prefix}-{config.workers or 2}")

    rows = []
    for m in measured.values():
        c = m.config
        if c.harness == "bare" or c.group == "rss":
            continue
        per, cpu = m.per_sample(), m.cpu_per_sample()
        bare = bare_for(c)
        floor = bare.per_sample() if bare else None
        cpu_floor = bare.cpu_per_sample() if bare else None
        overhead = None if per is None or floor is None else per - floor
        ratio = None if per is None or floor is None else per / floor
        cpu_ratio = None if cpu is None or not cpu_floor else cpu / cpu_floor
        rows.append(
            [
                c.label,
                c.sandbox,
                str(c.n),
                str(c.workers) if c.workers else "default",
                f"{len(m.ok_runs())}/{len(m.runs)}",
                _fmt(per, ".3f", " s"),
                _fmt(floor, ".3f", " s"),
                _fmt(overhead, "+.3f", " s"),
                _fmt(ratio, ".2f", "x"),
                _fmt(cpu, ".3f", " s"),
                _fmt(cpu_ratio, ".2f", "x"),
                _fmt(m.median("fixed_s"), ".1f", " s"),
                _fmt(m.median("sample_time_median_s"), ".2f", " s"),
            ]
        )
        summary[c.key] = {
            "per_sample_s": per,
            "bare_s": floor,
            "ratio": ratio,
            "cpu_per_sample_s": cpu,
            "cpu_ratio": cpu_ratio,
        }
    bare_rows = []
    for m in measured.values():
        if m.config.harness == "bare":
            bare_rows.append(
                [
                    m.config.label,
                    str(m.config.n),
                    str(m.config.workers),
                    f"{len(m.ok_runs())}/{len(m.runs)}",
                    _fmt(m.per_sample(), ".3f", " s"),
                    _fmt(m.cpu_per_sample(), ".3f", " s"),
                ]
            )
            summary[m.config.key] = {
                "per_sample_s": m.per_sample(),
                "cpu_per_sample_s": m.cpu_per_sample(),
            }
    out.append(
        f"Per-sample time = wall time of the run / N; medians of {runs} runs for the repeated "
        "core rows, one run otherwise"
    )
    out.append(_table(["floor", "N", "workers", "runs ok", "per program", "CPU"], bare_rows))
    out.append("")
    out.append(
        _table(
            [
                "harness",
                "sandbox",
                "N",
                "workers",
                "runs ok",
                "per sample",
                "bare",
                "overhead",
                "ratio",
                "CPU",
                "CPU ratio",
                "fixed",
                "latency",
            ],
            rows,
        )
    )
    out.append(
        "overhead = per sample - bare per program at the same number of workers ('default' rows "
        "are compared with 2 workers); CPU = user+sys seconds per sample of every process of the "
        "run (its accounting cgroup; not measurable for Docker, whose containers are charged to "
        "Docker's cgroups); fixed = run time outside every sample (task creation, start-up, log "
        "finalisation), included in per sample; latency = median sample's own start-to-end time."
    )

    scaling_rows = []
    for one_key, two_key, label in _scaling_pairs(measured):
        one, two = by(one_key), by(two_key)
        if not one or not two or not one.per_sample() or not two.per_sample():
            continue
        scaling = one.per_sample() / two.per_sample()
        scaling_rows.append([label, _fmt(scaling, ".2f", "x")])
        summary[f"scaling:{label}"] = scaling
    if scaling_rows:
        out += ["", _table(["throughput 2 workers / 1 worker", "scaling"], scaling_rows)]

    concurrency_rows = []
    for m in measured.values():
        c = m.config
        if c.group == "defaults" or (c.group == "core" and c.harness == "inspect"):
            concurrency_rows.append(
                [
                    c.label,
                    str(c.workers) if c.workers else "Inspect's default",
                    c.env.get("SMOLDATAENVS_MAX_PROGRAMS", "CPUs") if c.workers == 0 else "-",
                    _fmt(m.per_sample(), ".3f", " s"),
                    _fmt(m.median("sample_time_median_s"), ".2f", " s"),
                    _fmt(m.median("program_run_median_s"), ".2f", " s"),
                    _fmt(m.median("peak_rss_mb"), ".0f", " MB"),
                ]
            )
    if any(m.config.group == "defaults" for m in measured.values()):
        out += [
            "",
            "Concurrency: samples in flight vs programs running at once (program run = median "
            "time of the program's own exec, from the log)",
            _table(
                [
                    "run",
                    "max_samples",
                    "program slots",
                    "per sample",
                    "latency",
                    "program run",
                    "peak RSS",
                ],
                concurrency_rows,
            ),
        ]

    rss_rows = []
    for m in measured.values():
        if m.config.harness == "bare" or m.median("peak_rss_mb") is None:
            continue
        c = m.config
        log_bytes = m.median("log_bytes")
        rss_rows.append(
            [
                f"{c.label} ({c.sandbox}, {c.workers or 'default'} w)",
                str(c.n),
                _fmt(m.median("rss_before_mb"), ".0f", " MB"),
                _fmt(m.median("peak_rss_mb"), ".0f", " MB"),
                _fmt(
                    None
                    if m.median("peak_rss_mb") is None
                    else m.median("peak_rss_mb") - (m.median("rss_before_mb") or 0),
                    "+.0f",
                    " MB",
                ),
                "-" if log_bytes is None else f"{log_bytes / MB:.2f} MB",
            ]
        )
    if rss_rows:
        out += [
            "",
            "Eval-process memory (peak RSS = ru_maxrss of the process that ran the eval)",
            _table(["run", "N", "RSS before eval", "peak RSS", "growth", "log size"], rss_rows),
        ]
    out += ["", *_verdicts(measured, summary)]
    invalid = [f"{m.config.key}: {m.invalid}" for m in measured.values() if m.invalid]
    if invalid:
        out += ["", "INVALID runs (not counted):", *invalid]
    return "\n".join(out), summary


def _scaling_pairs(measured: dict[str, Measured]) -> list[tuple[str, str, str]]:
    pairs = []
    keys = list(measured)
    for key in keys:
        if key.endswith("-1"):
            twin = key[:-2] + "-2"
            if twin in measured:
                c = measured[key].config
                pairs.append((key, twin, f"{c.label} ({c.sandbox}, N={c.n})"))
    return pairs


def _verdicts(measured: dict[str, Measured], summary: dict[str, Any]) -> list[str]:
    lines = ["Targets (issue 8)"]
    if min((m.config.n for m in measured.values()), default=0) < 100:
        lines.append("(N < 100 here: fixed start-up costs weigh; judge targets on the full run)")
    core = [k for k in measured if k.startswith("insp-p-bwrap-") and k.endswith("-1")]
    for key in core:
        ratio = summary.get(key, {}).get("ratio")
        if ratio is not None:
            mark = "met" if ratio <= TARGET_RATIO else "NOT met"
            lines.append(
                f"- {key}: per-sample time {ratio:.2f}x bare at 1 worker "
                f"(target <= {TARGET_RATIO}x): {mark}"
            )
    for one_key, _, label in _scaling_pairs(measured):
        config = measured[one_key].config
        if not (one_key.startswith("insp-p") and config.sandbox == "bwrap"):
            continue
        value = summary.get(f"scaling:{label}")
        bare_prefix = "bare-p1t" if config.one_thread else "bare-p"
        bare = summary.get(f"scaling:{measured[f'{bare_prefix}-1'].config.label} (-, N="
                           f"{measured[f'{bare_prefix}-1'].config.n})")  # fmt: skip
        if value is None:
            continue
        mark = "met" if value >= TARGET_SCALING else "NOT met"
        lines.append(
            f"- {label}: throughput x{value:.2f} from 1 to 2 workers (target >= "
            f"{TARGET_SCALING}x): {mark}; the same programs bare: x{_fmt(bare, '.2f')}"
        )
    small, big = measured.get("insp-p-bwrap-rss1mb"), measured.get("insp-p-bwrap-rss500mb")
    if small and big and small.median("peak_rss_mb") and big.median("peak_rss_mb"):
        delta = big.median("peak_rss_mb") - small.median("peak_rss_mb")
        lines.append(f"- peak RSS, 500 MB tables minus 1 MB tables: {delta:+.0f} MB")
    for m in measured.values():
        c = m.config
        if c.sandbox == "docker" and m.per_sample() is not None:
            bare = measured.get(f"bare-p-{c.workers}")
            if bare and bare.per_sample():
                overhead = m.per_sample() - bare.per_sample()
                lines.append(
                    f"- Docker, {c.workers} worker(s): overhead {overhead:.2f} s per sample "
                    f"(Inspect's stock docker sandbox: ~{STOCK_INSPECT_DOCKER_S} s)"
                )
    return lines


# ---------------------------------------------------------------------------------------- main
def docker_ready() -> tuple[bool, str]:
    try:
        from smoldataenvs_tasks.sandboxes.docker import image_status

        status = image_status()
    except Exception as error:  # no engine, no client: the docker rows are skipped
        return False, f"{type(error).__name__}: {error}"
    if not status.ready:
        return False, f"the sandbox image is not built ({status})"
    return True, ""


def machine() -> str:
    cpu = "?"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python {sys.version.split()[0]}, "
        f"load average before the run {load[0]:.2f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller N, one run each")
    parser.add_argument(
        "--smoke", action="store_true", help="3 tasks, core rows only: proves the bench runs"
    )
    parser.add_argument("--runs", type=int, default=None, help="runs of the repeated core (3)")
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated groups: core, defaults, scale, agentic, lmeval, docker, rss",
    )
    parser.add_argument("--skip-docker", action="store_true")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=None,
        metavar="LOAD",
        help="before each run, wait up to 5 min for the 1-min load average to drop below LOAD "
        "(for shared machines; e.g. 2.5 on 2 cores)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the generated data and logs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child)
        return
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    runs = args.runs or (3 if mode == "full" else 1)

    def say(text: str) -> None:
        print(text, flush=True)

    from smoldataenvs_tasks._host import cache_root

    skip_docker = args.skip_docker or mode == "smoke"
    docker_ok, docker_why = (False, "--skip-docker") if skip_docker else docker_ready()
    configs = plan(mode, args.only, docker_ok)
    sizes = sorted({c.n for c in configs if not c.mirror.startswith("rss")})
    rss_n = max((c.n for c in configs if c.group == "rss"), default=0)
    say(f"machine: {machine()}")
    sandbox_python()  # builds the sandbox env once, outside every measurement
    # Stage dirs live under the cache: the mirror must be on its filesystem for hard links.
    base = cache_root()
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-e2e-", dir=base))
    try:
        started = time.perf_counter()
        data = build_data(root, sizes, rss_n)
        say(
            f"generated {len(data.tasks)} tasks (+{2 * rss_n} big-table tasks) in "
            f"{time.perf_counter() - started:.1f}s under {root}"
        )
        if not docker_ok:
            say(f"Docker rows skipped: {docker_why}")
        measured = run_all(configs, data, runs, say, quiet_load=args.wait_quiet)
        text, summary = report(measured, runs)
        say("")
        say(text)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "machine": machine(),
                        "runs": runs,
                        "quick": args.quick,
                        "summary": summary,
                        "measured": {
                            k: {"config": asdict(m.config), "runs": m.runs}
                            for k, m in measured.items()
                        },
                    },
                    indent=1,
                )
            )
    finally:
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
