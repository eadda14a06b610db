"""The floor each harness row is compared with: the same programs, run bare.

`python3 prog.py` with the sandbox env's interpreter (so library import costs match the
sandboxed runs) in a fresh temp dir holding the table, `workers` at a time; for the agentic
variant, the same bash commands with their paths pointed at temp dirs. `child_bare` runs in its
own child process, like every harness run, so its CPU time is metered the same way.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .data import BenchTask, agentic_commands, one_thread
from .meter import CpuMeter


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
        (run_dir / "prog.py").write_text(task.program, encoding="utf-8")
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
        return (workdir / "answer.txt").read_text(encoding="utf-8") == task.answer
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def child_bare(spec: dict[str, Any]) -> dict[str, Any]:
    """The floor: the same programs (or agent commands) run bare, `workers` at a time."""
    tasks = [
        BenchTask(**row) for row in json.loads(Path(spec["tasks_file"]).read_text(encoding="utf-8"))
    ]
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
