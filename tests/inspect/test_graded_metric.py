"""`graded`, the count beside pass@1, through Inspect's real epoch reducers (the ones a `-T
pass_k=3` run uses): it counts the samples each reducer scored, never epochs, and never a sample
the dataset left ungradable."""

from __future__ import annotations

from typing import cast

import pytest
from inspect_ai.scorer import Score

from smoldataenvs_tasks.inspect_adapter.scoring import (
    SCORER_METRICS,
    graded,
    pass_at_1,
    pass_k_epochs,
)
from tests.inspect.metric_epochs import run_metrics

PASS_K_REDUCERS = ["mean", "pass_at_1", "pass_at_3"]  # what -T pass_k=3 reduces with
ONE, ZERO = Score(value=1.0), Score(value=0.0)
UNGRADABLE = Score.unscored(reason="table_unavailable")


@pytest.mark.slow
def test_graded_counts_samples_not_epochs_and_leaves_out_the_ungradable():
    values = run_metrics(
        [graded()], [[ONE, ONE, ONE], [ZERO, ONE, ZERO], [UNGRADABLE] * 3], PASS_K_REDUCERS
    )
    assert {reducer: values[(reducer, "graded")] for reducer in PASS_K_REDUCERS} == dict.fromkeys(
        PASS_K_REDUCERS, 2.0
    )


def test_graded_is_the_denominator_each_reducer_used():
    # An epoch left ungraded (its grader failed) leaves pass@3 with too few epochs for that
    # sample: pass@3 is then over one sample, and graded says so where accuracy alone cannot.
    epochs = [[ONE, ONE, ONE], [ONE, UNGRADABLE, ZERO]]
    metadata = {"difficulty_tier": "easy", "reward_mode": "numeric"}
    values = run_metrics(SCORER_METRICS, epochs, PASS_K_REDUCERS, metadata)
    assert values[("mean", "graded")] == 2.0
    assert values[("mean", "accuracy")] == pytest.approx(0.75)
    assert values[("pass_at_3", "graded")] == 1.0
    assert values[("pass_at_3", "accuracy")] == 1.0
    assert values[("mean", "tier_easy")] == pytest.approx(0.75)


@pytest.mark.slow
def test_equal_epochs_change_nothing():
    scores = [ONE, ZERO, UNGRADABLE, ONE]
    once = run_metrics([graded()], [[s] for s in scores], ["mean"])
    thrice = run_metrics([graded()], [[s] * 3 for s in scores], ["mean", "mode"])
    assert once[("mean", "graded")] == thrice[("mean", "graded")] == thrice[("mode", "graded")] == 3


@pytest.mark.slow
def test_pass_at_1_is_named_after_the_reducer_of_its_column():
    # pass_k_epochs' reducers as -T pass_k=3 runs them: each column's pass_at_1 row takes its
    # reducer's name, so the pass@3 column is never labelled pass@1. An ungradable sample is
    # left out, as the report leaves it out.
    reducers = pass_k_epochs(3).reducer or []
    values = run_metrics(
        [pass_at_1()],
        [[ONE, ONE, ONE], [ZERO, ONE, ZERO], [UNGRADABLE] * 3],
        cast(list[str], reducers),
    )
    assert values == {
        ("mean", "mean"): pytest.approx((1 + 1 / 3) / 2),
        ("pass_at_1", "pass_at_1"): pytest.approx((1 + 1 / 3) / 2),
        ("pass_at_3", "pass_at_3"): 1.0,
    }
    # Without reducers (one epoch), it is pass_at_1: the mean over graded tasks.
    once = run_metrics([pass_at_1()], [[ONE], [ZERO], [UNGRADABLE], [ONE]], ["mean"])
    assert once == {("mean", "pass_at_1"): pytest.approx(2 / 3)}
