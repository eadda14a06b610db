"""Rewards per second of `rl.program_reward` on a GRPO-sized batch, next to the same programs bare.

The batch: 64 completions, 8 sample tasks x 8 (a GRPO group of 8 per prompt), each the task's
gold program. The reward runs them as TRL calls it (one call per batch) in bwrap, 2 at a time;
the floor runs the same extracted programs with the sandbox environment's python in a temp dir
holding links to the task's staged tables, 2 at a time, nothing else. Runs alternate (bare,
reward, bare, reward...) after one warm-up of each, so a drifting machine hits both; medians are
printed with the ratio (target: reward >= 0.8x bare) and the latency the reward adds per batch.

    python bench/bench_rl_reward.py               # 3 rounds
    python bench/bench_rl_reward.py --rounds 5 --workers 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoldataenvs_tasks.contract import SANDBOX_ENV
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.staging import new_stage_dir, remove_stage_dir
from smoldataenvs_tasks.pipeline import prepare_tables
from smoldataenvs_tasks.replay import ReplayBook
from smoldataenvs_tasks.rl import make_program_reward
from smoldataenvs_tasks.sandboxes.envbuild import ensure_env
from smoldataenvs_tasks.scorers.answers import extract_program
from smoldataenvs_tasks.validate import BUNDLED_GOLD

TASKS = 8
GROUP = 8


def batch() -> tuple[list[str], list[str], dict[str, Path]]:
    """Task ids and completions (each task's gold reply, GROUP times), and each task's staged
    tables."""
    gold = {
        task_id: rows[0].completion
        for task_id, rows in ReplayBook.load(BUNDLED_GOLD).by_task.items()
    }
    staged: dict[str, Path] = {}
    for record in load_tasks("sample"):
        if len(staged) == TASKS or record.task_id not in gold:
            continue
        stage_dir = new_stage_dir()
        if prepare_tables(record, stage_dir, mirror=None, revision=None).problem is None:
            staged[record.task_id] = stage_dir
        else:
            remove_stage_dir(stage_dir)
    task_ids = [task_id for task_id in staged for _ in range(GROUP)]
    return task_ids, [gold[task_id] for task_id in task_ids], staged


def bare_environment(python: Path, run_dir: Path) -> dict[str, str]:
    """The sandbox's environment (thread pools, locale, unbuffered output) with host paths, and
    matplotlib's font list built with the environment, which the sandbox also gets: without it
    each program importing matplotlib would rebuild it and the floor would not be a floor."""
    return {
        **SANDBOX_ENV,
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(run_dir),
        "TMPDIR": str(run_dir),
        "MPLCONFIGDIR": str(run_dir / ".mplconfig"),
    }


def bare_batch(
    python: Path, task_ids: list[str], completions: list[str], staged: dict[str, Path], workers: int
) -> float:
    def one(task_id: str, completion: str) -> None:
        run_dir = Path(tempfile.mkdtemp(prefix="bench-rl-bare-"))
        try:
            shutil.copytree(python.parents[1] / "mplconfig", run_dir / ".mplconfig")
            for table in staged[task_id].iterdir():
                (run_dir / table.name).symlink_to(table.resolve())
            (run_dir / "prog.py").write_text(
                extract_program(completion).code or "", encoding="utf-8"
            )
            subprocess.run(
                [str(python), "prog.py"],
                cwd=run_dir,
                env=bare_environment(python, run_dir),
                capture_output=True,
                timeout=120,
            )
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, task_ids, completions))
    return time.perf_counter() - started


def reward_batch(
    reward, task_ids: list[str], completions: list[str]
) -> tuple[float, list[float | None]]:
    started = time.perf_counter()
    rewards = reward(
        prompts=[[]] * len(task_ids),
        completions=[[{"role": "assistant", "content": c}] for c in completions],
        task_id=task_ids,
        split=["sample"] * len(task_ids),
    )
    return time.perf_counter() - started, rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sandbox", default="bwrap")
    options = parser.parse_args()
    python = ensure_env() / "bin" / "python3"
    task_ids, completions, staged = batch()
    reward = make_program_reward(sandbox=options.sandbox, concurrency=options.workers)
    try:
        bare_batch(python, task_ids, completions, staged, options.workers)  # warm-ups
        _, rewards = reward_batch(reward, task_ids, completions)
        if rewards != [1.0] * len(task_ids):
            raise SystemExit(f"the gold programs did not all earn 1: {rewards}")
        bare, harness = [], []
        for _ in range(options.rounds):
            bare.append(bare_batch(python, task_ids, completions, staged, options.workers))
            harness.append(reward_batch(reward, task_ids, completions)[0])
    finally:
        for stage_dir in staged.values():
            remove_stage_dir(stage_dir)
    n = len(task_ids)
    bare_s, harness_s = statistics.median(bare), statistics.median(harness)
    print(
        f"batch: {n} completions ({len(staged)} tasks x {GROUP}), {options.workers} workers, "
        f"{options.rounds} rounds, {os.cpu_count()} CPUs"
    )
    print(
        f"bare:            {bare_s:6.2f} s/batch  {n / bare_s:6.1f} programs/s  (rounds: "
        + ", ".join(f"{s:.2f}" for s in bare)
        + ")"
    )
    print(
        f"program_reward:  {harness_s:6.2f} s/batch  {n / harness_s:6.1f} rewards/s   (rounds: "
        + ", ".join(f"{s:.2f}" for s in harness)
        + f", {options.sandbox})"
    )
    print(f"ratio reward/bare throughput: {bare_s / harness_s:.2f}x (target >= 0.8x)")
    print(
        f"added latency per batch: {harness_s - bare_s:+.2f} s ({(harness_s - bare_s) / n * 1000:+.0f} ms per completion)"
    )


if __name__ == "__main__":
    main()
