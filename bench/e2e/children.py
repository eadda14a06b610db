"""Each measured run in a fresh interpreter, so peak RSS and CPU time are that run's alone.

Parent side: `run_child` writes the run's spec, re-invokes bench/bench_e2e.py with `--child SPEC`
inside a fresh CPU-accounting group and reads back its JSON result. Child side: `child_main` hands
the spec to `child_bare`, `child_inspect` (Inspect's `eval()` with the replay model) or
`child_lmeval` (lm-eval's `simple_evaluate` with the replay LM), each of which returns its wall
time, CPU time and how many samples were graded correct.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import REPO, SPLIT
from .bare import child_bare
from .meter import (
    CpuMeter,
    MachineCpu,
    _current_rss_mb,
    _peak_rss_mb,
    new_cpu_group,
    remove_cpu_group,
)

# The `--child` dispatch lives in the entry script, not in this module.
ENTRY = REPO / "bench" / "bench_e2e.py"


def child_inspect(spec: dict[str, Any]) -> dict[str, Any]:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program

    rss_before = _current_rss_mb()
    meter = CpuMeter.own(spec.get("cpu_group"))
    machine = MachineCpu()
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
    # Docker's containers and engine are charged to no cgroup of this run: the whole machine's.
    cpu = machine.seconds() if spec["sandbox"].startswith("docker") else meter.seconds()
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
    machine = MachineCpu()
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
    cpu = machine.seconds() if spec["sandbox"].startswith("docker") else meter.seconds()
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
    spec_path.write_text(json.dumps({**spec, "out": str(out_path)}), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("INSPECT_EVAL_MAX_SAMPLES", None)
    env.pop("SMOLDATAENVS_MAX_PROGRAMS", None)
    env.update(spec.get("env") or {})
    group = new_cpu_group(f"bench-e2e-{os.getpid()}-{spec_path.stem}")
    if group is not None:
        spec_path.write_text(
            json.dumps({**spec, "out": str(out_path), "cpu_group": str(group)}), encoding="utf-8"
        )

    def join_group() -> None:  # in the child before exec: every descendant is charged there
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()), encoding="utf-8")

    try:
        done = subprocess.run(
            [sys.executable, str(ENTRY), "--child", str(spec_path)],
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
    return json.loads(out_path.read_text(encoding="utf-8"))


def child_main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    runners = {"bare": child_bare, "lmeval": child_lmeval, "inspect": child_inspect}
    result = runners[spec["harness"]](spec)
    Path(spec["out"]).write_text(json.dumps(result), encoding="utf-8")
