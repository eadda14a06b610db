"""Unit tests of the report statistics: bootstrap CI, pass@k, seed standard errors, hashing."""

from __future__ import annotations

import math
import statistics
from fractions import Fraction
from itertools import combinations

import pytest

from smoldataenvs_tasks.results.figures.stats import (
    BOOTSTRAP_RESAMPLES,
    bootstrap_ci,
    mean_and_se,
    pass_at_k,
    pass_k_values,
)
from smoldataenvs_tasks.results.publish.submission import (
    canonical_json,
    submission_sha256,
    verify_submission,
)

pytestmark = pytest.mark.unit

# --- bootstrap ------------------------------------------------------------------------------


def test_bootstrap_is_deterministic_with_seed_0():
    values = [1, 0, 1, 1, 0, 0, 1, 0.5, 1, 0, 0.25]
    first, second = bootstrap_ci(values), bootstrap_ci(list(values))
    assert first == second
    assert first.value == pytest.approx(sum(values) / len(values))
    assert first.n_tasks == len(values)


def test_bootstrap_interval_depends_on_the_seed():
    # Continuous values: with 0/1 rewards both seeds can land on the same grid point.
    values = [((i * 7919) % 101) / 100 for i in range(40)]
    assert bootstrap_ci(values, seed=0) != bootstrap_ci(values, seed=1)


def test_bootstrap_interval_brackets_the_mean_and_stays_in_range():
    for values in ([1, 0, 0, 0], [0.1] * 9, [1.0] * 5, [0, 0, 1], [0.3, 0.6, 0.9] * 11):
        estimate = bootstrap_ci(values)
        assert 0.0 <= estimate.low <= estimate.value <= estimate.high <= 1.0


def test_bootstrap_interval_matches_the_normal_approximation_for_many_tasks():
    # 200 tasks at p = 0.3: the 95% interval is about p ± 1.96 * sqrt(p(1-p)/n).
    values = [1] * 60 + [0] * 140
    estimate = bootstrap_ci(values)
    half_width = 1.96 * math.sqrt(0.3 * 0.7 / 200)
    assert estimate.low == pytest.approx(0.3 - half_width, abs=0.01)
    assert estimate.high == pytest.approx(0.3 + half_width, abs=0.01)


def test_bootstrap_interval_narrows_with_more_tasks():
    small = bootstrap_ci([1, 0] * 10)
    large = bootstrap_ci([1, 0] * 200)
    assert (large.high - large.low) < (small.high - small.low) / 3


def test_bootstrap_of_no_tasks_has_no_value():
    estimate = bootstrap_ci([])
    assert (estimate.value, estimate.low, estimate.high, estimate.n_tasks) == (None, None, None, 0)
    assert estimate.to_dict() == {"value": None, "ci95": None, "n_tasks": 0}


def test_bootstrap_refuses_nan():
    with pytest.raises(ValueError, match="finite"):
        bootstrap_ci([1.0, float("nan")])


def test_bootstrap_default_resamples_are_the_decided_ten_thousand():
    assert BOOTSTRAP_RESAMPLES == 10_000


# --- pass@k ---------------------------------------------------------------------------------


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> Fraction:
    """The fraction of k-subsets of n attempts (c correct) holding at least one correct one."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return Fraction(sum(any(attempts[i] for i in s) for s in subsets), len(subsets))


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_the_enumerated_probability(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(_pass_at_k_by_enumeration(n, c, k)))


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 4), (3, 1, 0)])
def test_pass_at_k_refuses_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


@pytest.mark.parametrize(
    ("attempts", "ks"), [(1, []), (2, [2]), (4, [2, 4]), (5, [2, 4, 5]), (10, [2, 4, 8, 10])]
)
def test_pass_k_values_are_powers_of_two_and_the_largest(attempts, ks):
    assert pass_k_values(attempts) == ks


# --- seeds ----------------------------------------------------------------------------------


def test_mean_and_standard_error_over_runs():
    per_run = [0.41, 0.45, 0.38, 0.47]
    summary = mean_and_se(per_run)
    assert summary.mean == pytest.approx(statistics.mean(per_run))
    assert summary.se == pytest.approx(statistics.stdev(per_run) / math.sqrt(len(per_run)))
    assert summary.per_run == tuple(per_run)


def test_one_run_has_a_mean_but_no_standard_error():
    summary = mean_and_se([0.5])
    assert (summary.mean, summary.se) == (0.5, None)


def test_runs_without_a_score_are_left_out_of_the_mean():
    summary = mean_and_se([0.2, None, 0.4])
    assert summary.mean == pytest.approx(0.3)
    assert summary.se == pytest.approx(statistics.stdev([0.2, 0.4]) / math.sqrt(2))


# --- hashing --------------------------------------------------------------------------------


def test_sha256_covers_everything_but_itself_and_ignores_key_order():
    body = {"model": "m", "pass@1": {"value": 0.5, "ci95": [0.2, 0.8]}, "split": "tést"}
    submission = {**body, "sha256": submission_sha256(body)}
    assert verify_submission(submission)
    reordered = dict(reversed(list(submission.items())))
    assert verify_submission(reordered)
    tampered = {**submission, "pass@1": {"value": 0.6, "ci95": [0.2, 0.8]}}
    assert not verify_submission(tampered)


def test_canonical_json_is_compact_sorted_utf8():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(ValueError):
        canonical_json({"a": float("nan")})


def test_a_clustered_interval_is_wider_when_a_datasets_tasks_move_together():
    """Issue 35: 10 datasets of 6 tasks each, every dataset's tasks all solved or all failed:
    60 tasks but 10 independent outcomes, so the cluster bootstrap is wider than the task one;
    with every task its own cluster it is the task bootstrap again."""
    from smoldataenvs_tasks.results.figures.stats import cluster_bootstrap_ci

    values = [1.0 if d % 2 else 0.0 for d in range(10) for _ in range(6)]
    clusters = [f"dataset-{d}" for d in range(10) for _ in range(6)]
    plain = bootstrap_ci(values)
    clustered, n_clusters = cluster_bootstrap_ci(values, clusters)
    assert n_clusters == 10 and clustered.value == plain.value == 0.5
    assert clustered.high - clustered.low > 1.8 * (plain.high - plain.low)
    alone, n_alone = cluster_bootstrap_ci(values, [None] * len(values))
    assert n_alone == 60 and (alone.low, alone.high) == (plain.low, plain.high)
    assert cluster_bootstrap_ci([], []) == (bootstrap_ci([]), 0)
