"""The statistics of a SmolDataEnvs report: bootstrap CIs over tasks, pass@k, seed standard errors.

docs/design.md "Reports": CIs are 95% percentile bootstraps over tasks with seed 0 and 10,000
resamples, so two people reporting the same per-task values print the same interval.

    python -c "from smoldataenvs_tasks.results.figures.stats import bootstrap_ci; \
        print(bootstrap_ci([1, 0, 1, 1, 0, 1]))"
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from smoldataenvs_tasks.results.model.schema import EstimateEntry, SeedSpread

BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 10_000
CONFIDENCE = 0.95
# Resamples drawn per batch: bounds memory at 5,000 tasks (the train split) to ~40 MB.
_BATCH = 1_000


@dataclass(frozen=True)
class Estimate:
    """A mean over tasks with its 95% bootstrap interval (None bounds when there are no tasks)."""

    value: float | None
    low: float | None
    high: float | None
    n_tasks: int

    def to_dict(self, digits: int = 6) -> EstimateEntry:
        def r(x: float) -> float:
            return round(x, digits)

        return {
            "value": None if self.value is None else r(self.value),
            "ci95": None if self.low is None or self.high is None else [r(self.low), r(self.high)],
            "n_tasks": self.n_tasks,
        }


def bootstrap_ci(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """The mean of per-task `values` and its percentile bootstrap interval (tasks resampled).

    Deterministic for a given seed: the same values in the same order give the same interval.
    """
    data = np.asarray(values, dtype=float)
    n = int(data.size)
    if n == 0:
        return Estimate(None, None, None, 0)
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap values must be finite numbers")
    point = float(data.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=float)
    for start in range(0, resamples, _BATCH):
        stop = min(start + _BATCH, resamples)
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[picks].mean(axis=1)
    return _percentile_interval(point, means, confidence, n)


def _percentile_interval(point: float, means: np.ndarray, confidence: float, n: int) -> Estimate:
    """The percentile interval of the resampled `means` around `point`.

    A percentile of means can land one ulp beside the point estimate when every resample mean
    equals it (all values equal); the interval must still contain it."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Estimate(point, min(float(low), point), max(float(high), point), n)


def cluster_bootstrap_ci(
    values: Sequence[float],
    clusters: Sequence[str | None],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> tuple[Estimate, int]:
    """The mean of per-task `values` with a percentile interval from resampling whole clusters
    (a task's source dataset; None: a cluster of its own), and the number of clusters. Each
    resample's statistic is its tasks' total over its tasks' count (the mean over the tasks the
    drawn clusters hold). Tasks of one dataset tend to be solved or failed together, so this
    interval is wider than the task bootstrap's whenever they do (Miller 2024)."""
    data = np.asarray(values, dtype=float)
    n = int(data.size)
    if n == 0:
        return Estimate(None, None, None, 0), 0
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap values must be finite numbers")
    index: dict[str, int] = {}
    labels = [
        index.setdefault(c if c is not None else f"\0task {i}", len(index))
        for i, c in enumerate(clusters)
    ]
    k = len(index)
    sums = np.bincount(labels, weights=data, minlength=k)
    sizes = np.bincount(labels, minlength=k).astype(float)
    point = float(data.mean())
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=float)
    for start in range(0, resamples, _BATCH):
        stop = min(start + _BATCH, resamples)
        picks = rng.integers(0, k, size=(stop - start, k))
        means[start:stop] = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    return _percentile_interval(point, means, confidence, n), k


def bootstrap_p_value(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> float | None:
    """Two-sided p-value that the mean of `values` (paired differences) is 0, from the same
    bootstrap as `bootstrap_ci` (same seed, same resamples): twice the smaller share of
    resample means on either side of 0, each share counted as (k + 1) / (R + 1) so it is never
    0. The interval excludes 0 at level 1 - a about when this is below a."""
    data = np.asarray(values, dtype=float)
    n = int(data.size)
    if n == 0:
        return None
    if not np.all(np.isfinite(data)):
        raise ValueError("bootstrap values must be finite numbers")
    rng = np.random.default_rng(seed)
    at_or_below = at_or_above = 0
    for start in range(0, resamples, _BATCH):
        stop = min(start + _BATCH, resamples)
        picks = rng.integers(0, n, size=(stop - start, n))
        means = data[picks].mean(axis=1)
        at_or_below += int(np.count_nonzero(means <= 0.0))
        at_or_above += int(np.count_nonzero(means >= 0.0))
    smaller = min(at_or_below, at_or_above)
    return min(1.0, 2.0 * (smaller + 1) / (resamples + 1))


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (family-wise error control over the pairs of one table):
    the i-th smallest p times (m - i + 1), made non-decreasing, capped at 1. None stays None
    and does not count in m."""
    known = sorted((p, index) for index, p in enumerate(p_values) if p is not None)
    m = len(known)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    `n` attempts of which `c` were correct; needs n >= k.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if k < 1 or k > n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    # The product form avoids huge binomials: prod_{i=n-c+1}^{n} (1 - k/i).
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_k_values(max_attempts: int) -> list[int]:
    """The k > 1 worth reporting for tasks with up to `max_attempts` attempts: powers of 2 and
    the largest k itself (e.g. 4 → [2, 4]; 5 → [2, 4, 5]; 1 → [])."""
    ks: list[int] = []
    k = 2
    while k <= max_attempts:
        ks.append(k)
        k *= 2
    if max_attempts > 1 and max_attempts not in ks:
        ks.append(max_attempts)
    return ks


@dataclass(frozen=True)
class SeedSummary:
    """Mean ± standard error of one score over runs (seeds), MLE-bench style."""

    mean: float | None
    se: float | None
    per_run: tuple[float | None, ...]

    def to_dict(self, digits: int = 6) -> SeedSpread:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, digits)

        return {"mean": r(self.mean), "se": r(self.se), "per_run": [r(x) for x in self.per_run]}


def mean_and_se(per_run: Sequence[float | None]) -> SeedSummary:
    """Mean and standard error of the mean (sample std / sqrt(n)); SE needs two or more runs."""
    known = [float(x) for x in per_run if x is not None]
    if not known:
        return SeedSummary(None, None, tuple(per_run))
    mean = math.fsum(known) / len(known)
    if len(known) < 2:
        return SeedSummary(mean, None, tuple(per_run))
    variance = math.fsum((x - mean) ** 2 for x in known) / (len(known) - 1)
    return SeedSummary(mean, math.sqrt(variance / len(known)), tuple(per_run))
