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


# -- on the leaderboard (results/figures/leaderboard_floor.py) -----------------------------------------
def _board(*subs: dict) -> dict:
    from smoldataenvs_tasks.results.publish.leaderboard import Standing, build_leaderboard

    return dict(build_leaderboard([(f"{i}/s.json", s, Standing(True)) for i, s in enumerate(subs)]))


def _two_epochs(n: int, flips: int, solved: int) -> list[list[float | None]]:
    """n tasks of two attempts: `flips` right then wrong, `solved` right twice, the rest wrong."""
    return [[1.0, 0.0]] * flips + [[1.0, 1.0]] * solved + [[0.0, 0.0]] * (n - flips - solved)


def test_a_gap_within_the_noise_floor_is_marked_with_the_epochs_that_would_separate_it():
    import math

    from smoldataenvs_tasks.results.render.leaderboard_page import render_leaderboard_markdown
    from tests.report.synthetic import synthetic_submission

    a = synthetic_submission("a", _two_epochs(60, flips=20, solved=21))
    b = synthetic_submission("b", _two_epochs(60, flips=20, solved=20))
    board = _board(a, b)
    [table] = board["tables"]
    floors = {e["model"]: e["noise_floor"] for e in table["entries"]}
    assert floors["a"]["flip_rate"]["value"] == pytest.approx(20 / 60)
    assert floors["a"]["source"] == "epochs" and floors["a"]["n_tasks"] == 60
    [pair] = table["comparisons"]
    # within variance 20 * 0.25 / 60 per entry, two attempts each, 60 shared tasks
    within = 20 * 0.25 / 60
    expected = 1.959964 * math.sqrt(2 * within / 2 / 60)
    assert pair["noise_floor"]["floor"] == pytest.approx(expected, abs=1e-4)
    gap = abs(pair["difference"]["value"])
    assert gap == pytest.approx(1 / 60, abs=1e-6) and gap < expected
    assert pair["noise_floor"]["below_floor"] is True
    z = 1.959964 + 0.841621
    assert pair["noise_floor"]["epochs_to_separate"] == math.ceil(z**2 * 2 * within / (60 * gap**2))
    markdown = render_leaderboard_markdown(board)  # type: ignore[arg-type]
    assert "gap below floor" in markdown and "flip rate (95% CI)" in markdown
    assert "noise floor (points)" in markdown and "epochs needed" in markdown


def test_a_gap_beyond_the_floor_is_not_marked():
    from tests.report.synthetic import synthetic_submission

    a = synthetic_submission("a", _two_epochs(60, flips=6, solved=50))
    b = synthetic_submission("b", _two_epochs(60, flips=6, solved=4))
    [pair] = _board(a, b)["tables"][0]["comparisons"]
    assert pair["noise_floor"]["below_floor"] is False
    assert "below floor" not in pair["verdict"]


def test_single_attempt_entries_have_no_floor():
    from tests.report.synthetic import synthetic_submission

    a = synthetic_submission("a", [[1.0]] * 30 + [[0.0]] * 30)
    b = synthetic_submission("b", [[1.0]] * 20 + [[0.0]] * 40)
    [table] = _board(a, b)["tables"]
    assert all("noise_floor" not in e for e in table["entries"])
    assert all("noise_floor" not in c for c in table["comparisons"])


def test_several_submissions_of_one_model_give_a_floor_across_them():
    from tests.report.synthetic import synthetic_submission

    # two single-epoch runs of one model that disagree on 12 of 60 tasks
    first = [[1.0]] * 30 + [[0.0]] * 30
    second = [[1.0]] * 24 + [[0.0]] * 6 + [[1.0]] * 6 + [[0.0]] * 24
    a = synthetic_submission("m", first, created="2026-11-29T10:00:00+00:00")
    b = synthetic_submission("m", second, created="2026-11-30T10:00:00+00:00")
    [table] = _board(a, b)["tables"]
    for entry in table["entries"]:
        assert entry["noise_floor"]["source"] == "2 submissions of this model"
        assert entry["noise_floor"]["flip_rate"]["value"] == pytest.approx(12 / 60)
