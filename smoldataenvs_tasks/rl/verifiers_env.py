"""`load_environment`: a verifiers environment on the program reward.

    import verifiers as vf
    env = vf.load_environment("smoldataenvs_tasks", split="train")   # or "smoldataenvs-tasks"
    # vf.SingleTurnEnv(dataset, rubric=ProgramRubric(...)); also smoldataenvs_tasks.rl.load_environment
    vf-eval smoldataenvs-tasks -a '{"split": "sample"}' -b http://localhost:8000/v1 -m MODEL

The rows are `rl_dataset`'s (the program task's messages, no gold); each row's `info` holds its
task id, split, mirror and revision, which the rubric's one function hands to the same
`ProgramReward` TRL uses. verifiers has no "no reward": a task whose data cannot be graded gets
0.0 on every rollout, so its group's advantages are all 0 and it teaches nothing, as TRL's None
does.

An infrastructure failure (a sandbox that failed twice, the grader failing) raises
`RewardInfrastructureError` out of scoring, as TRL's reward does. verifiers' `Rubric` turns any
exception of a reward function into a logged 0.0, which would train on a failure of the run's as
if it were the model's; so the function marks the rollout, and `ProgramRubric`'s scoring raises
once verifiers' own has run.

verifiers 0.4 dropped `SingleTurnEnv`, `Rubric` and the `vf-eval` this module serves; its v1
`Taskset` API is served by `verifiers_v1` (`vf-eval smoldataenvs-tasks --env.taskset.split ...`),
in a venv of its own: 0.4 requires openai < 3 and Inspect's OpenAI providers openai >= 3.4
(docs/rl.md). The `rl` extra keeps the 0.3 line.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.rl.dataset import rl_dataset
from smoldataenvs_tasks.rl.reward import (
    SOURCE_COLUMNS,
    ProgramReward,
    RewardInfrastructureError,
    make_program_reward,
    note_ungradable,
    reward_of,
)

# Where the rubric's function leaves an infrastructure failure for ProgramRubric to raise.
_FAILURE_KEY = "smoldataenvs_infrastructure_error"


async def grade_completion(reward: ProgramReward, completion: Any, info: dict[str, Any]) -> float:
    """One completion of `info`'s task (its task id, split, mirror, revision) graded by `reward`'s
    settings on the caller's event loop: 1.0 or 0.0, 0.0 for a task the data cannot grade (noted
    once), `RewardInfrastructureError` for the run's own failure. The 0.3 rubric and the 0.4
    taskset (`verifiers_v1`) both grade through here."""
    task_id = str(info["task_id"])
    reply, source = reward.reply(completion, task_id, info)
    [graded] = await reward.grade_replies_async([reply], source)
    value = reward_of(graded.verdict)
    if value is None:
        note_ungradable(task_id, graded.verdict)
        return 0.0
    return value


def rubric_function(reward: ProgramReward) -> Any:
    """The rubric's reward function: one rollout's completion graded by `reward`'s settings,
    on verifiers' own event loop."""

    async def smoldataenvs_program(
        completion: Any, info: dict[str, Any], state: dict[str, Any] | None = None
    ) -> float:
        try:
            return await grade_completion(reward, completion, info)
        except RewardInfrastructureError as error:
            if state is not None:
                state[_FAILURE_KEY] = str(error)
            raise

    return smoldataenvs_program


class VerifiersVersionError(SmolDataEnvsError, ImportError):
    """The installed verifiers has no SingleTurnEnv/Rubric (0.4 and later: `verifiers_v1`)."""


def _verifiers() -> Any:
    """verifiers, when it still has the API this environment is built on (the 0.3 line)."""
    import verifiers as vf

    if not all(hasattr(vf, name) for name in ("SingleTurnEnv", "Rubric")):
        raise VerifiersVersionError(
            f"verifiers {getattr(vf, '__version__', '?')} has no SingleTurnEnv/Rubric (0.4 kept "
            "only its v1 Taskset API): with 0.4 run `vf-eval smoldataenvs-tasks "
            "--env.taskset.split SPLIT --env.agent.harness.id null` in a venv of its own (0.4 "
            "needs openai<3, Inspect's OpenAI providers >=3.4; docs/rl.md), or for "
            "load_environment install the rl extra's verifiers, pip install 'verifiers>=0.3.1,<0.4'"
        )
    return vf


def _rubric_class() -> Any:
    rubric: Any = _verifiers().Rubric

    class ProgramRubric(rubric):
        """verifiers' Rubric, except that a rollout its function could not grade for a reason
        of the run's raises `RewardInfrastructureError` instead of scoring 0.0."""

        async def score_rollout(self, state: Any) -> None:
            await super().score_rollout(state)
            _raise_failures([state])

        async def score_group(self, states: list[Any]) -> None:
            await super().score_group(states)
            _raise_failures(states)

    return ProgramRubric


def _raise_failures(states: list[Any]) -> None:
    for state in states:
        failure = state.get(_FAILURE_KEY) if isinstance(state, dict) else None
        if failure:
            raise RewardInfrastructureError(failure)


def load_environment(
    split: str = "train",
    *,
    mirror: str | None = None,
    revision: str | None = None,
    allow_heldout: bool = False,
    profile: str = "default",
    sandbox: str | None = None,
    concurrency: int | None = None,
    **env_options: Any,
) -> Any:
    """A `verifiers.SingleTurnEnv` over `split`'s program task, its rubric our reward;
    `env_options` go to `SingleTurnEnv` (e.g. `eval_dataset`)."""
    dataset = rl_dataset(split, mirror=mirror, revision=revision, allow_heldout=allow_heldout)
    vf = _verifiers()

    dataset = dataset.map(
        lambda row: {"info": {name: row[name] for name in ("task_id", *SOURCE_COLUMNS)}},
    )
    reward = make_program_reward(
        profile, sandbox=sandbox, concurrency=concurrency, mirror=mirror, revision=revision
    )
    rubric = _rubric_class()(funcs=[rubric_function(reward)], weights=[1.0])
    return vf.SingleTurnEnv(dataset=dataset, rubric=rubric, **env_options)
