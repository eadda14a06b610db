"""`program_reward`: TRL's reward function over the pipeline that grades our evals.

    from trl import GRPOTrainer
    from smoldataenvs_tasks.rl import program_reward, rl_dataset
    GRPOTrainer(model, reward_funcs=[program_reward], train_dataset=rl_dataset("train"), ...)

Each completion's program runs in a fresh sandbox of the configured kind (`sandbox=`, else
$SMOLDATAENVS_SANDBOX, else bwrap) with its task's tables, several at once, through
`pipeline.grade_program_replies_async`: the staging, runner and grader Inspect's and lm-eval's
program tasks use, so a reward of 1.0 here is a pass there. A reply the model could have done
better earns 0.0 (crash, timeout, no program, a shell block...); None (which TRL leaves out of
the group's mean) only for a task whose data cannot be graded (its row invalid, its tables
missing or altered). A sandbox that fails twice is not the model's doing and no reward: it
raises, as any infrastructure failure of a run does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.pipeline import GradedReply, ProgramReply, grade_program_replies_async
from smoldataenvs_tasks.rl.plan import RL, configured_sandbox, plan_split
from smoldataenvs_tasks.scorers.verdict import DATASET_DEFECTS, GRADER_PROFILES, Category, Verdict

# log_metric names: one fraction of the batch per verdict category.
METRIC_PREFIX = "smoldataenvs"


class RewardInfrastructureError(SmolDataEnvsError, RuntimeError):
    """A reply could not be graded for a reason of the run's, not the data's (its sandbox failed
    twice, the grader failed): no reward would be honest, so the step stops."""


class UnknownTaskError(SmolDataEnvsError, LookupError):
    """A row's task_id is not in the split the reward reads."""


def completion_text(completion: Any) -> str:
    """The reply: a standard-format completion's text, or a conversational completion's last
    assistant message (as the replay files are read), its text parts joined."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    for message in reversed(list(completion or [])):
        if message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content") or ""
        if isinstance(content, list):
            return "".join(
                str(part.get("text", "")) for part in content if part.get("type") == "text"
            )
        return str(content)
    return ""


def reward_of(verdict: Verdict) -> float | None:
    """1.0, 0.0, or None for what the data cannot grade; raises for the run's own failures."""
    if verdict.graded:
        return float(verdict.reward or 0.0)
    if verdict.detail in DATASET_DEFECTS:
        return None
    raise RewardInfrastructureError(
        f"a reply could not be graded ({verdict.detail}): {verdict.reason}; "
        "this is the run's failure, not the model's (check the sandbox with `smoldataenvs "
        "validate --split sample`)"
    )


class TaskLookup:
    """Task records by split and task id, read once per split from the source the precedence
    picks (`mirror=`, else $SMOLDATAENVS_MIRROR, else the pinned Hub revision's cache)."""

    def __init__(self, *, mirror: str | None = None, revision: str | None = None) -> None:
        self.mirror = mirror
        self.revision = revision
        self._splits: dict[str, dict[str, TaskRecord]] = {}

    def record(self, task_id: str, split: str) -> TaskRecord:
        if split not in self._splits:
            # The rows do not depend on the sandbox: the cheapest kind to name.
            plan = plan_split(split, sandbox="local", mirror=self.mirror, revision=self.revision)
            self._splits[split] = {r.task_id: r for r in plan.records}
        try:
            return self._splits[split][task_id]
        except KeyError:
            raise UnknownTaskError(
                f"task {task_id!r} is not in split {split!r} of the data this reward reads; "
                "give make_program_reward the mirror/revision the dataset came from"
            ) from None


@dataclass(frozen=True)
class GradedBatch:
    rewards: list[float | None]
    verdicts: list[Verdict]


def run_coroutine(make: Callable[[], Any]) -> Any:
    """Run a coroutine to its end from synchronous code, also when this thread already runs an
    event loop (a notebook): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


class ProgramReward:
    """A TRL reward function (keyword arguments `prompts`, `completions`, `completion_ids`,
    `trainer_state`, the dataset's columns, `log_metric`, `log_extra`) returning one reward per
    completion. Build one with `make_program_reward`."""

    def __init__(
        self,
        *,
        profile: str = "default",
        sandbox: str | None = None,
        concurrency: int | None = None,
        mirror: str | None = None,
        revision: str | None = None,
        split: str = "train",
        limits: SandboxLimits = DEFAULT_LIMITS,
        name: str = "program_reward",
    ) -> None:
        RL.choice("grader", profile, GRADER_PROFILES)
        if concurrency is not None:
            concurrency = RL.whole_number("concurrency", concurrency, "programs at once")
        self.profile = profile
        self._sandbox = sandbox
        self.concurrency = concurrency
        self.split = split
        self.limits = limits
        self.tasks = TaskLookup(mirror=mirror, revision=revision)
        # TRL names a reward function's logged columns after its __name__.
        self.__name__ = name

    @property
    def sandbox(self) -> str:
        """Read when a batch runs, so $SMOLDATAENVS_SANDBOX set after import still counts."""
        return configured_sandbox(self._sandbox)

    def grade(
        self,
        completions: Sequence[Any],
        task_ids: Sequence[str],
        splits: Sequence[str] | None = None,
    ) -> GradedBatch:
        if len(task_ids) != len(completions):
            raise SmolDataEnvsError(
                f"{len(completions)} completions but {len(task_ids)} task ids: the dataset "
                "needs a task_id column (rl_dataset has one)"
            )
        splits = list(splits) if splits is not None else [self.split] * len(task_ids)
        replies = [
            ProgramReply(self.tasks.record(task_id, split), completion_text(completion))
            for completion, task_id, split in zip(completions, task_ids, splits, strict=True)
        ]
        graded = run_coroutine(lambda: self.grade_replies_async(replies))
        verdicts = [g.verdict for g in graded]
        return GradedBatch([reward_of(v) for v in verdicts], verdicts)

    async def grade_replies_async(self, replies: list[ProgramReply]) -> list[GradedReply]:
        """`replies` graded with this reward's sandbox, data source, limits and profile, on the
        caller's event loop (verifiers runs its own)."""
        return await grade_program_replies_async(
            replies,
            sandbox=self.sandbox,
            mirror=self.tasks.mirror,
            revision=self.tasks.revision,
            limits=self.limits,
            concurrency=self.concurrency,
            profile=self.profile,
        )

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        *,
        task_id: Sequence[str] | None = None,
        split: Sequence[str] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        **_columns: Any,
    ) -> list[float | None]:
        completions = list(completions or [])
        if task_id is None:
            raise SmolDataEnvsError(
                "program_reward needs the dataset's task_id column (rl_dataset has one)"
            )
        batch = self.grade(completions, list(task_id), split)
        if log_metric is not None:
            counts = Counter(v.category for v in batch.verdicts)
            for category in Category:
                log_metric(f"{METRIC_PREFIX}/{category.value}", counts[category] / len(completions))
        if log_extra is not None:
            log_extra(f"{METRIC_PREFIX}_category", [v.category.value for v in batch.verdicts])
        return batch.rewards


def make_program_reward(
    profile: str = "default",
    *,
    sandbox: str | None = None,
    concurrency: int | None = None,
    mirror: str | None = None,
    revision: str | None = None,
    split: str = "train",
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> ProgramReward:
    """A program reward with its grader `profile` ("default" or "strict"), sandbox kind,
    programs at once (default: one per usable CPU, or $SMOLDATAENVS_MAX_PROGRAMS), data source,
    and the split rows without a `split` column belong to."""
    return ProgramReward(
        profile=profile,
        sandbox=sandbox,
        concurrency=concurrency,
        mirror=mirror,
        revision=revision,
        split=split,
        limits=limits,
    )


program_reward = make_program_reward()
