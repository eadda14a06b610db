"""Retried samples: how many, which, what their earlier attempts scored, and whether the
retries only turned failures into passes more than chance allows.

Inspect re-runs a sample that errored (`--retry-on-error`, `inspect eval-retry`) and keeps
each earlier attempt's error in the sample's `error_retries`, with the events back to its last
model call: when that attempt was scored, its score event holds its verdict. The forgery of
issue 35 marks a run's wrong samples as errored and retries them: the earlier, scored wrong
verdicts stay in the log, and every retry turned a failure into a pass.

The test (`sign_test`): among retried samples whose earlier attempt has a graded verdict and
whose reward changed, a retry that does not depend on the outcome goes up as often as down;
P(X >= ups) for X ~ Binomial(changed, 1/2) below SIGN_ALPHA fails `verify` (check `retries`).
With fewer than 5 changed samples no result can reach it: they are listed, never failed.

    from smoldataenvs_tasks.results.load.retries import retry_summary
    retry_summary(run)   # None, or "x.eval: 4 retried sample(s): t1 (earlier wrong_value), ..."
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb

from smoldataenvs_tasks.results.model.runs import Retried, Run

SIGN_ALPHA = 0.05
_LISTED = 6


def sign_test(ups: int, downs: int) -> float:
    """One-sided sign test: P(X >= ups), X ~ Binomial(ups + downs, 1/2); 1.0 with no change."""
    n = ups + downs
    if n == 0:
        return 1.0
    return sum(comb(n, k) for k in range(ups, n + 1)) / 2**n


def _earlier(item: Retried) -> str:
    shown = [v.category if v is not None else "no verdict" for v in item.earlier]
    return ", ".join(shown)


def changes(retried: Sequence[Retried]) -> tuple[int, int]:
    """(ups, downs): retried samples whose last graded earlier verdict's reward is below,
    above, the final one."""
    ups = downs = 0
    for item in retried:
        graded = [v for v in item.earlier if v is not None and v.graded]
        if not graded or not item.final.graded:
            continue
        before, after = graded[-1].reward or 0.0, item.final.reward or 0.0
        ups += after > before
        downs += after < before
    return ups, downs


def retry_summary(run: Run) -> str | None:
    """One line naming the run's retried samples and their earlier verdicts; None without."""
    if not run.retried:
        return None
    ups, downs = changes(run.retried)
    listed = "; ".join(
        f"{item.task_id} epoch {item.epoch} (earlier {_earlier(item)}; now {item.final.category})"
        for item in run.retried[:_LISTED]
    )
    more = f"; and {len(run.retried) - _LISTED} more" if len(run.retried) > _LISTED else ""
    return (
        f"{run.source}: {len(run.retried)} retried sample(s): {listed}{more}; earlier scored "
        f"attempts went up {ups}, down {downs} (sign test p={sign_test(ups, downs):.3g})"
    )
