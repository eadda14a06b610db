"""Retried samples: how many, which, what their earlier attempts scored, and whether the
retries only turned failures into passes more than chance allows; and which samples of a log its
own attempt ran (`attempt_of_samples`), so samples stitched in from another run are refused.

Inspect re-runs a sample that errored (`--retry-on-error`, `inspect eval-retry`) and keeps
each earlier attempt's error in the sample's `error_retries`, with the events back to its last
model call: when that attempt was scored, its score event holds its verdict. The forgery of
issue 35 marks a run's wrong samples as errored and retries them: the earlier, scored wrong
verdicts stay in the log, and every retry turned a failure into a pass.

The test (`sign_test`): among retried samples whose reward changed, a retry that does not
depend on the outcome goes up as often as down; P(X >= ups) for X ~ Binomial(changed, 1/2)
below SIGN_ALPHA fails `verify` (check `retries`). With fewer than 5 changed samples no result
can reach it: they are listed, never failed. An earlier attempt with no verdict (it errored
before it was scored, or its score event is gone) is judged by the retry's own outcome: a pass
is a change up, a failure a change down. Why (issue 44): deleting the score events of the
samples marked errored before `eval-retry`, or deleting `error_retries` afterwards, left no
graded earlier verdict, and the test had nothing to count.

An `eval-retry` log keeps the samples its earlier attempt finished as they were, times
included: they ran before the log's own start. A sample that ran in the retry holds
`error_retries`, unless it never started before (an interrupted run) or they were deleted; the
log alone cannot tell these apart, so such a sample counts as retried with its earlier attempt
*not recorded* (`Retried.recorded`). Given the earlier attempt's log too, `runs.dedupe_runs`
reads it there (or drops it when that attempt never ran it).

    from smoldataenvs_tasks.results.load.retries import retry_summary
    retry_summary(run)   # None, or "x.eval: 4 retried sample(s): t1 (earlier wrong_value), ..."
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from math import comb
from typing import Any

from smoldataenvs_tasks.results.load.usage import _instant
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.runs import Retried, Run

SIGN_ALPHA = 0.05
_LISTED = 6
# Inspect records a run's start and end to the second; a sample's own times are finer.
SLACK = _dt.timedelta(seconds=2)


def sign_test(ups: int, downs: int) -> float:
    """One-sided sign test: P(X >= ups), X ~ Binomial(ups + downs, 1/2); 1.0 with no change."""
    n = ups + downs
    if n == 0:
        return 1.0
    return sum(comb(n, k) for k in range(ups, n + 1)) / 2**n


def _earlier(item: Retried) -> str:
    if not item.recorded:
        return "not recorded"
    shown = [v.category if v is not None else "no verdict" for v in item.earlier]
    return ", ".join(shown) or "no verdict"


def changes(retried: Sequence[Retried]) -> tuple[int, int]:
    """(ups, downs): retried samples whose final graded reward is above, below, the last graded
    earlier verdict's; with no graded earlier verdict, a final pass is up and a final 0 down."""
    ups = downs = 0
    for item in retried:
        if not item.final.graded:
            continue
        after = item.final.reward or 0.0
        graded = [v for v in item.earlier if v is not None and v.graded]
        if graded:
            before = graded[-1].reward or 0.0
            ups += after > before
            downs += after < before
        else:
            ups += after >= 1.0
            downs += after <= 0.0
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
        f"{run.source}: {len(run.retried)} retried sample(s): {listed}{more}; retries went up "
        f"{ups}, down {downs} (sign test p={sign_test(ups, downs):.3g}; with no earlier verdict "
        "the retry's own outcome counts)"
    )


# -- which samples the log's own attempt ran -----------------------------------------------------
def moment(value: Any) -> _dt.datetime | None:
    """A recorded time (a datetime, or ISO text as Inspect writes it) in UTC; None: not one."""
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
    return _instant(value)


def attempt_of_samples(
    name: str,
    started: Any,
    completed: Any,
    spans: Sequence[tuple[str, _dt.datetime | None, _dt.datetime | None]],
) -> set[str]:
    """The labels of the samples (label, first and last recorded time) that the log's earlier
    attempt ran (`eval-retry` keeps them as they were: they ended before the log started).

    Every sample must lie within the log's run: one that ended after the run ended, or began
    before it and ended inside it, is refused (RunLoadError): samples of another run were
    stitched into the log (issue 44). A log or a sample without times is judged by what it
    has: an unknown bound is not checked."""
    start, end = moment(started), moment(completed)
    earlier: set[str] = set()
    for label, first, last in spans:
        if first is None or last is None:
            continue
        if end is not None and last > end + SLACK:
            raise RunLoadError(
                f"{name}: {label} ran until {last.isoformat()}, after the run ended "
                f"({end.isoformat()}): a sample of another run was stitched into this log"
            )
        if start is None or first >= start - SLACK:
            continue
        if last > start + SLACK:
            raise RunLoadError(
                f"{name}: {label} began at {first.isoformat()}, before the run began "
                f"({start.isoformat()}), and ended inside it: a sample of another run was "
                "stitched into this log"
            )
        earlier.add(label)
    return earlier
