"""The noise floor on the leaderboard: how far a pass@1 moves from sampling alone, and which
pairwise gaps are smaller than that.

An entry has a floor where a task was attempted more than once: a run with >= 2 epochs, a
submission pooling several runs (seeds), or several submissions of one model in one table
(their attempts pooled). Its figures are `diagnostics.noise_floor`'s: the per-task flip rate
(tasks whose attempts disagree) with its bootstrap interval, and the within-task sd of one
attempt, `w = sqrt(mean p(1 - p))`.

A pair's floor is the 95% half-width of the A − B difference that sampling noise alone gives on
the n tasks both counted: `1.96 * sqrt((w_a² / k_a + w_b² / k_b) / n)`, k the attempts per
task each entry averaged (an entry without a measured floor is given the other's w). A gap
smaller than it is marked "gap below floor". The epochs that would separate the measured gap
(80% power, 5% two-sided) are `Z² (w_a² + w_b²) / (n gap²)`, Z = 1.96 + 0.84, shown beside
`tasks_to_separate`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TypedDict

from smoldataenvs_tasks.results.figures.diagnostics import ALPHA, POWER, noise_floor
from smoldataenvs_tasks.results.figures.task_outcomes import TaskOutcomes
from smoldataenvs_tasks.results.model.schema import EstimateEntry

_Z_INTERVAL = statistics.NormalDist().inv_cdf(1 - ALPHA / 2)
_Z_POWER = _Z_INTERVAL + statistics.NormalDist().inv_cdf(POWER)


class EntryFloor(TypedDict):
    """A leaderboard entry's noise floor (leaderboard.json `entries[].noise_floor`)."""

    source: str  # "epochs", "runs" or "N submissions of this model"
    n_tasks: int  # tasks with two or more graded attempts
    flip_rate: EstimateEntry  # share of them whose attempts disagree, with its interval
    within_sd: float  # sd of one attempt's reward within a task
    attempts_per_task: float  # mean graded attempts per task of the entry's own pass@1


class PairFloor(TypedDict):
    """A pairwise comparison's floor (leaderboard.json `comparisons[].noise_floor`)."""

    floor: float  # 95% half-width of A − B from sampling noise alone
    below_floor: bool  # |A − B| < floor: the gap is within run-to-run noise
    epochs_to_separate: int | None  # epochs per entry that separate the measured gap


def _attempts_per_task(tasks: Mapping[str, TaskOutcomes]) -> float:
    counts = [len(t.rewards()) for t in tasks.values() if t.rewards()]
    return statistics.fmean(counts) if counts else 1.0


def entry_floors(
    models: Sequence[str],
    n_runs: Sequence[int],
    tasks: Sequence[Mapping[str, TaskOutcomes]],
) -> list[EntryFloor | None]:
    """Each entry's floor: from its own repeated attempts, or, when one table holds several
    submissions of its model, from all of theirs pooled."""
    out: list[EntryFloor | None] = []
    for index, model in enumerate(models):
        same_model = [i for i, other in enumerate(models) if other == model]
        if len(same_model) > 1:
            pooled: dict[str, TaskOutcomes] = {}
            for i in same_model:
                for task_id, task in tasks[i].items():
                    merged = pooled.setdefault(task_id, TaskOutcomes(task_id))
                    merged.attempts.extend(task.attempts)
            source = f"{len(same_model)} submissions of this model"
            floor = noise_floor(list(pooled.values()))
        else:
            source = "runs" if n_runs[index] > 1 else "epochs"
            floor = noise_floor(list(tasks[index].values()))
        if floor is None:
            out.append(None)
            continue
        out.append(
            {
                "source": source,
                "n_tasks": floor.n_tasks,
                "flip_rate": floor.flip_rate.to_dict(),
                "within_sd": round(floor.within_sd, 6),
                "attempts_per_task": round(_attempts_per_task(tasks[index]), 3),
            }
        )
    return out


def pair_floor(
    a: EntryFloor | None, b: EntryFloor | None, n_tasks: int, gap: float | None
) -> PairFloor | None:
    """The pair's floor and whether its gap is below it; None when neither entry measured one
    (every task attempted once) or no task was counted by both."""
    if (a is None and b is None) or n_tasks == 0 or gap is None:
        return None
    first = a if a is not None else b
    second = b if b is not None else a
    assert first is not None and second is not None
    var_a, var_b = first["within_sd"] ** 2, second["within_sd"] ** 2
    # an entry with no floor attempted (almost) every task once
    k_a = a["attempts_per_task"] if a is not None else 1.0
    k_b = b["attempts_per_task"] if b is not None else 1.0
    floor = _Z_INTERVAL * math.sqrt((var_a / k_a + var_b / k_b) / n_tasks)
    epochs = None
    if gap != 0 and var_a + var_b > 0:
        epochs = max(1, math.ceil(_Z_POWER**2 * (var_a + var_b) / (n_tasks * gap**2)))
    return {
        "floor": round(floor, 6),
        "below_floor": abs(gap) < floor,
        "epochs_to_separate": epochs,
    }


def flip_text(floor: EntryFloor | None) -> str:
    """An entry's flip rate with its interval, as a table cell."""
    if floor is None or floor["flip_rate"]["value"] is None:
        return "—"
    rate = floor["flip_rate"]
    text = f"{100 * (rate['value'] or 0.0):.1f}%"
    if rate["ci95"]:
        text += f" ({100 * rate['ci95'][0]:.1f}–{100 * rate['ci95'][1]:.1f}%)"
    return f"{text} of {floor['n_tasks']}, {floor['source']}"


def floor_cells(floor: PairFloor | None) -> tuple[str, str]:
    """A pair's floor (points) and the epochs that separate its gap, as table cells."""
    if floor is None:
        return "—", "—"
    epochs = floor["epochs_to_separate"]
    return f"±{100 * floor['floor']:.1f}", "—" if epochs is None else str(epochs)


def verdict_text(verdict: str, floor: PairFloor | None) -> str:
    """The pair's verdict, marked when its gap is smaller than the noise floor."""
    if floor is not None and floor["below_floor"]:
        return f"{verdict}; gap below floor"
    return verdict
