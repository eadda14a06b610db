"""How a line of lm-eval's samples file holds our task's verdicts: read by the results loaders
(`results/load/load_lm_eval.py`, re-execution) and by `smoldataenvs regrade` (`lm_eval/regrade.py`).

Those two are sibling rooms that may not import each other, and the file's shape is lm-eval's, not
either room's, so its one reading sits below both. Plain JSON values in and out: no lm_eval import.
"""

from __future__ import annotations

from typing import Any

# The filter our task YAMLs name; lm-eval writes one line per doc per filter.
VERDICTS_FILTER = "verdicts"


def holds_verdicts(row: dict[str, Any]) -> bool:
    """Whether the line is our filter's (an older file without a `filter` key has only ours)."""
    return row.get("filter", VERDICTS_FILTER) == VERDICTS_FILTER


def samples_line_verdicts(row: dict[str, Any]) -> list[Any] | None:
    """The line's verdicts, one per reply: `filtered_resps` as a flat list (a single verdict is a
    string; pass@k tasks nest all K one level, [[v1, ..., vK]]); None when it is no list at all,
    which each reader reports in its own words."""
    filtered = row.get("filtered_resps")
    if isinstance(filtered, str):
        filtered = [filtered]
    if isinstance(filtered, list) and filtered and isinstance(filtered[0], list):
        filtered = filtered[0]
    return filtered if isinstance(filtered, list) else None


def samples_line_replies(row: dict[str, Any]) -> list[Any]:
    """The model's replies, one per repeat: `resps` is [[r1], [r2]] or [[r1, r2]], flattened."""
    resps = row.get("resps")
    if not isinstance(resps, list):
        return []
    flat: list[Any] = []
    for item in resps:
        flat.extend(item if isinstance(item, list) else [item])
    return flat
