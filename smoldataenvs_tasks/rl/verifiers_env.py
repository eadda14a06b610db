"""`load_environment`: a verifiers environment on the program reward.

    import smoldataenvs_tasks.rl as rl
    env = rl.load_environment("train")        # vf.SingleTurnEnv(dataset, rubric=vf.Rubric(...))

The rows are `rl_dataset`'s (the program task's messages, no gold); each row's `info` holds its
task id and split, which the rubric's one function hands to the same `ProgramReward` TRL uses.
verifiers has no "no reward": a task whose data cannot be graded gets 0.0 on every rollout, so
its group's advantages are all 0 and it teaches nothing, as TRL's None does.

verifiers 0.4 replaced `SingleTurnEnv`/`Rubric` with its v1 Taskset/Harness API; the `rl` extra
pins the 0.3 line, whose top level still answers with them.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.pipeline import ProgramReply
from smoldataenvs_tasks.rl.dataset import rl_dataset
from smoldataenvs_tasks.rl.reward import ProgramReward, completion_text, make_program_reward


def rubric_function(reward: ProgramReward) -> Any:
    """The rubric's reward function: one rollout's completion graded by `reward`'s settings,
    on verifiers' own event loop."""

    async def smoldataenvs_program(completion: Any, info: dict[str, Any]) -> float:
        record = reward.tasks.record(str(info["task_id"]), str(info.get("split") or reward.split))
        [graded] = await reward.grade_replies_async(
            [ProgramReply(record, completion_text(completion))]
        )
        return float(graded.verdict.reward or 0.0)

    return smoldataenvs_program


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
    import verifiers as vf

    dataset = dataset.map(
        lambda row: {"info": {"task_id": row["task_id"], "split": row["split"]}},
    )
    reward = make_program_reward(
        profile, sandbox=sandbox, concurrency=concurrency, mirror=mirror, revision=revision
    )
    rubric = vf.Rubric(funcs=[rubric_function(reward)], weights=[1.0])
    return vf.SingleTurnEnv(dataset=dataset, rubric=rubric, **env_options)
