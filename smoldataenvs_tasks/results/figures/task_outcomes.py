"""Per-task outcomes: every attempt of every task, tagged with the run it came from (not to be
confused with `scorers/outcome.py`, the failure category of one program run).

This is the one input every figure of a submission is computed from (`results/publish/submission.py`):
`build_submission` makes it from loaded runs, and `verify` reads it back from a submission's own
`tasks` list, so a verifier recomputes each figure with the same code from the file alone.

    from smoldataenvs_tasks.results.figures.task_outcomes import outcomes_from_entries
    tasks = outcomes_from_entries(submission["tasks"])
    print(sum(t.pass1() for t in tasks if t.pass1() is not None))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.model.schema import AttemptEntry, AttemptUsage, TaskEntry
from smoldataenvs_tasks.scorers.verdict import DATASET_DEFECTS, GRADER_PROFILES, Category

PREDICTION_CHARS = 200
# The ungraded reasons a verifier's own data can confirm: the only ones that take a task out of
# the headline. Every other ungraded attempt (model_error, cancelled, sandbox_failed, ...) is
# the run's, and counts as 0.
DATASET_DEFECT_NAMES = frozenset(reason.value for reason in DATASET_DEFECTS)


@dataclass(frozen=True)
class AttemptOutcome:
    run: int  # index of the run in the submission's `runs`
    epoch: int
    reward: float | None  # None: ungraded
    category: str
    detail: str | None
    method: str
    prediction: str | None  # cut at PREDICTION_CHARS
    # The reward under each grader profile the run holds a verdict for (its own, and any
    # `smoldataenvs regrade` added), so pass@1 by profile is recomputable from the file alone.
    by_grader: Mapping[str, float | None] = field(default_factory=dict)
    # name -> sha256 of each table the attempt was given (None: none staged, or not recorded).
    table_sha256: Mapping[str, str] | None = None
    output_sha256: str | None = None
    usage: AttemptUsage | None = None  # results/cost.py
    retries: int = 0  # earlier attempts that errored and were run again

    @property
    def dataset_defect(self) -> bool:
        """Ungraded because of the data itself (a table, a row), which a verifier can confirm."""
        return self.reward is None and self.detail in DATASET_DEFECT_NAMES

    def to_entry(self) -> AttemptEntry:
        entry: AttemptEntry = {
            "run": self.run,
            "epoch": self.epoch,
            "reward": self.reward,
            "category": self.category,
            "detail": self.detail,
            "method": self.method,
            "prediction": self.prediction,
            "by_grader": dict(sorted(self.by_grader.items())),
            "table_sha256": None
            if self.table_sha256 is None
            else dict(sorted(self.table_sha256.items())),
        }
        if self.output_sha256 is not None:
            entry["output_sha256"] = self.output_sha256
        if self.usage is not None:
            entry["usage"] = {
                "input_tokens": self.usage["input_tokens"],
                "output_tokens": self.usage["output_tokens"],
                "total_seconds": self.usage["total_seconds"],
                "working_seconds": self.usage["working_seconds"],
            }
        if self.retries:
            entry["retries"] = self.retries
        return entry


@dataclass
class TaskOutcomes:
    """One task across every run of a submission."""

    task_id: str
    difficulty_tier: str = "unknown"
    reward_mode: str = ""
    # Whether the task's tables also serve a train-split task: True/False, or None when the
    # train split's rows were not available when the report was written (results/contamination).
    table_in_train: bool | None = None
    attempts: list[AttemptOutcome] = field(default_factory=list)
    # The source dataset its tables come from (`<hf_bucket>/<bucket_prefix>`): pass@1's
    # clustered interval resamples these; None when the run did not record it.
    cluster: str | None = None

    def graded_in(self, run: int) -> bool:
        return any(a.run == run and a.reward is not None for a in self.attempts)

    def in_run(self, run: int) -> bool:
        return any(a.run == run for a in self.attempts)

    def rewards(self, run: int | None = None) -> list[float]:
        return [
            a.reward
            for a in self.attempts
            if a.reward is not None and (run is None or a.run == run)
        ]

    def pass1(self, run: int | None = None) -> float | None:
        """Mean reward over graded attempts (of one run, or all); None when none was graded."""
        rewards = self.rewards(run)
        return sum(rewards) / len(rewards) if rewards else None

    @property
    def ungradable(self) -> bool:
        """Every attempt is ungraded because of the data (a table that cannot be had or is
        corrupt, an invalid row): the task cannot count for anyone. Any other task counts."""
        return bool(self.attempts) and all(a.dataset_defect for a in self.attempts)

    def left_ungraded(self, run: int | None = None) -> list[AttemptOutcome]:
        """The attempts (of one run, or all) the run left ungraded for a reason of its own."""
        if self.ungradable:
            return []
        return [a for a in self.attempts if a.reward is None and (run is None or a.run == run)]

    def scored(self) -> TaskOutcomes:
        """The headline's view of a countable task: an attempt the run left ungraded, for any
        reason, counts as 0 (a run cannot raise its score by not grading its failures)."""
        attempts = [
            replace(
                a,
                reward=0.0 if a.reward is None else a.reward,
                by_grader={p: 0.0 if r is None else r for p, r in a.by_grader.items()},
            )
            for a in self.attempts
        ]
        return replace(self, attempts=attempts)

    def to_entry(self, countable: bool) -> TaskEntry:
        rewards = self.rewards()
        graded = self.pass1()
        headline = self.scored().pass1() if countable else None
        entry: TaskEntry = {
            "task_id": self.task_id,
            "difficulty_tier": self.difficulty_tier,
            "reward_mode": self.reward_mode,
            "table_in_train": self.table_in_train,
            "in_pass1": countable,
            "pass@1": None if headline is None else round(headline, 6),
            "pass@1_graded": None if graded is None else round(graded, 6),
            "n_attempts": len(self.attempts),
            "n_graded": len(rewards),
            "n_left_ungraded": len(self.left_ungraded()),
            "n_correct": int(sum(rewards)),
            "attempts": [a.to_entry() for a in self.attempts],
        }
        if self.cluster is not None:
            entry["cluster"] = self.cluster
        return entry


def ungraded_reason(task: TaskOutcomes) -> str:
    """The most common reason among a task's ungraded attempts (ties: the first by name)."""
    details = Counter(a.detail or "unknown" for a in task.attempts if a.reward is None)
    if not details:
        return "unknown"
    top = max(details.values())
    return min(reason for reason, count in details.items() if count == top)


def _cut(prediction: str | None) -> str | None:
    if prediction is not None and len(prediction) > PREDICTION_CHARS:
        return prediction[:PREDICTION_CHARS] + "…"
    return prediction


def outcomes_from_runs(
    runs: Sequence[Run], table_in_train: Mapping[str, bool | None] | None = None
) -> list[TaskOutcomes]:
    """Every task of `runs`, sorted by id, with its attempts in run then epoch order."""
    table_in_train = table_in_train or {}
    tasks: dict[str, TaskOutcomes] = {}
    for index, run in enumerate(runs):
        for task_id, entry in run.tasks.items():
            task = tasks.get(task_id)
            if task is None:
                task = tasks[task_id] = TaskOutcomes(
                    task_id, table_in_train=table_in_train.get(task_id)
                )
            if task.difficulty_tier == "unknown":
                task.difficulty_tier = entry.difficulty_tier
            task.reward_mode = task.reward_mode or entry.reward_mode
            task.cluster = task.cluster or entry.tables
            for attempt in entry.attempts:
                verdict = attempt.verdict
                task.attempts.append(
                    AttemptOutcome(
                        run=index,
                        epoch=attempt.epoch,
                        reward=verdict.reward,
                        category=verdict.category.value,
                        detail=verdict.detail,
                        method=verdict.method,
                        prediction=_cut(verdict.prediction),
                        by_grader={
                            profile: graded.reward
                            for profile in GRADER_PROFILES
                            if (graded := attempt.under(profile)) is not None
                        },
                        table_sha256=attempt.table_sha256,
                        output_sha256=attempt.output_sha256,
                        usage=attempt.usage,
                        retries=attempt.retries,
                    )
                )
    return [tasks[task_id] for task_id in sorted(tasks)]


_CATEGORIES = {c.value for c in Category}


def outcomes_from_entries(entries: Sequence[TaskEntry]) -> list[TaskOutcomes]:
    """A submission's `tasks` list read back (shape-checked: `schema.check_submission`); an
    attempt that is not a verdict is a RunLoadError naming it."""
    tasks: list[TaskOutcomes] = []
    for number, entry in enumerate(entries):
        attempts = [
            AttemptOutcome(
                run=a["run"],
                epoch=a["epoch"],
                reward=None if a["reward"] is None else float(a["reward"]),
                category=a["category"],
                detail=a["detail"],
                method=a["method"],
                prediction=a["prediction"],
                by_grader={
                    profile: None if reward is None else float(reward)
                    for profile, reward in a["by_grader"].items()
                },
                table_sha256=a["table_sha256"],
                output_sha256=a.get("output_sha256"),
                usage=a.get("usage"),
                retries=a.get("retries", 0),
            )
            for a in entry["attempts"]
        ]
        task = TaskOutcomes(
            task_id=entry["task_id"],
            difficulty_tier=entry["difficulty_tier"] or "unknown",
            reward_mode=entry["reward_mode"],
            table_in_train=entry["table_in_train"],
            attempts=attempts,
            cluster=entry.get("cluster"),
        )
        if not attempts:
            raise RunLoadError(f"tasks[{number}] ({task.task_id}): a task with no attempt")
        for attempt in attempts:
            if attempt.category not in _CATEGORIES or attempt.reward not in (0.0, 1.0, None):
                raise RunLoadError(
                    f"tasks[{number}] ({task.task_id}): attempt with category "
                    f"{attempt.category!r} and reward {attempt.reward!r} is not a verdict"
                )
            if (attempt.reward is None) != (attempt.category == Category.UNGRADED.value) or (
                attempt.reward == 1.0
            ) != (attempt.category == Category.CORRECT.value):
                raise RunLoadError(
                    f"tasks[{number}] ({task.task_id}): reward {attempt.reward!r} contradicts "
                    f"category {attempt.category!r}"
                )
        tasks.append(task)
    return tasks
