"""How much of its split a run covered: the split's full size, the filters, the limit, and whether
every task of the split has a result (`complete`).

The split's size, the filters and the limit are recorded at run time (the Inspect task's metadata
and eval config; lm-eval's docs and results config), so a report never reads the data to know a
run was partial. A task with a result is covered even when ungraded: its infrastructure failure
is counted apart, it was not left out by a filter.

    from smoldataenvs_tasks.results.coverage import coverage_of
    coverage_of(split_tasks=250, n_tasks=3, limit=3)["complete"]   # False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FILTER_NAMES = ("tiers", "reward_modes", "task_ids")
_SHOWN_IDS = 5


def _listing(values: Sequence[Any]) -> str:
    shown = ",".join(str(v) if v != "" else '""' for v in values[:_SHOWN_IDS])
    more = f" (+{len(values) - _SHOWN_IDS} more)" if len(values) > _SHOWN_IDS else ""
    return shown + more


def normal_filters(filters: dict[str, Any] | None) -> dict[str, list[str] | None]:
    """Every filter name, each a list of strings or None (an empty list filters nothing)."""
    filters = filters or {}
    out: dict[str, list[str] | None] = {}
    for name in FILTER_NAMES:
        value = filters.get(name)
        if isinstance(value, str):
            value = [value]
        out[name] = [str(v) for v in value] if value else None
    return out


def coverage_of(
    *,
    split_tasks: int | None,
    n_tasks: int,
    filters: dict[str, Any] | None = None,
    n_selected: int | None = None,
    limit: Any = None,
    sample_ids: Sequence[Any] | None = None,
    finished: bool = True,
) -> dict[str, Any]:
    """One run's coverage. Complete means: the split's size is known, the run finished, and every
    task of the split has a result. `reasons` says in words why a run is partial."""
    filters = normal_filters(filters)
    complete = split_tasks is not None and finished and n_tasks == split_tasks
    reasons: list[str] = []
    if not complete:
        if split_tasks is None:
            reasons.append(
                "the run did not record its split's size (it predates coverage records), so "
                "nothing shows it covered the whole split"
            )
        else:
            reasons.append(f"{n_tasks} of the split's {split_tasks} tasks have a result")
        for name in FILTER_NAMES:
            if filters[name]:
                reasons.append(f"filtered by {name}={_listing(filters[name])}")
        if limit is not None:
            shown = "-".join(map(str, limit)) if isinstance(limit, list | tuple) else str(limit)
            reasons.append(f"limited with --limit {shown}")
        if sample_ids:
            reasons.append(f"restricted to --sample-id {_listing(list(sample_ids))}")
        if not finished:
            reasons.append("the run did not finish")
    return {
        "complete": complete,
        "split_tasks": split_tasks,
        "n_selected": n_selected,
        "n_tasks": n_tasks,
        "filters": filters,
        "limit": list(limit) if isinstance(limit, tuple) else limit,
        "sample_ids": [str(s) for s in sample_ids] if sample_ids else None,
        "finished": finished,
        "reasons": reasons,
    }


def combined_coverage(per_run: Sequence[dict[str, Any]], n_tasks: int) -> dict[str, Any]:
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
        "n_tasks": n_tasks,
        "reasons": reasons,
    }


def coverage_phrase(coverage: dict[str, Any]) -> str:
    """One line for people: 'complete: all 250 tasks of the split' or 'PARTIAL: <reasons>'."""
    if coverage["complete"]:
        return f"complete: all {coverage['split_tasks']} tasks of the split"
    return "PARTIAL: " + "; ".join(coverage["reasons"])
