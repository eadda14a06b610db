"""verifiers 0.4 (its v1 `Taskset` API): the program task as a taskset, graded by `ProgramReward`.

    vf-eval smoldataenvs-tasks --env.taskset.split sample \\
        --env.agent.harness.id null --env.agent.runtime.type subprocess \\
        -m MODEL --client.base-url http://localhost:8000/v1 --client.api-key-var OPENAI_API_KEY \\
        --no-push

`vf-eval` imports the package named by the id it is given and takes the one `Taskset` subclass
its `__all__` exports: `smoldataenvs_tasks` lists `SmolDataEnvsTaskset` (loaded from here on use).
0.4 needs a venv of its own (openai < 3 against Inspect's >= 3.4; docs/rl.md).

Each task's data names its task id, split, mirror and revision, and its one reward hands the
agent's last reply to the same `ProgramReward` TRL and the 0.3 rubric use (`grade_completion`).
The `null` harness is a plain chat loop with no tools: the model's program runs only in our
sandbox, when graded (verifiers' default `bash` harness would give the model a shell in the
agent's runtime, which `subprocess` puts on the host).

An infrastructure failure raises `RewardInfrastructureError` out of the reward. verifiers 0.4
records an exception of a reward as the rollout's error (`stop_condition` "task_error", the
reward left unscored, never 0.0), so the failure is the run's, not a score of the model's.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, Self

import verifiers.v1 as vf
from pydantic import model_validator

from smoldataenvs_tasks.rl.dataset import check_split, rl_dataset
from smoldataenvs_tasks.rl.reward import ProgramReward, make_program_reward
from smoldataenvs_tasks.rl.verifiers_env import grade_completion

__all__ = ["SmolDataEnvsTaskset"]


class ProgramTaskData(vf.TaskData):
    """A program task's prompt and the data it is graded against (never the gold)."""

    task_id: str
    split: str
    mirror: str | None = None
    revision: str | None = None


@functools.cache
def _reward(profile: str, sandbox: str | None, concurrency: int | None) -> ProgramReward:
    # One reward (its task lookup and provenance) per setting, whatever verifiers copies of a task.
    return make_program_reward(profile, sandbox=sandbox, concurrency=concurrency)


class ProgramTaskConfig(vf.TaskConfig):
    """How replies are graded: `--env.taskset.task.sandbox bwrap` and so on."""

    profile: str = "default"
    sandbox: str | None = None
    concurrency: int | None = None

    @model_validator(mode="after")
    def _settings_are_valid(self) -> Self:
        # A bad setting is one line when vf-eval reads its flags, not an error on every rollout.
        _reward(self.profile, self.sandbox, self.concurrency)
        return self


class SmolDataEnvsTask(vf.Task[ProgramTaskData, vf.State, ProgramTaskConfig]):
    @vf.reward
    async def smoldataenvs_program(self, task: ProgramTaskData, trace: Any) -> float:
        config = self.config
        reward = _reward(config.profile, config.sandbox, config.concurrency)
        info = {
            "task_id": task.task_id,
            "split": task.split,
            "mirror": task.mirror,
            "revision": task.revision,
        }
        return await grade_completion(reward, trace.last_reply, info)


class ProgramTasksetConfig(vf.TasksetConfig):
    """`--env.taskset.split`, `.mirror`, `.revision`, `.allow-heldout` (as `rl_dataset`)."""

    split: str = "train"
    mirror: str | None = None
    revision: str | None = None
    allow_heldout: bool = False
    task: ProgramTaskConfig = ProgramTaskConfig()

    @model_validator(mode="after")
    def _split_is_valid(self) -> Self:
        # vf-eval shows a config error in one line; raised from `load` it is a traceback.
        check_split(self.split, allow_heldout=self.allow_heldout)
        return self


def task_data(row: dict[str, Any]) -> ProgramTaskData:
    """An `rl_dataset` row as task data: its system message as the system prompt, the rest as the
    prompt (one user message as its text, which every harness accepts)."""
    messages = list(row["prompt"])
    system = messages.pop(0)["content"] if messages and messages[0]["role"] == "system" else None
    prompt: Any = messages
    if len(messages) == 1 and messages[0]["role"] == "user":
        prompt = messages[0]["content"]
    return ProgramTaskData(
        id=row["task_id"],
        name=row["task_id"],
        prompt=prompt,
        system_prompt=system,
        task_id=row["task_id"],
        split=row["split"],
        mirror=row["mirror"],
        revision=row["revision"],
    )


class SmolDataEnvsTaskset(vf.Taskset[SmolDataEnvsTask, ProgramTasksetConfig]):
    """`rl_dataset`'s rows of the split the config names, each a `SmolDataEnvsTask`."""

    def load(self) -> Iterator[SmolDataEnvsTask]:
        config = self.config
        rows = rl_dataset(
            config.split,
            mirror=config.mirror,
            revision=config.revision,
            allow_heldout=config.allow_heldout,
        )
        for row in rows:
            yield SmolDataEnvsTask(task_data(row), config.task)
