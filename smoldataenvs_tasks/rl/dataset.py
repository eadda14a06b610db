"""The training rows: each task's prompt as Inspect and lm-eval send it, never its gold answer.

    from smoldataenvs_tasks.rl import rl_dataset
    train = rl_dataset("train")            # 5,000 rows: prompt, task_id, split, tier, mode
    rl_dataset("test")                     # HeldOutSplitError: the held-out splits stay unseen

The reward looks the gold answer up by `task_id` in the data the row names (its `split`, and the
`mirror` directory or dataset `revision` it was read from, None for the defaults), so a trainer's
logs and a model's context never hold it, and a row is graded against the data it came from.

Each row also carries the task protocol its plan declares (`variants.TaskProtocol`, JSON text
under `variants.PROTOCOL_KEY`, as lm-eval's docs keep it: Arrow needs one schema for every row):
TRL hands it to the reward and to `DataAnalysisEnv.reset` with the other columns, so a trainer's
log says what the model was asked and allowed, and a reward or environment refuses a row of the
other variant in one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from smoldataenvs_tasks._pins import ALL_SPLITS, reward_mode_label
from smoldataenvs_tasks.data.prompts import (
    PROGRAM_SYSTEM_PROMPT,
    agent_system_prompt,
    agent_user_prompt,
    program_prompt,
)
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.rl.plan import RL, plan_split
from smoldataenvs_tasks.variants import PROGRAM, PROTOCOL_KEY

# The splits whose numbers are reported: a model trained on them has seen the exam.
HELD_OUT_SPLITS = ("test", "eval")


class HeldOutSplitError(SmolDataEnvsError, ValueError):
    """Training rows asked of a held-out split without `allow_heldout=True`."""


def check_split(split: str, *, allow_heldout: bool) -> None:
    RL.choice("split", split, ALL_SPLITS)
    if split in HELD_OUT_SPLITS and not allow_heldout:
        raise HeldOutSplitError(
            f"split {split!r} is held out for evaluation: training on it voids its pass@1. "
            "Train on 'train' (or 'sample'); pass allow_heldout=True only to study the held-out "
            "rows, never for a model you will report on them"
        )


def program_messages(record: TaskRecord) -> list[dict[str, str]]:
    """The program task's two messages, the ones Inspect's `smoldataenvs_program` and lm-eval's
    `smoldataenvs_program_*` (with a chat template) send."""
    return [
        {"role": "system", "content": PROGRAM_SYSTEM_PROMPT},
        {"role": "user", "content": program_prompt(record.question, record.files)},
    ]


def agent_task_text(record: TaskRecord) -> str:
    """The agentic task's user turn (answer-file protocol), from the builder Inspect's
    `smoldataenvs` task and the Harbor export use."""
    return agent_user_prompt(record.instruction, record.question, record.files)


def agent_messages() -> list[dict[str, str]]:
    """The agentic prompt before `DataAnalysisEnv.reset` appends the task text to its empty user
    turn (TRL's environment_factory contract), giving the two messages Inspect sends."""
    return [
        {"role": "system", "content": agent_system_prompt()},
        {"role": "user", "content": ""},
    ]


def rl_dataset(
    split: str = "train",
    *,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    allow_heldout: bool = False,
    variant: str = PROGRAM.name,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
) -> Any:
    """A `datasets.Dataset` of the split's tasks (`plan_run`'s, with the filters Inspect and
    lm-eval take): `prompt` (conversational), `task_id`, `split`, `mirror` (the mirror directory
    the rows were read from, given or $SMOLDATAENVS_MIRROR; None for the Hub cache and the
    sample), `revision` (the one given, else None), `difficulty_tier`, `reward_mode`, and the
    declared protocol under PROTOCOL_KEY (JSON text). `variant` is a name in `variants.VARIANTS`:
    "agentic" gives the prompt `DataAnalysisEnv` completes. No column holds the gold answer."""
    check_split(split, allow_heldout=allow_heldout)
    plan = plan_split(
        split,
        variant=variant,
        mirror=mirror,
        revision=revision,
        tiers=tiers,
        reward_modes=reward_modes,
        task_ids=task_ids,
    )
    from datasets import Dataset

    agentic = plan.options.variant.agentic
    protocol = json.dumps(plan.protocol, ensure_ascii=False)
    # Where the rows came from, so the reward grades against the same data whatever it was
    # made with (a mirror named by the environment variable is named here too).
    mirror_dir = getattr(plan.source, "root", None) if plan.source.kind == "mirror" else None
    source = {
        "split": split,
        "mirror": None if mirror_dir is None else str(mirror_dir),
        "revision": revision,
    }
    return Dataset.from_list(
        [
            {
                "prompt": agent_messages() if agentic else program_messages(r),
                "task_id": r.task_id,
                **source,
                "difficulty_tier": r.difficulty_tier,
                "reward_mode": reward_mode_label(r.reward_mode),
                PROTOCOL_KEY: protocol,
            }
            for r in plan.records
        ]
    )
