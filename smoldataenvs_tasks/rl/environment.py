"""`DataAnalysisEnv`: TRL's `environment_factory` for the agentic variant, on our sandboxes.

    from smoldataenvs_tasks.rl import DataAnalysisEnv, rl_dataset
    GRPOTrainer(model, environment_factory=DataAnalysisEnv,
                train_dataset=rl_dataset("train", variant="agentic"), ...)

TRL makes one instance per rollout and keeps them for later batches: `reset(**row)` ends the
previous episode, stages the row's tables in a fresh sandbox session and returns the task text
(appended to the prompt's empty user turn, giving the messages Inspect's agentic task sends).
`bash(command)` is the agent's one tool (TRL turns every public method into a tool, so nothing
else here is public and callable): a fresh `bash -c` in /workdir, with the sandbox's limits, the
tool-call time limit and the 16 KiB result Inspect's task gives. Its name, parameter, description
and messages are `variants.BASH`, the declaration Inspect's tool is made from. `get_reward()` grades
/workdir/answer.txt with the Inspect scorer's reader (`pipeline.decide_answer_file`). An
instance's session is closed and its stage dir removed when the next episode starts, when the
instance is used as a context manager and left, or when it is garbage-collected
(`weakref.finalize`, which also runs at interpreter exit).

Closing is synchronous (`session.close_sync()`): it needs no event loop and no executor, so it
works at interpreter exit, after `concurrent.futures` has shut its executors down (closing
through the loop thread there raised "cannot schedule new futures after shutdown" and left the
session folder, its cgroups and mounts behind).

Each row is graded against the data it names (`rl_dataset`'s split, mirror and revision
columns); `split=` is only for rows that name none. A row whose declared protocol (its
`task_protocol` column) is the program variant's is refused in one line. `provenance` is the
`RunProvenance` an evaluation of the same data records; `ProvenanceCallback` logs it into TRL's
log history.

Sessions live on one event loop in a thread of this module's (`_LOOP`), whichever thread TRL
calls from: a session's processes and pipes belong to the loop that started them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, WORKDIR, SandboxLimits
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.pipeline import decide_answer_file, prepare_tables, tool_command
from smoldataenvs_tasks.rl.dataset import agent_task_text
from smoldataenvs_tasks.rl.reward import TaskLookup, note_ungradable, reward_of
from smoldataenvs_tasks.run_plan import RunProvenance
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxSession
from smoldataenvs_tasks.sandboxes.tool_output import combined_output, shown_to_model
from smoldataenvs_tasks.scorers.verdict import Verdict
from smoldataenvs_tasks.variants import AGENTIC, BASH, ToolSpec

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _declared_by(spec: ToolSpec) -> Callable[[F], F]:
    """Give a tool method the docstring of its declaration: TRL builds the tool schema a model
    sees from it (transformers' `get_json_schema`), so it reads as Inspect's tool does."""

    def document(method: F) -> F:
        method.__doc__ = spec.docstring()
        return method

    return document


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
                # Synchronous: also at interpreter exit, when no executor is left to run on.
                session.close_sync()
        finally:
            if stage_dir is not None:
                remove_stage_dir(stage_dir)


class _ToolUse:
    """Episodes graded and bash calls made in this process: a model that never calls its tool
    in many episodes is most often one whose chat template TRL parses no tool call from (TRL
    then runs no tool and says nothing)."""

    EPISODES_BEFORE_WARNING = 64

    def __init__(self) -> None:
        self.episodes = 0
        self.calls = 0
        self.warned = False
        self._lock = threading.Lock()

    def called(self) -> None:
        with self._lock:
            self.calls += 1

    def episode_ended(self) -> None:
        with self._lock:
            self.episodes += 1
            if self.warned or self.calls or self.episodes < self.EPISODES_BEFORE_WARNING:
                return
            self.warned = True
        logging.getLogger("smoldataenvs_tasks.rl").warning(
            "%d DataAnalysisEnv episodes and not one bash call: TRL parses no tool call from a "
            "reply whose chat template it has no tool-call parser for, and runs none; check the "
            "model's template with smoldataenvs_tasks.rl.check_tool_calling(tokenizer)",
            self.episodes,
        )


_TOOL_USE = _ToolUse()


class DataAnalysisEnv:
    """One agentic rollout's sandbox: `reset(**row)`, the `bash` tool, `get_reward()`."""

    def __init__(
        self,
        *,
        sandbox: str | None = None,
        profile: str = "default",
        mirror: str | None = None,
        revision: str | None = None,
        split: str | None = None,
        tool_timeout: float = DEFAULT_LIMITS.tool_timeout_s,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> None:
        self._tool_timeout = tool_timeout
        self._limits = limits
        self._tasks = TaskLookup(
            owner="DataAnalysisEnv",
            variant=AGENTIC,
            mirror=mirror,
            revision=revision,
            split=split,
            profile=profile,
            sandbox=sandbox,
        )
        self._episode = _Episode()
        # Holds the episode, not this object: the episode ends when this object is collected,
        # and at interpreter exit (finalize's own atexit hook; the close is synchronous).
        weakref.finalize(self, self._episode.end)

    @property
    def provenance(self) -> RunProvenance | None:
        """The `RunProvenance` an evaluation of the data of the last episode records (None
        before the first `reset`)."""
        return self._tasks.provenance

    def reset(self, **row: Any) -> str:
        """Start the episode of `row` (a dataset row: its task_id, the split, mirror and
        revision it names, and its declared protocol, which must be the agentic variant's) and
        return the task text."""
        self._episode.end()
        task_id = row.get("task_id")
        if not task_id:
            raise SmolDataEnvsError("DataAnalysisEnv.reset needs the row's task_id column")
        kind = self._tasks.sandbox
        source = self._tasks.source(str(task_id), row)
        record = self._tasks.record(str(task_id), source, kind)
        episode = self._episode
        episode.record = record
        episode.stage_dir = _new_stage_dir()
        prepared = prepare_tables(
            record, episode.stage_dir, mirror=source.mirror, revision=source.revision
        )
        episode.early = prepared.verdict(self._tasks.profile)
        if episode.early is None:
            from smoldataenvs_tasks.sandboxes.opening import open_session

            episode.session = _LOOP.run(open_session(kind, episode.stage_dir, limits=self._limits))
        return agent_task_text(record)

    @_declared_by(BASH)
    def bash(self, command: str) -> str:
        _TOOL_USE.called()
        session = self._episode.session
        if session is None:
            return "Error: this task's data could not be staged; there is nothing to run."
        # The one way a tool call reaches a sandbox (pipeline.tool_command): a lone surrogate
        # reads as U+FFFD and a NUL refuses the call with a message, as in Inspect (issue 44).
        call = tool_command(BASH.name, command)
        try:
            result = call.refused or _LOOP.run(
                session.exec(call.argv, input=call.input, cwd=WORKDIR, timeout=self._tool_timeout)
            )
        except SandboxFailure as error:
            return f"Error: the sandbox failed: {error}"
        output = combined_output(result.stdout, result.stderr)
        if result.timed_out:
            note = BASH.timeout_message()
            output = f"{output}\n{note}" if output else note
        elif result.limit == "output":
            output = f"{output}\n{BASH.output_cap_message(self._limits.max_output_bytes)}"
        return shown_to_model(BASH.name, output)

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
                decide_answer_file(episode.record, episode.session, profile=self._tasks.profile)
            )
        episode.verdicts.append(verdict)
        _TOOL_USE.episode_ended()
        reward = reward_of(verdict)
        if reward is None:
            note_ungradable(episode.record.task_id, verdict)
        return reward

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
