"""The grader a Harbor task's `tests/test.sh` runs, inside the task's container, after the agent.

    python -I /opt/smoldata-grader/grade.py /tests/task.json /logs/verifier   # what test.sh does

It is the Inspect answer-file scorer's own path, `pipeline.decide_answer_file`: the answer file
read by `sandboxes.answer_file`'s reader as the sandbox user (uid 1000, the agent's user), then
graded by the ladder under the exported profile. Processes the agent left behind are not killed
first (the container's keep-alive process is the agent's user's too, and ending it ends the
container): an open item in docs/harbor.md.

Outputs in `/logs/verifier/` (Harbor returns that directory to the host):

* `reward.json`: `{"reward": 0|1, "graded": 0|1}`. A task the data cannot grade (its tables are
  missing, its row is invalid) gets `{"reward": 0, "graded": 0}`: Harbor has no "ungraded", so
  its mean counts it as 0, but `graded` says it was not graded and the export's `metric.py` and
  `smoldataenvs report` leave it out and count it. Harbor reads `reward.json` before `reward.txt`
  and wants numbers only, so the verdict's words are in
* `verdict.json`: the Verdict (method, category, reason, the answer read), the task id, the
  grader version, the exported table digests: what `smoldataenvs verify --logs` regrades;
* `reward.txt`: the reward alone, for tools that read only that.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import SANDBOX_ENV, ExecResult
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.pipeline import PreparedTables, decide_answer_file
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict

SANDBOX_UID = 1000
VERDICT_FILE = "verdict.json"
REWARD_JSON = "reward.json"
REWARD_TXT = "reward.txt"
TASK_FILE_FORMAT = 1


class SandboxUserHost:
    """This machine as the sandbox user: the `ProgramHost` the answer reader runs on. From root it
    drops to uid/gid 1000 with no groups and no capabilities (`setpriv`), as every command of our
    Docker sandboxes runs; the environment is the contract's alone."""

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if os.geteuid() == 0:
            argv = [
                "setpriv",
                f"--reuid={SANDBOX_UID}",
                f"--regid={SANDBOX_UID}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                *argv,
            ]
        data = input.encode() if isinstance(input, str) else input
        started = time.monotonic()
        try:
            done = await asyncio.to_thread(
                subprocess.run,
                argv,
                input=data,
                cwd=cwd,
                env={**SANDBOX_ENV, **(env or {})},
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return ExecResult(None, "", "", timed_out=True, duration_s=time.monotonic() - started)
        return ExecResult(
            done.returncode,
            done.stdout.decode("utf-8", errors="replace"),
            done.stderr.decode("utf-8", errors="replace"),
            duration_s=time.monotonic() - started,
        )


def task_verdict(task: Mapping[str, Any]) -> Verdict:
    """The verdict of the answer in this container for the exported `task` (tests/task.json)."""
    profile = str(task["grader"])
    ungraded = task.get("ungraded")
    if ungraded:
        prepared = PreparedTables(
            problem=UngradedReason(ungraded["reason"]), reason=str(ungraded["detail"])
        )
        verdict = prepared.verdict(profile)
        assert verdict is not None
        return verdict
    record = TaskRecord.from_doc(task["record"], warn_unknown_mode=False)
    return asyncio.run(decide_answer_file(record, SandboxUserHost(), profile=profile))


def _tables(record: Mapping[str, Any]) -> str | None:
    """Where the task's tables live, "<hf_bucket>/<bucket_prefix>" (the contamination view)."""
    if record.get("hf_bucket") and record.get("bucket_prefix"):
        return f"{record['hf_bucket']}/{record['bucket_prefix']}"
    return None


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def write_outputs(task: Mapping[str, Any], verdict: Verdict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "format": TASK_FILE_FORMAT,
        "task_id": task["task_id"],
        "table_sha256": task.get("table_sha256") or {},
        "tables": _tables(task.get("record") or {}),
        "provenance": task.get("provenance") or {},
        "verdict": verdict.to_dict(),
    }
    _write(out_dir / VERDICT_FILE, json.dumps(record, indent=2, sort_keys=True) + "\n")
    reward = verdict.reward or 0.0
    _write(out_dir / REWARD_TXT, f"{reward:g}\n")
    rewards = {"reward": reward, "graded": 1 if verdict.graded else 0}
    _write(out_dir / REWARD_JSON, json.dumps(rewards, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    task_path, out_dir = (argv if argv is not None else sys.argv[1:])[:2]
    task = json.loads(Path(task_path).read_text(encoding="utf-8"))
    if task.get("format") != TASK_FILE_FORMAT:
        print(f"smoldataenvs verifier: unknown task file format {task.get('format')!r}")
        return 2
    verdict = task_verdict(task)
    write_outputs(task, verdict, Path(out_dir))
    print(f"{task['task_id']}: {verdict.category.value} ({verdict.method}) {verdict.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
