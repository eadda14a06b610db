"""How much of its split a run covered: the split's full size, the filters, the limit, whether
every task of the split has a result, and whether each holds every attempt the run planned
(`complete`).

The plan's attempts per task are the run's `epochs` (results/model/runs.py: Inspect's eval config
epochs, lm-eval's `repeats`, Harbor's attempts), the one declaration every loader fills. A task
holding fewer (or other) attempts than that lost some after the run: deleting a pass@k run's
wrong attempts would otherwise turn its pass@1 into best-of-k while it still read complete
(issue 44). `attempt_shortfalls` names each such task and what it lacks.

A split whose size is not the pinned one (`_pins.SPLIT_SIZES`) is `nonstandard`, and a task the
run left ungraded for any reason but a dataset defect (a model error, an interrupt, a broken
sandbox) is counted as 0 and keeps the run from being complete until it is re-run.

The split's size, the filters and the limit are recorded at run time (the Inspect task's metadata
and eval config; lm-eval's docs and results config), so a report never reads the data to know a
run was partial. A task with a result is covered even when ungraded: its infrastructure failure
is counted apart, it was not left out by a filter.

    from smoldataenvs_tasks.results.model.coverage import coverage_of
    coverage_of(split_tasks=250, n_tasks=3, limit=3)["complete"]   # False
    coverage_of(split_tasks=16, n_tasks=16, split="eval", revision=DATASET_REVISION)["nonstandard"]
    attempt_shortfalls(2, {"t1": [1, 2], "t2": [2]})   # ['task t2 holds attempt(s) 2 of 2: ...']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from smoldataenvs_tasks.results.model.protocol import framework_of
from smoldataenvs_tasks.results.model.schema import (
    Coverage,
    Filters,
    RunCoverage,
    field_names,
)
from smoldataenvs_tasks.run_plan import Framework

FILTER_NAMES = field_names(Filters)
_SHOWN_IDS = 5


def _listing(values: Sequence[Any]) -> str:
    shown = ",".join(str(v) if v != "" else '""' for v in values[:_SHOWN_IDS])
    more = f" (+{len(values) - _SHOWN_IDS} more)" if len(values) > _SHOWN_IDS else ""
    return shown + more


def normal_filters(filters: Mapping[str, Any] | None) -> Filters:
    """Every filter name, each a list of strings or None (an empty list filters nothing)."""
    filters = filters or {}

    def names(value: Any) -> list[str] | None:
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in value] if value else None

    return {
        "tiers": names(filters.get("tiers")),
        "reward_modes": names(filters.get("reward_modes")),
        "task_ids": names(filters.get("task_ids")),
    }


def filter_items(filters: Filters) -> list[tuple[str, list[str] | None]]:
    """(name, names) of every filter, in FILTER_NAMES order."""
    return [
        ("tiers", filters["tiers"]),
        ("reward_modes", filters["reward_modes"]),
        ("task_ids", filters["task_ids"]),
    ]


def _size_problem(split: str | None, revision: str | None, split_tasks: int | None) -> str | None:
    """Why a run's split is not the split it names (nonstandard), or None."""
    from smoldataenvs_tasks._pins import pinned_revision, pinned_split_size

    if split is None or split_tasks is None:
        return None
    pinned = pinned_split_size(split, revision)
    if pinned is None:
        return (
            f"nonstandard: split {split!r} at revision {revision} has no pinned size (this "
            f"package pins {pinned_revision(split)})"
        )
    if split_tasks != pinned:
        return (
            f"nonstandard: the run's split has {split_tasks} tasks, but {split} has {pinned} at "
            "the pinned revision"
        )
    return None


def attempt_shortfalls(planned: int, attempts: Mapping[str, Sequence[int]]) -> list[str]:
    """Why the tasks' attempts are not the plan's: each task must hold attempts 1..`planned`
    (epochs or repeats, 1-based), each once. One line per task that does not, at most
    `_SHOWN_IDS` of them and a count of the rest."""
    wanted = set(range(1, planned + 1))
    lines = []
    for task_id, epochs in sorted(attempts.items()):
        held = sorted(epochs)
        if held == sorted(wanted):
            continue
        missing = sorted(wanted - set(held))
        extra = sorted({e for e in held if e not in wanted or held.count(e) > 1})
        what = []
        if missing:
            what.append(f"lacks {_listing(missing)}")
        if extra:
            what.append(f"has {_listing(extra)} beyond the plan or twice")
        lines.append(
            f"task {task_id} holds attempt(s) {_listing(held) or 'none'} of the run's {planned}: "
            + " and ".join(what)
        )
    if len(lines) > _SHOWN_IDS:
        lines = [*lines[:_SHOWN_IDS], f"and {len(lines) - _SHOWN_IDS} more task(s) like them"]
    return lines


def coverage_of(
    *,
    split_tasks: int | None,
    n_tasks: int,
    filters: Mapping[str, Any] | None = None,
    n_selected: int | None = None,
    limit: int | float | Sequence[int] | None = None,
    sample_ids: Sequence[Any] | None = None,
    finished: bool = True,
    n_left_ungraded: int = 0,
    left_ungraded_by_reason: Mapping[str, int] | None = None,
    framework: str | None = None,
    split: str | None = None,
    revision: str | None = None,
    planned_attempts: int | None = None,
    attempts: Mapping[str, Sequence[int]] | None = None,
) -> RunCoverage:
    """One run's coverage. Complete means: the split's size is known and is the pinned one
    (when `split` is given), the run finished, every task of the split has a result, every
    task holds the `planned_attempts` the run planned (given `attempts`, each task's attempt
    numbers), and none was left ungraded by the run (only a dataset defect may leave a task
    ungraded). `reasons` says in words why a run is partial."""
    chosen = normal_filters(filters)
    nonstandard = _size_problem(split, revision, split_tasks)
    shortfalls = (
        attempt_shortfalls(planned_attempts, attempts)
        if planned_attempts is not None and attempts is not None
        else []
    )
    complete = (
        split_tasks is not None
        and finished
        and n_tasks == split_tasks
        and nonstandard is None
        and n_left_ungraded == 0
        and not shortfalls
    )
    reasons: list[str] = []
    if not complete:
        if split_tasks is None:
            reasons.append(
                "the run did not record its split's size (it predates coverage records), so "
                "nothing shows it covered the whole split"
            )
        elif n_tasks != split_tasks:
            reasons.append(f"{n_tasks} of the split's {split_tasks} tasks have a result")
        if nonstandard is not None:
            reasons.append(nonstandard)
        reasons += shortfalls
        if n_left_ungraded:
            why = ", ".join(f"{k} {v}" for k, v in sorted((left_ungraded_by_reason or {}).items()))
            # What re-runs those samples: the framework's record says; a name this package
            # does not know gets the record's default (the dataclass field's, on the class).
            known = framework_of(framework)
            retry = known.retry_hint if known is not None else Framework.retry_hint
            reasons.append(
                f"{n_left_ungraded} task(s) left ungraded by the run ({why}), counted as 0: "
                f"re-run them ({retry})"
            )
        for name, names in filter_items(chosen):
            if names:
                reasons.append(f"filtered by {name}={_listing(names)}")
        if limit is not None:
            shown = str(limit) if isinstance(limit, int | float) else "-".join(map(str, limit))
            reasons.append(f"limited with --limit {shown}")
        if sample_ids:
            reasons.append(f"restricted to --sample-id {_listing(list(sample_ids))}")
        if not finished:
            reasons.append("the run did not finish")
    return {
        "complete": complete,
        "split_tasks": split_tasks,
        "nonstandard": nonstandard is not None,
        "n_selected": n_selected,
        "n_tasks": n_tasks,
        "n_left_ungraded": n_left_ungraded,
        "filters": chosen,
        "limit": limit if limit is None or isinstance(limit, int | float) else list(limit),
        "sample_ids": [str(s) for s in sample_ids] if sample_ids else None,
        "finished": finished,
        "reasons": reasons,
    }


def combined_coverage(per_run: Sequence[RunCoverage], n_tasks: int) -> Coverage:
    """The submission's coverage: complete only when every run is; its reasons name the run."""
    sizes = sorted({c["split_tasks"] for c in per_run if c["split_tasks"] is not None})
    reasons: list[str] = []
    for index, coverage in enumerate(per_run):
        prefix = f"run {index}: " if len(per_run) > 1 else ""
        reasons += [prefix + reason for reason in coverage["reasons"]]
    if len(sizes) > 1:
        reasons.append(f"the runs record different split sizes {sizes}")
    return {
        "complete": all(c["complete"] for c in per_run) and len(sizes) == 1,
        "split_tasks": sizes[0] if len(sizes) == 1 else None,
        "nonstandard": any(c["nonstandard"] for c in per_run),
        "n_tasks": n_tasks,
        "reasons": reasons,
    }


def coverage_phrase(coverage: Coverage) -> str:
    """One line for people: 'complete: all 250 tasks of the split' or 'PARTIAL: <reasons>'."""
    if coverage["complete"]:
        return f"complete: all {coverage['split_tasks']} tasks of the split"
    return "PARTIAL: " + "; ".join(coverage["reasons"])
