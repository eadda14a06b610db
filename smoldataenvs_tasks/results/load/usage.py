"""Tokens and time as the frameworks recorded them, read once per attempt and run by the loaders
(the cost figure that totals them is results/figures/cost.py)."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from smoldataenvs_tasks.results.model.schema import AttemptUsage


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return round(float(value), 3)


def inspect_usage(sample: Any) -> AttemptUsage | None:
    """One Inspect sample's tokens (summed over the models it called) and times; None when the
    sample recorded neither (a log written without usage, a sample that never called a model)."""
    usages = getattr(sample, "model_usage", None) or {}
    inputs = [_count(getattr(u, "input_tokens", None)) for u in usages.values()]
    outputs = [_count(getattr(u, "output_tokens", None)) for u in usages.values()]
    usage: AttemptUsage = {
        "input_tokens": sum(v for v in inputs if v is not None) if usages else None,
        "output_tokens": sum(v for v in outputs if v is not None) if usages else None,
        "total_seconds": _seconds(getattr(sample, "total_time", None)),
        "working_seconds": _seconds(getattr(sample, "working_time", None)),
    }
    return usage if any(value is not None for value in usage.values()) else None


def _instant(text: Any) -> _dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=_dt.UTC)


def span_seconds(started: Any, completed: Any) -> float | None:
    """Seconds between two ISO times (Inspect's stats); None when either is missing or the
    span runs backwards."""
    start, end = _instant(started), _instant(completed)
    if start is None or end is None:
        return None
    return _seconds((end - start).total_seconds())


def recorded_seconds(value: Any) -> float | None:
    """A recorded duration (lm-eval's total_evaluation_time_seconds is a string of a float)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    return _seconds(value)
