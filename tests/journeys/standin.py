"""The journeys' world: a Hub stand-in serving splits at the pinned revision and sizes, and a user
who runs the console scripts against it from a fresh machine (HF_HOME, HF cache, SMOLDATAENVS_CACHE
of their own).

The stand-in splits repeat the bundled sample's 10 rows under new task ids (`eval/c03/0001/...`)
until they reach the pinned sizes (`_pins.SPLIT_SIZES`: eval 144, test 250), so reports see the
splits as standard, not `nonstandard`. Their tables are the sample's own bucket, served by the
stand-in under the sample's bucket name; the sample's `returns.csv` task keeps its missing table,
so every split holds tasks that are ungradable by design (`defective`). The gold replays are the
bundled ones re-keyed to the new ids.

Nothing of the package is patched: the user's commands are subprocesses, configured only through
environment variables (HF_ENDPOINT, HF_HOME, SMOLDATAENVS_CACHE, HF_HUB_OFFLINE).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from smoldataenvs_tasks._host import cache_root
from smoldataenvs_tasks._pins import (
    DATASET_REPO_ID,
    DATASET_REVISION,
    SPLIT_SIZES,
    split_parquet_path,
)
from tests.fakehub import FakeHub
from tests.replies import GOLD_AGENTIC, GOLD_PROGRAM, MISSING_TABLE_TASK, SAMPLE_DIR

BIN = Path(sys.executable).parent
SAMPLE_BUCKET = "smoldataenvs/sample-tables"
SPLITS = ("eval", "test")
PROGRAM_SCORER = "program_scorer"
AGENTIC_SCORER = "answer_file_scorer"
# One journey command may run a whole split of programs; far above what it takes here (~1 min).
COMMAND_TIMEOUT_S = 600


def journey_id(split: str, copy: int, sample_id: str) -> str:
    """`sample/0001/orders.ipynb_qa_1`, copy 3 of split eval -> `eval/c03/0001/orders.ipynb_qa_1`."""
    return f"{split}/c{copy:02d}/{sample_id.removeprefix('sample/')}"


def sample_id_of(task_id: str) -> str:
    return "sample/" + task_id.split("/", 2)[2]


@dataclass(frozen=True)
class StandInData:
    """Files written once per session: the split parquets and the gold replays for their ids."""

    root: Path
    rows: dict[str, list[dict[str, Any]]]  # split -> the rows served
    parquets: dict[str, Path]  # split -> the parquet file served
    gold_program: dict[str, Path]  # split -> replay file
    gold_agentic: dict[str, Path]
    golds: dict[str, str] = field(default_factory=dict)  # task id -> gold answer

    def split_sha256(self, split: str) -> str:
        return hashlib.sha256(self.parquets[split].read_bytes()).hexdigest()

    def task_ids(self, split: str) -> list[str]:
        return [row["task_id"] for row in self.rows[split]]

    def defective(self, split: str) -> list[str]:
        """The split's tasks whose table is missing from the bucket (ungradable by design)."""
        return [t for t in self.task_ids(split) if sample_id_of(t) == MISSING_TABLE_TASK]

    def one_of_each(self, split: str, copy: int = 0) -> list[str]:
        """The ten ids of one copy of the sample: every table format and reward mode, and the
        defective task."""
        return [t for t in self.task_ids(split) if t.startswith(f"{split}/c{copy:02d}/")]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def build_standin_data(root: Path) -> StandInData:
    sample_rows = pq.read_table(SAMPLE_DIR / "data" / "sample-00000-of-00001.parquet").to_pylist()
    program = {row["task_id"]: row for row in _read_jsonl(GOLD_PROGRAM)}
    agentic = {row["task_id"]: row for row in _read_jsonl(GOLD_AGENTIC)}
    rows: dict[str, list[dict[str, Any]]] = {}
    parquets: dict[str, Path] = {}
    gold_program: dict[str, Path] = {}
    gold_agentic: dict[str, Path] = {}
    golds: dict[str, str] = {}
    root.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        served: list[dict[str, Any]] = []
        for index in range(SPLIT_SIZES[split]):
            copy, position = divmod(index, len(sample_rows))
            row = dict(sample_rows[position])
            row["task_id"] = journey_id(split, copy, row["task_id"])
            served.append(row)
            golds[row["task_id"]] = row["answer"]
        rows[split] = served
        parquets[split] = root / split_parquet_path(split)
        parquets[split].parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(served), parquets[split])
        for replays, source, name in (
            (gold_program, program, "program"),
            (gold_agentic, agentic, "agentic"),
        ):
            path = root / f"gold_{name}_{split}.jsonl"
            lines = []
            for row in served:
                recorded = source.get(sample_id_of(row["task_id"]))
                if recorded is not None:  # the defective task has no gold reply
                    lines.append(json.dumps({**recorded, "task_id": row["task_id"]}))
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            replays[split] = path
    return StandInData(root, rows, parquets, gold_program, gold_agentic, golds)


def fenced_program(code: str) -> str:
    return f"```python\n{code}\n```\n"


def answering_replay(
    data: StandInData, split: str, path: Path, *, wrong: Collection[str] = ()
) -> Path:
    """A replay for the whole split that is cheap to run: the first copy of the sample gets the
    bundled gold programs (they read every table format), every other task a program printing
    its gold answer, and the tasks in `wrong` one printing a wrong answer. A full split of gold
    programs takes minutes on two busy cores (pandas is imported 130 times); these take seconds,
    and the verdicts they get still come from the grader."""
    gold = {row["task_id"]: row for row in _read_jsonl(data.gold_program[split])}
    lines = []
    for task_id in data.task_ids(split):
        if task_id in data.defective(split):
            continue
        if task_id in wrong:
            reply = fenced_program("print('no idea')")
        elif task_id.startswith(f"{split}/c00/"):
            reply = gold[task_id]["messages"][-1]["content"]
        else:
            reply = fenced_program(f"print({data.golds[task_id]!r})")
        row = {"task_id": task_id, "messages": [{"role": "assistant", "content": reply}]}
        lines.append(json.dumps(row))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def start_standin(data: StandInData) -> FakeHub:
    """A running stand-in serving the splits at the pinned revision and the sample's bucket."""
    hub = FakeHub()
    for split, path in data.parquets.items():
        hub.add_dataset_file(
            DATASET_REPO_ID, split_parquet_path(split), path.read_bytes(), commit=DATASET_REVISION
        )
    hub.add_bucket_dir(SAMPLE_BUCKET, SAMPLE_DIR / "buckets" / SAMPLE_BUCKET)
    hub.start()
    return hub


def served_table_sha256() -> dict[str, str]:
    """Table name -> sha256 of the file a task naming it gets: the shallowest of that name in
    its prefix (the sample's weather prefix also holds a deeper, older copy)."""
    bucket = SAMPLE_DIR / "buckets" / SAMPLE_BUCKET
    out: dict[str, str] = {}
    paths = sorted(bucket.rglob("*"), key=lambda p: (len(p.relative_to(bucket).parts), str(p)))
    for path in paths:
        if path.is_file():
            out.setdefault(path.name, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def shared_sandbox_envs() -> Path:
    """The developer's (or CI's) built bwrap environments: `sandbox-env` of the cache this test
    process sees, never one of the journeys' own caches."""
    return cache_root() / "sandbox-env"


def ensure_shared_sandbox_env() -> None:
    """Build the bwrap environment into the shared cache once, as a user would
    (`smoldataenvs sandbox setup`), where bwrap exists and none is built yet."""
    from smoldataenvs_tasks.sandboxes.envbuild import env_path, is_built

    if is_built(env_path()) or shutil.which("bwrap") is None:
        return
    subprocess.run([str(BIN / "smoldataenvs"), "sandbox", "setup"], check=False, timeout=1800)


# Variables of the developer's shell that would make a journey something other than a fresh
# machine talking to the stand-in.
_FOREIGN_PREFIXES = ("HF_", "HUGGINGFACE_", "SMOLDATAENVS_", "INSPECT_")


@dataclass
class User:
    """One machine: its own HF_HOME (the HF cache below it) and SMOLDATAENVS_CACHE."""

    home: Path
    endpoint: str

    def __post_init__(self) -> None:
        self.hf_home = self.home / "hf-home"
        self.cache = self.home / "smoldataenvs-cache"
        self.cache.mkdir(parents=True, exist_ok=True)
        # The bwrap sandbox's Python environment lives under the cache (900 MB, minutes to build
        # from PyPI): the user's fresh cache borrows the one built on this machine
        # (`shared_sandbox_envs`). Only that directory is shared; tables, listings, manifests
        # and the HF cache start empty.
        shared = shared_sandbox_envs()
        if shared.is_dir():
            (self.cache / "sandbox-env").symlink_to(shared, target_is_directory=True)

    @property
    def hub_cache(self) -> Path:
        # The package keeps its huggingface_hub cache (cache_dir=) inside its own cache.
        return self.cache / "hub"

    def env(self, *, offline: bool = False, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
        env.update(
            HF_HOME=str(self.hf_home),
            HF_ENDPOINT=self.endpoint,
            HF_HUB_DISABLE_TELEMETRY="1",
            SMOLDATAENVS_CACHE=str(self.cache),
        )
        if offline:
            env["HF_HUB_OFFLINE"] = "1"
        env.update(extra)
        return env

    def run(
        self, *command: str | Path, offline: bool = False, cwd: Path | None = None, **extra: str
    ) -> Result:
        argv = [str(part) for part in command]
        started = time.monotonic()
        with subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(offline=offline, **extra),
            cwd=cwd or self.home,
        ) as process:
            try:
                stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
                stderr += f"\n(killed after {COMMAND_TIMEOUT_S} s)"
        seconds = time.monotonic() - started
        return Result(argv, process.returncode, stdout, stderr, seconds, process.pid)

    def smoldataenvs(self, *args: str | Path, offline: bool = False) -> Result:
        return self.run(BIN / "smoldataenvs", *args, offline=offline)

    def inspect_eval(
        self,
        task: str,
        replay: Path,
        log_dir: Path,
        *options: str,
        label: str = "gold",
        offline: bool = False,
    ) -> Result:
        return self.run(
            BIN / "inspect", "eval", f"smoldataenvs_tasks/{task}",
            *options,
            "--model", f"replay/{label}", "-M", f"path={replay}",
            "--log-dir", log_dir, "--display", "plain",
            offline=offline,
        )  # fmt: skip

    def lm_eval(
        self, task: str, replay: Path, output: Path, *options: str, offline: bool = False
    ) -> Result:
        return self.run(
            BIN / "smoldataenvs-lm-eval", "--tasks", task,
            "--model", "replay", "--model_args", f"path={replay}",
            # no --log_samples: the console script implies it (the samples hold the verdicts)
            "--confirm_run_unsafe_code", "--output_path", output,
            *options,
            offline=offline,
        )  # fmt: skip

    def hub_snapshot_parquet(self, split: str) -> Path:
        """Where huggingface_hub keeps the split's parquet in this user's HF cache."""
        repo = "datasets--" + DATASET_REPO_ID.replace("/", "--")
        return self.hub_cache / repo / "snapshots" / DATASET_REVISION / split_parquet_path(split)


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    pid: int  # the command's process id (the Docker sandbox labels its containers with it)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def describe(self) -> str:
        """For assertion messages: the command, its status and its output's tail."""
        tail = self.output[-6000:]
        return f"$ {' '.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f} s\n{tail}"


def task_ids_option(ids: list[str]) -> str:
    return "task_ids=" + ",".join(ids)


def one_log(log_dir: Path) -> Path:
    logs = sorted(log_dir.glob("*.eval"))
    assert len(logs) == 1, f"expected one log in {log_dir}, found {logs}"
    return logs[0]


@dataclass(frozen=True)
class Outcome:
    value: float | None  # None: the sample has no score value (NaN: ungraded, left out of pass@1)
    category: str | None
    detail: str | None = None


def gold_outcomes(data: StandInData, split: str, ids: list[str]) -> dict[str, Outcome]:
    """What gold replies must get: 1.0 `correct`, and the defective tasks ungraded (no value)."""
    defective = set(data.defective(split))
    return {
        task_id: Outcome(None, "ungraded", "table_unavailable")
        if task_id in defective
        else Outcome(1.0, "correct")
        for task_id in ids
    }


def read_log(log_path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(log_path))
    assert log.status == "success", log.error
    assert log.samples is not None
    return log


def sample_outcomes(log: Any, scorer: str) -> dict[str, Outcome]:
    """task id -> Outcome of every sample of an Inspect log (one epoch)."""
    out = {}
    for sample in log.samples:
        score = sample.scores[scorer]
        value = None if math.isnan(score.value) else float(score.value)
        meta = score.metadata or {}
        out[str(sample.id)] = Outcome(value, meta.get("category"), meta.get("detail"))
    return out


def staged_tables(log: Any, scorer: str) -> dict[str, dict[str, str]]:
    """task id -> the sha256 of each table its sample was given (graded samples only)."""
    return {
        str(sample.id): sample.scores[scorer].metadata["table_sha256"]
        for sample in log.samples
        if sample.scores[scorer].metadata.get("table_sha256")
    }
