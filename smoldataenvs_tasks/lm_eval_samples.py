"""How a line of lm-eval's samples file holds our task's verdicts: read by the results loaders
(`results/load/load_lm_eval.py`, re-execution) and by `smoldataenvs regrade` (`lm_eval/regrade.py`).

Those two are sibling rooms that may not import each other, and the file's shape is lm-eval's, not
either room's, so its one reading sits below both. Plain JSON values in and out: no lm_eval import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError


class SamplesFileError(SmolDataEnvsError, ValueError):
    """An lm-eval output file that cannot be read; the message names the file and the line."""


def read_samples_file(path: Path) -> list[dict[str, Any]]:
    """The JSON object on each line of an lm-eval JSONL file (`samples_*`, or an older
    `verdicts_*`), blank lines skipped. A line that is not one JSON object, NaN or Infinity
    (which lm-eval never writes for our tasks and a submission may not hold), undecodable text
    or an unreadable file is one SamplesFileError naming the file and the line."""
    rows = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                row = json_value(line, f"{path.name}:{number}")
                if not isinstance(row, dict):
                    raise SamplesFileError(f"{path.name}:{number}: not a JSON object")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise SamplesFileError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SamplesFileError(f"{path.name}: cannot be read: {exc.strerror or exc}") from None
    return rows


def json_value(text: str, where: str) -> Any:
    """One JSON value of an lm-eval output, NaN and Infinity refused; SamplesFileError says
    `where` and why."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise SamplesFileError(f"{where}: not JSON: {exc}") from None
    except RecursionError:
        raise SamplesFileError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:  # NaN / Infinity, refused by _no_constant
        raise SamplesFileError(f"{where}: {exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def doc_column(key: str) -> str:
    """The doc column a run-level record is stored in (`_run`, `_task_protocol`): its key with a
    `_` before it, which no dataset column has, so the hooks strip every such column before a
    doc is read back as a task row."""
    return f"_{key}"


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
