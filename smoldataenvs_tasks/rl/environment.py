"""`DataAnalysisEnv`: TRL's `environment_factory` for the agentic variant, on our sandboxes.

    from smoldataenvs_tasks.rl import DataAnalysisEnv, rl_dataset
    GRPOTrainer(model, environment_factory=DataAnalysisEnv,
                train_dataset=rl_dataset("train", variant="agentic"), ...)

TRL makes one instance per rollout and keeps them for later batches: `reset(**row)` ends the
previous episode, stages the row's tables in a fresh sandbox session and returns the task text
(appended to the prompt's empty user turn, giving the messages Inspect's agentic task sends).
`bash(command)` is the agent's one tool (TRL turns every public method into a tool, so nothing
else here is public and callable): a fresh `bash -c` in /workdir, with the sandbox's limits, the
tool-call time limit and the 16 KiB result Inspect's task gives. `get_reward()` grades
/workdir/answer.txt with the Inspect scorer's reader (`pipeline.decide_answer_file`). An
instance's session is closed and its stage dir removed when the next episode starts, when the
instance is used as a context manager and left, or when it is garbage-collected
(`weakref.finalize`, which also runs at interpreter exit).

Sessions live on one event loop in a thread of this module's (`_LOOP`), whichever thread TRL
calls from: a session's processes and pipes belong to the loop that started them.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, WORKDIR, SandboxLimits
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.pipeline import decide_answer_file, prepare_tables
from smoldataenvs_tasks.rl.dataset import agent_task_text
from smoldataenvs_tasks.rl.plan import configured_sandbox
from smoldataenvs_tasks.rl.reward import TaskLookup, reward_of
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxSession
from smoldataenvs_tasks.sandboxes.tool_output import (
    TIMEOUT_MESSAGE,
    combined_output,
    shown_to_model,
)
from smoldataenvs_tasks.scorers.verdict import Verdict

T = TypeVar("T")


class _LoopThread:
    """One event loop in a daemon thread, started on first use, for every environment's
    sessions in this process."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                threading.Thread(
                    target=self._loop.run_forever, name="smoldataenvs-rl-sessions", daemon=True
                ).start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


_LOOP = _LoopThread()


@dataclass
class _Episode:
    """What one reset made; kept apart from the environment so its finalizer holds no
    reference to the environment itself."""

    record: TaskRecord | None = None
    stage_dir: Path | None = None
    session: SandboxSession | None = None
    # The verdict of a task no answer can change (its data cannot be graded).
    early: Verdict | None = None
    verdicts: list[Verdict] = field(default_factory=list)

    def end(self) -> None:
        from smoldataenvs_tasks.data.staging import remove_stage_dir

        session, stage_dir = self.session, self.stage_dir
        self.session = self.stage_dir = None
        self.record = self.early = None
        try:
            if session is not None:
                _LOOP.run(session.close())
        finally:
            if stage_dir is not None:
                remove_stage_dir(stage_dir)


class DataAnalysisEnv:
    """One agentic rollout's sandbox: `reset(**row)`, the `bash` tool, `get_reward()`."""

    def __init__(
        self,
        *,
        sandbox: str | None = None,
        profile: str = "default",
        mirror: str | None = None,
        revision: str | None = None,
        split: str = "train",
        tool_timeout: float = DEFAULT_LIMITS.tool_timeout_s,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> None:
        self._sandbox = sandbox
        self._profile = profile
        self._split = split
        self._tool_timeout = tool_timeout
        self._limits = limits
        self._tasks = TaskLookup(mirror=mirror, revision=revision)
        self._episode = _Episode()
        # Holds the episode, not this object: the episode ends when this object is collected.
        weakref.finalize(self, self._episode.end)

    def reset(self, **row: Any) -> str:
        """Start the episode of `row` (a dataset row: its task_id, and split when it has one)
        and return the task text."""
        self._episode.end()
        task_id = row.get("task_id")
        if not task_id:
            raise SmolDataEnvsError("DataAnalysisEnv.reset needs the row's task_id column")
        record = self._tasks.record(str(task_id), str(row.get("split") or self._split))
        episode = self._episode
        episode.record = record
        episode.stage_dir = _new_stage_dir()
        prepared = prepare_tables(
            record, episode.stage_dir, mirror=self._tasks.mirror, revision=self._tasks.revision
        )
        episode.early = prepared.verdict(self._profile)
        if episode.early is None:
            from smoldataenvs_tasks.sandboxes.opening import open_session

            kind = configured_sandbox(self._sandbox)
            episode.session = _LOOP.run(open_session(kind, episode.stage_dir, limits=self._limits))
        return agent_task_text(record)

    def bash(self, command: str) -> str:
        """Run a shell command in the sandbox and return its combined stdout and stderr.

        The shell is not stateful between calls (each call is a fresh `bash -c` in /workdir), so
        use absolute paths or `cd` first. The data is in /home/user/input. Write the final answer
        with `echo -n "<value>" > /workdir/answer.txt`.

        Args:
            command: The shell command to run.

        Returns:
            The command's combined stdout and stderr.
        """
        session = self._episode.session
        if session is None:
            return "Error: this task's data could not be staged; there is nothing to run."
        try:
            result = _LOOP.run(
                session.exec(["bash", "-c", command], cwd=WORKDIR, timeout=self._tool_timeout)
            )
        except SandboxFailure as error:
            return f"Error: the sandbox failed: {error}"
        output = combined_output(result.stdout, result.stderr)
        if result.timed_out:
            output = (
                f"{output}\nError: {TIMEOUT_MESSAGE}" if output else f"Error: {TIMEOUT_MESSAGE}"
            )
        elif result.limit == "output":
            output = (
                f"{output}\nError: The tool exceeded its output limit of "
                f"{self._limits.max_output_bytes} bytes."
            )
        return shown_to_model("bash", output)

    def get_reward(self) -> float | None:
        """1.0 when /workdir/answer.txt holds the gold answer, 0.0 otherwise, None when the
        task's data cannot be graded (the same verdict Inspect's answer_file_scorer gives)."""
        episode = self._episode
        if episode.record is None:
            raise SmolDataEnvsError("DataAnalysisEnv.get_reward before reset")
        verdict = episode.early
        if verdict is None:
            assert episode.session is not None
            verdict = _LOOP.run(
                decide_answer_file(episode.record, episode.session, profile=self._profile)
            )
        episode.verdicts.append(verdict)
        return reward_of(verdict)

    @property
    def last_verdict(self) -> Verdict | None:
        """The verdict behind the last `get_reward` (its category, detail, reason)."""
        return self._episode.verdicts[-1] if self._episode.verdicts else None

    def __enter__(self) -> DataAnalysisEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self._episode.end()


def _new_stage_dir() -> Path:
    from smoldataenvs_tasks.data.staging import new_stage_dir

    return new_stage_dir()
