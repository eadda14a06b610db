"""The statistics of a SmolDataEnvs report: bootstrap CIs over tasks, pass@k, seed standard errors.

docs/design.md "Reports": CIs are 95% percentile bootstraps over tasks with seed 0 and 10,000
resamples, so two people reporting the same per-task values print the same interval.

    python -c "from smoldataenvs_tasks.results.stats import bootstrap_ci; \
        print(bootstrap_ci([1, 0, 1, 1, 0, 1]))"
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from smoldataenvs_tasks.results.schema import EstimateEntry, SeedSpread

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
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    # A percentile of means can land one ulp beside the point estimate when every resample
    # mean equals it (all values equal); the interval must still contain it.
    return Estimate(point, min(float(low), point), max(float(high), point), n)


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
