"""results/diagnostics.noise_floor: flip rate and epochs to separate a gap (issue 35)."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.results.figures.diagnostics import noise_floor
from smoldataenvs_tasks.results.figures.task_outcomes import AttemptOutcome, TaskOutcomes

pytestmark = pytest.mark.unit


def _task(task_id: str, rewards: list[float]) -> TaskOutcomes:
    attempts = [
        AttemptOutcome(0, epoch, r, "correct" if r else "wrong_value", None, "exact", "1")
        for epoch, r in enumerate(rewards, start=1)
    ]
    return TaskOutcomes(task_id, attempts=attempts)


def test_one_attempt_per_task_has_no_noise_floor():
    assert noise_floor([_task("a", [1.0]), _task("b", [0.0])]) is None


def test_flip_rate_and_epochs_follow_the_within_task_variance():
    tasks = [_task(f"s{i}", [1.0, 0.0]) for i in range(20)]
    tasks += [_task(f"k{i}", [1.0, 1.0]) for i in range(80)]
    floor = noise_floor(tasks, gaps=(0.05, 0.10))
    assert floor is not None and floor.n_tasks == 100
    assert floor.flip_rate.value == pytest.approx(0.2)
    assert floor.flip_rate.low < 0.2 < floor.flip_rate.high
    # within var = 0.2 * 0.25 = 0.05; epochs = 2 * 7.849 * 0.05 / (100 * gap^2)
    assert floor.epochs_to_separate == {"0.05": 4, "0.10": 1}
    # Twice the flips need twice the epochs for the same gap.
    noisier = [_task(f"s{i}", [1.0, 0.0]) for i in range(40)]
    noisier += [_task(f"k{i}", [0.0, 0.0]) for i in range(60)]
    more = noise_floor(noisier, gaps=(0.05,))
    assert more is not None and more.epochs_to_separate["0.05"] == 7


def test_no_flip_needs_no_epochs():
    floor = noise_floor([_task("a", [1.0, 1.0]), _task("b", [0.0, 0.0])])
    assert floor is not None and floor.flip_rate.value == 0.0
    assert set(floor.epochs_to_separate.values()) == {None}
