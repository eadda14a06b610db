"""Is this number any good? The figures that say how far a pass@1 can be trusted.

- tasks that *split*: some graded attempts right, some wrong (with one attempt per task none can);
- tasks always solved and always failed (by this model, or by every model of a leaderboard);
- the number of tasks needed to separate two models at the measured spread: 80% power, 5%
  two-sided, normal approximation. For one submission, two independent models with this per-task
  spread (a paired comparison on the same tasks needs fewer); for a pair of models, the paired
  per-task differences at their measured gap;
- the contamination view: the share of tasks whose tables (the row's `bucket_prefix`) also serve
  a train-split task, and pass@1 on each side of that line.

Everything here is computed from per-task values and flags recorded in the submission.

    from smoldataenvs_tasks.results.figures.diagnostics import tasks_to_separate
    tasks_to_separate(spread=0.45, gap=0.10, paired=False)   # 318
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from smoldataenvs_tasks.results.figures.stats import Estimate, bootstrap_ci
from smoldataenvs_tasks.results.figures.task_outcomes import TaskOutcomes
from smoldataenvs_tasks.results.model.schema import Contamination, Diagnostics, TrainTables

ALPHA = 0.05
POWER = 0.80
# Gaps (in pass@1) the single-submission view reports the needed task count for.
GAPS = (0.05, 0.10)
_Z = statistics.NormalDist().inv_cdf(1 - ALPHA / 2) + statistics.NormalDist().inv_cdf(POWER)


def spread(values: Sequence[float]) -> float | None:
    """Sample standard deviation of per-task values; None below two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def tasks_to_separate(spread: float | None, gap: float, *, paired: bool = True) -> int | None:
    """Tasks needed to tell a `gap` in pass@1 from chance at this per-task `spread`.

    paired: `spread` is the sd of per-task differences (one set of tasks, two models);
    unpaired: the sd of one model's per-task values, assumed alike for both models.
    None when there is no gap or no spread was measured.
    """
    if spread is None or gap == 0:
        return None
    variance = spread**2 if paired else 2 * spread**2
    return max(1, math.ceil(_Z**2 * variance / gap**2))


def smallest_separable_gap(spread: float | None, n_tasks: int) -> float | None:
    """The smallest gap between two independent models of this spread that n tasks separate."""
    if spread is None or n_tasks == 0:
        return None
    return _Z * math.sqrt(2 * spread**2 / n_tasks)


@dataclass(frozen=True)
class NoiseFloor:
    """How much a run's pass@1 moves from sampling alone, where tasks have >= 2 attempts."""

    n_tasks: int  # tasks with two or more graded attempts
    flip_rate: Estimate  # share of them whose attempts disagree, with its interval
    within_sd: float  # sqrt of the mean within-task variance p(1 - p) of one attempt
    epochs_to_separate: dict[str, int | None]  # by gap, for `tasks` tasks


def noise_floor(tasks: Sequence[TaskOutcomes], gaps: Sequence[float] = GAPS) -> NoiseFloor | None:
    """The per-task flip rate (tasks whose graded attempts disagree; a task bootstrap
    interval) and the epochs needed so that sampling noise alone lets a paired comparison of
    two runs on these tasks separate each gap (80% power, 5% two-sided): the difference of two
    runs' pass@1 on the same tasks has sampling variance 2 * within_var / (epochs * n), so
    epochs >= 2 Z^2 within_var / (n gap^2). None with fewer than two tasks of >= 2 attempts."""
    repeated = [rewards for t in tasks if len(rewards := t.rewards()) >= 2]
    if len(repeated) < 2:
        return None
    flips = [0.0 if len(set(r)) == 1 else 1.0 for r in repeated]
    within = statistics.fmean(statistics.pvariance(r) for r in repeated)
    n = len(repeated)
    epochs = {
        f"{gap:.2f}": (max(1, math.ceil(2 * _Z**2 * within / (n * gap**2))) if within else None)
        for gap in gaps
    }
    return NoiseFloor(n, bootstrap_ci(flips), math.sqrt(within), epochs)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


@dataclass(frozen=True)
class AttemptProfile:
    """Task ids by how their graded attempts went."""

    split: list[str]  # some right, some wrong
    always_solved: list[str]
    always_failed: list[str]


def attempt_profile(tasks: Sequence[TaskOutcomes]) -> AttemptProfile:
    """Task ids that split (right and wrong attempts), always solved, always failed."""
    mixed: list[str] = []
    solved: list[str] = []
    failed: list[str] = []
    for task in tasks:
        rewards = task.rewards()
        if not rewards:
            continue
        if all(r == 1.0 for r in rewards):
            solved.append(task.task_id)
        elif all(r == 0.0 for r in rewards):
            failed.append(task.task_id)
        else:
            mixed.append(task.task_id)
    return AttemptProfile(split=mixed, always_solved=solved, always_failed=failed)


def contamination(
    tasks: Sequence[TaskOutcomes], included: set[str], basis: TrainTables
) -> Contamination:
    """Share of tasks whose tables also appear in train, and pass@1 on each side (from the
    per-task flags the report recorded); `basis` says whether the train split was available."""
    checked = [t for t in tasks if t.table_in_train is not None]
    shared = [t for t in checked if t.table_in_train]

    def pass1_where(flag: bool) -> list[float]:
        return [
            value
            for t in checked
            if t.table_in_train is flag
            and t.task_id in included
            and (value := t.pass1()) is not None
        ]

    return {
        "available": basis["available"] and bool(checked),
        "note": basis["note"],
        "n_checked": len(checked),
        "n_table_in_train": len(shared),
        "share": _round(len(shared) / len(checked)) if checked else None,
        "pass@1_table_in_train": bootstrap_ci(pass1_where(True)).to_dict(),
        "pass@1_table_not_in_train": bootstrap_ci(pass1_where(False)).to_dict(),
    }


def submission_diagnostics(
    tasks: Sequence[TaskOutcomes], included: set[str], train_basis: TrainTables
) -> Diagnostics:
    """The "is this number any good" section of one submission."""
    in_pass1 = [t for t in tasks if t.task_id in included]
    profile = attempt_profile(in_pass1)
    sd = spread([value for t in in_pass1 if (value := t.pass1()) is not None])
    max_attempts = max((len(t.rewards()) for t in in_pass1), default=0)
    return {
        "n_tasks_split": len(profile.split),
        "tasks_split": profile.split,
        "can_split": max_attempts > 1,
        "n_always_solved": len(profile.always_solved),
        "n_always_failed": len(profile.always_failed),
        "per_task_sd": _round(sd),
        "tasks_to_separate": {
            f"{gap:.2f}": tasks_to_separate(sd, gap, paired=False) for gap in GAPS
        },
        "smallest_separable_gap": _round(smallest_separable_gap(sd, len(in_pass1))),
        "contamination": contamination(tasks, included, train_basis),
    }
