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

Each row is graded against the data it names (`rl_dataset`'s `split`, `mirror` and `revision`
columns); a reward made with another mirror or revision than a row names refuses it in one line
saying what to pass, and so does a row whose declared protocol (`task_protocol`) is the agentic
variant's, which `DataAnalysisEnv` grades. The reward's `provenance` is the `RunProvenance` an
evaluation of the same data records (`rl/provenance.py`), logged once into TRL's log history.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import ALL_SPLITS
from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.pipeline import GradedReply, ProgramReply, grade_program_replies_async
from smoldataenvs_tasks.rl import provenance as provenance_log
from smoldataenvs_tasks.rl.plan import RL, configured_sandbox, plan_split, spelled_for_python
from smoldataenvs_tasks.run_plan import RunPlan, RunProvenance
from smoldataenvs_tasks.scorers.verdict import DATASET_DEFECTS, GRADER_PROFILES, Category, Verdict
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM, PROTOCOL_KEY, Variant

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
        f"a reply could not be graded ({verdict.detail}): {spelled_for_python(verdict.reason)}; "
        "this is the run's failure, not the model's (check the sandbox with `smoldataenvs "
        "validate --split sample`)"
    )


@dataclass(frozen=True)
class RowSource:
    """The data a row's task is graded against: its split, and the mirror directory or dataset
    revision its rows were read from (None: the default precedence, $SMOLDATAENVS_MIRROR else
    the pinned Hub revision's cache). `rl_dataset` writes all three into every row."""

    split: str
    mirror: str | None = None
    revision: str | None = None


# Row columns (rl_dataset's) naming a row's data source.
SOURCE_COLUMNS = ("split", "mirror", "revision")


class SourceMismatchError(SmolDataEnvsError, ValueError):
    """A row names another data source than the reward or environment was made with."""


class VariantMismatchError(SourceMismatchError):
    """A row's declared protocol is another variant's (or answer rule's) than the reward or
    environment grades: a program reward given an agentic row, or the reverse."""


# What grades each variant's rows, for the message refusing a row of the other one.
_GRADED_BY: dict[str, str] = {PROGRAM.name: "program_reward", AGENTIC.name: "DataAnalysisEnv"}


class TaskLookup:
    """Task records by data source and task id, each source planned once (`plan_run`, as an
    evaluation plans it), for `owner` (the reward's or environment's name in messages) of
    `variant`, made with `mirror`/`revision` (None: follow the rows), `split` (the split of
    rows naming none), the grader `profile` and the `sandbox` kind (None: read when a batch
    runs). A split, profile or sandbox kind that does not exist is refused here, when the owner
    is made, not at its first batch in the middle of a training run."""

    def __init__(
        self,
        *,
        owner: str,
        variant: Variant,
        mirror: str | os.PathLike[str] | None = None,
        revision: str | None = None,
        split: str | None = None,
        profile: str = "default",
        sandbox: str | None = None,
    ) -> None:
        RL.choice("grader", profile, GRADER_PROFILES)
        if split is not None:
            RL.choice("split", split, ALL_SPLITS)
        if sandbox is not None:
            configured_sandbox(sandbox)
        self.given_sandbox = sandbox
        self.owner = owner
        self.variant = variant
        self.mirror = os.fspath(mirror) if mirror is not None else None
        self.revision = revision
        self.split = split
        self.profile = profile
        self._plans: dict[RowSource, RunPlan] = {}
        self._by_id: dict[RowSource, dict[str, TaskRecord]] = {}
        self._lock = threading.Lock()
        self.last_source: RowSource | None = None

    @property
    def sandbox(self) -> str:
        """Read when a batch runs, so $SMOLDATAENVS_SANDBOX set after import still counts."""
        return configured_sandbox(self.given_sandbox)

    def source(self, task_id: str, row: dict[str, Any]) -> RowSource:
        """The source `row` (a dataset row, or the columns of one) names, checked against what
        this owner was made with, and its declared protocol against this owner's variant; one
        line saying what to pass when they disagree."""
        self.check_protocol(task_id, row.get(PROTOCOL_KEY))
        split = row.get("split") or self.split
        if not split:
            raise SourceMismatchError(
                f"the row of task {task_id!r} names no split: train on rl_dataset's rows (they "
                f"carry split, mirror and revision columns), or pass {self.owner}(split=...)"
            )
        mirror = self._agree(task_id, "mirror", row.get("mirror"), self.mirror, _same_dir)
        revision = self._agree(
            task_id, "revision", row.get("revision"), self.revision, lambda a, b: a == b
        )
        return RowSource(str(split), mirror, revision)

    def check_protocol(self, task_id: str, stored: object) -> None:
        """A row's declared protocol (rl_dataset's JSON text under PROTOCOL_KEY; absent from a
        dataset of the caller's own) names this owner's variant and answer rule."""
        if stored is None or stored == "":
            return
        try:
            declared = json.loads(stored) if isinstance(stored, str) else stored
        except ValueError:
            declared = None
        if not isinstance(declared, dict):
            raise VariantMismatchError(
                f"the row of task {task_id!r} has a {PROTOCOL_KEY} column that is not the JSON "
                f"object rl_dataset writes ({str(stored)[:60]!r})"
            )
        variant, protocol = declared.get("variant"), declared.get("protocol")
        ours = self.variant
        if variant == ours.name and protocol in (None, ours.protocol):
            return
        other = _GRADED_BY.get(str(variant))
        raise VariantMismatchError(
            f"the row of task {task_id!r} poses the {variant} variant (protocol {protocol}), but "
            f"{self.owner} grades the {ours.name} variant (protocol {ours.protocol}): give it "
            f"rl_dataset(..., variant={ours.name!r}) rows"
            + (f", or grade {variant} rows with {other}" if other else "")
        )

    def _agree(
        self,
        task_id: str,
        name: str,
        named: object,
        given: str | None,
        same: Callable[[str, str], bool],
    ) -> str | None:
        if not named:
            return given
        if given and not same(str(named), given):
            raise SourceMismatchError(
                f"the row of task {task_id!r} comes from {name}={str(named)!r}, but this "
                f"{self.owner} was made with {name}={given!r}: pass {name}={str(named)!r}, or "
                f"no {name} (the rows name theirs)"
            )
        return str(named)

    def plan(self, source: RowSource, sandbox: str = "local") -> RunPlan:
        """The source's plan: its rows and the provenance an evaluation of it records (with the
        sandbox kind and grader profile this owner grades with)."""
        with self._lock:
            if source not in self._plans:
                plan = plan_split(
                    source.split,
                    variant=self.variant.name,
                    sandbox=sandbox,
                    mirror=source.mirror,
                    revision=source.revision,
                    grader=self.profile,
                )
                self._plans[source] = plan
                self._by_id[source] = {r.task_id: r for r in plan.records}
                provenance_log.record(plan.provenance)
            self.last_source = source
            return self._plans[source]

    def record(self, task_id: str, source: RowSource, sandbox: str = "local") -> TaskRecord:
        self.plan(source, sandbox)
        try:
            return self._by_id[source][task_id]
        except KeyError:
            raise UnknownTaskError(
                f"task {task_id!r} is not in split {source.split!r} of the data this "
                f"{self.owner} reads; give it the mirror/revision the dataset came from"
            ) from None

    @property
    def provenance(self) -> RunProvenance | None:
        """The RunProvenance of the data last graded against (None before the first row)."""
        source = self.last_source
        return None if source is None else self._plans[source].provenance

    @property
    def provenances(self) -> list[RunProvenance]:
        """The RunProvenance of every source planned, in the order they were first used."""
        with self._lock:
            return [plan.provenance for plan in self._plans.values()]


def _same_dir(a: str, b: str) -> bool:
    return Path(a).expanduser().absolute() == Path(b).expanduser().absolute()


# TRL warns about a row none of whose rewards is a number by printing the whole row (~1,000
# characters, the prompt and completion with it), every time that row is drawn. A task the data
# cannot grade is such a row by design: say so once, in one line, and drop TRL's warning for it.
_TRL_LOGGER = "trl.trainer.grpo_trainer"
_TRL_NONE_WARNING = "All reward functions returned None"
_log = logging.getLogger("smoldataenvs_tasks.rl")
_ungradable: set[str] = set()
_ungradable_lock = threading.Lock()


class _UngradableRowFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(_TRL_NONE_WARNING):
            return True
        with _ungradable_lock:
            return not any(f"'task_id': {task_id!r}" in message for task_id in _ungradable)


_FILTER = _UngradableRowFilter()


def note_ungradable(task_id: str, verdict: Verdict) -> None:
    """One line the first time a task the data cannot grade gets a None reward."""
    with _ungradable_lock:
        if task_id in _ungradable:
            return
        _ungradable.add(task_id)
    logger = logging.getLogger(_TRL_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    _log.warning(
        "task %s cannot be graded by its data (%s): its rewards are None, left out of its "
        "group's statistics",
        task_id,
        verdict.detail,
    )


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
        mirror: str | os.PathLike[str] | None = None,
        revision: str | None = None,
        split: str | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
        name: str = "program_reward",
    ) -> None:
        if concurrency is not None:
            concurrency = RL.whole_number("concurrency", concurrency, "programs at once")
        self.profile = profile
        self.concurrency = concurrency
        self.limits = limits
        self.tasks = TaskLookup(
            owner="make_program_reward", variant=PROGRAM, mirror=mirror, revision=revision,
            split=split, profile=profile, sandbox=sandbox,
        )  # fmt: skip
        # TRL names a reward function's logged columns after its __name__.
        self.__name__ = name

    @property
    def split(self) -> str | None:
        """The split of rows that name none (None: such a row is refused)."""
        return self.tasks.split

    @property
    def sandbox(self) -> str:
        """Read when a batch runs, so $SMOLDATAENVS_SANDBOX set after import still counts."""
        return self.tasks.sandbox

    @property
    def provenance(self) -> RunProvenance | None:
        """The `RunProvenance` an evaluation of the data last graded against records (dataset
        and revision, data source, split and its sha256, tables digest, grader version, sandbox);
        None before the first batch."""
        return self.tasks.provenance

    def reply(
        self, completion: Any, task_id: str, row: dict[str, Any]
    ) -> tuple[ProgramReply, RowSource]:
        """A completion of `row`'s task, with the data source the row names."""
        source = self.tasks.source(task_id, row)
        record = self.tasks.record(task_id, source, self.sandbox)
        return ProgramReply(record, completion_text(completion)), source

    def grade(
        self,
        completions: Sequence[Any],
        task_ids: Sequence[str],
        columns: dict[str, Sequence[Any] | None] | None = None,
    ) -> GradedBatch:
        """Each completion graded against the data its row names (`columns`: the rows' split,
        mirror and revision columns and their declared protocol, any of them absent)."""
        if len(task_ids) != len(completions):
            raise SmolDataEnvsError(
                f"{len(completions)} completions but {len(task_ids)} task ids: the dataset "
                "needs a task_id column (rl_dataset has one)"
            )
        columns = columns or {}
        rows = [
            {name: values[i] for name, values in columns.items() if values is not None}
            for i in range(len(task_ids))
        ]
        made = [
            self.reply(completion, task_id, row)
            for completion, task_id, row in zip(completions, task_ids, rows, strict=True)
        ]
        by_source: dict[RowSource, list[int]] = {}
        for index, (_, source) in enumerate(made):
            by_source.setdefault(source, []).append(index)
        verdicts: list[Verdict | None] = [None] * len(made)
        for source, indexes in by_source.items():
            batch = [made[n][0] for n in indexes]
            graded = run_coroutine(partial(self.grade_replies_async, batch, source))
            for index, one in zip(indexes, graded, strict=True):
                verdicts[index] = one.verdict
        done = [v for v in verdicts if v is not None]
        rewards = [reward_of(v) for v in done]
        for task_id, verdict, reward in zip(task_ids, done, rewards, strict=True):
            if reward is None:
                note_ungradable(task_id, verdict)
        return GradedBatch(rewards, done)

    async def grade_replies_async(
        self, replies: list[ProgramReply], source: RowSource
    ) -> list[GradedReply]:
        """`replies` (all of `source`'s tasks) graded with this reward's sandbox, limits and
        profile, on the caller's event loop (verifiers runs its own)."""
        return await grade_program_replies_async(
            replies,
            sandbox=self.sandbox,
            mirror=source.mirror,
            revision=source.revision,
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
        mirror: Sequence[str | None] | None = None,
        revision: Sequence[str | None] | None = None,
        trainer_state: Any = None,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list[Any]], None] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        completions = list(completions or [])
        if task_id is None:
            raise SmolDataEnvsError(
                "program_reward needs the dataset's task_id column (rl_dataset has one)"
            )
        batch = self.grade(
            completions,
            list(task_id),
            {
                "split": split,
                "mirror": mirror,
                "revision": revision,
                # TRL hands every other column too; the declared protocol is checked.
                PROTOCOL_KEY: columns.get(PROTOCOL_KEY),
            },
        )
        if trainer_state is not None:
            provenance_log.log_to(trainer_state, self.tasks.provenances)
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
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    split: str | None = None,
    limits: SandboxLimits = DEFAULT_LIMITS,
) -> ProgramReward:
    """A program reward with its grader `profile` ("default" or "strict"), sandbox kind,
    programs at once (default: one per usable CPU, or $SMOLDATAENVS_MAX_PROGRAMS), and the data
    source: each row is graded against the split, mirror and revision it names (rl_dataset's
    rows name all three); `mirror`/`revision` given here must agree with the rows', and `split`
    is the split of rows that name none."""
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
