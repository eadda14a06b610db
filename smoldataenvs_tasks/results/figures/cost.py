"""What a submission cost: tokens, time and, with a price table the user passes, dollars.

Tokens and time are read from what the frameworks recorded, per attempt (results/load/usage.py), so
`verify --logs` compares them with the logs like every outcome, and the totals are figures it
recomputes:

- Inspect: each sample's `model_usage` (input and output tokens summed over every model the
  sample called), `total_time` and `working_time`; the run's wall time from the log's stats
  (`started_at` to `completed_at`);
- lm-eval: no per-sample token count is recorded (its samples hold the replies, not the usage),
  so tokens are "not recorded"; the run's wall time is `total_evaluation_time_seconds`.

A price table (`report --prices FILE`, JSON or YAML) maps model ids to USD per million input
and output tokens:

    {"openai/gpt-4.1-mini": {"input_usd_per_mtok": 0.4, "output_usd_per_mtok": 1.6}}

The submission records the entries of its own models (`prices`), so the dollars are recomputed
from the file alone; a model with no entry, or attempts with no token count, leave `usd` null
with the reason in `usd_note`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.results.figures.task_outcomes import TaskOutcomes
from smoldataenvs_tasks.results.model.schema import AttemptUsage, Cost, ModelPrice, RunRecord
from smoldataenvs_tasks.results.model.stated_files import read_json_or_yaml

PRICE_KEYS = ("input_usd_per_mtok", "output_usd_per_mtok")
TOKENS_PER_PRICE_UNIT = 1_000_000


class PriceTableError(SmolDataEnvsError, ValueError):
    """A price table that cannot be read or is not of the expected shape; one line."""


# -- the price table ---------------------------------------------------------------------------
def read_prices(path: str | Path) -> dict[str, ModelPrice]:
    """A price table from a JSON or YAML file: {model id: {input_usd_per_mtok,
    output_usd_per_mtok}}; PriceTableError (one line naming the entry) when it is not one."""
    path = Path(path)
    data = read_json_or_yaml(path, "price table", PriceTableError)
    if not isinstance(data, dict) or not data:
        raise PriceTableError(f"{path}: expected a map of model ids to {{{', '.join(PRICE_KEYS)}}}")
    prices: dict[str, ModelPrice] = {}
    for model, entry in data.items():
        where = f"{path}: {str(model)[:80]}"
        if not isinstance(model, str) or not model:
            raise PriceTableError(f"{where}: a model id must be text")
        if not isinstance(entry, dict):
            raise PriceTableError(f"{where}: expected {{{', '.join(PRICE_KEYS)}}}")
        unknown = sorted(str(key) for key in entry if key not in PRICE_KEYS)
        if unknown:
            raise PriceTableError(f"{where}: unknown field {unknown[0][:40]!r}")
        values = []
        for key in PRICE_KEYS:
            value = entry.get(key)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise PriceTableError(f"{where}: {key} must be a number >= 0 (USD per 1M tokens)")
            values.append(float(value))
        prices[model] = {"input_usd_per_mtok": values[0], "output_usd_per_mtok": values[1]}
    return prices


def prices_for(prices: Mapping[str, ModelPrice], model_ids: Sequence[str]) -> dict[str, ModelPrice]:
    """The entries of a price table a submission of these models records."""
    return {
        model: {
            "input_usd_per_mtok": prices[model]["input_usd_per_mtok"],
            "output_usd_per_mtok": prices[model]["output_usd_per_mtok"],
        }
        for model in sorted(set(model_ids))
        if model in prices
    }


# -- the figure --------------------------------------------------------------------------------
def _sum(values: Sequence[Any]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def cost_figure(
    records: Sequence[RunRecord],
    tasks: Sequence[TaskOutcomes],
    prices: Mapping[str, ModelPrice] | None,
) -> Cost:
    """Tokens and time over every attempt and run, and the dollars they cost at `prices`."""
    attempts = [a for task in tasks for a in task.attempts]
    usages = [a.usage for a in attempts if a.usage is not None]
    with_tokens = [
        (a.run, u) for a in attempts if (u := a.usage) is not None and u["input_tokens"] is not None
    ]
    input_tokens = _sum([u["input_tokens"] for _, u in with_tokens])
    output_tokens = _sum([u["output_tokens"] for _, u in with_tokens])
    usd, note = _dollars(records, with_tokens, len(attempts), prices)
    sample_seconds = _sum([u["total_seconds"] for u in usages])
    working_seconds = _sum([u["working_seconds"] for u in usages])
    wall_seconds = _sum([r.get("wall_seconds") for r in records])
    return {
        "n_attempts": len(attempts),
        "n_attempts_with_tokens": len(with_tokens),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "sample_seconds": None if sample_seconds is None else round(sample_seconds, 3),
        "working_seconds": None if working_seconds is None else round(working_seconds, 3),
        "wall_seconds": None if wall_seconds is None else round(wall_seconds, 3),
        "usd": usd,
        "usd_note": note,
    }


def _dollars(
    records: Sequence[RunRecord],
    with_tokens: Sequence[tuple[int, AttemptUsage]],
    n_attempts: int,
    prices: Mapping[str, ModelPrice] | None,
) -> tuple[float | None, str]:
    if prices is None:
        return None, "no price table (report --prices FILE)"
    if not with_tokens:
        return None, "no attempt recorded its tokens"
    missing = sorted({r["model"] for r in records if r["model"] not in prices})
    if missing:
        return None, f"no price for {', '.join(missing)}"
    total = 0.0
    for run, usage in with_tokens:
        price = prices[records[run]["model"]]
        total += (usage["input_tokens"] or 0) * price["input_usd_per_mtok"]
        total += (usage["output_tokens"] or 0) * price["output_usd_per_mtok"]
    note = "the price table's USD per 1M input and output tokens"
    if len(with_tokens) < n_attempts:
        note += f"; {n_attempts - len(with_tokens)} attempt(s) without tokens not counted"
    return round(total / TOKENS_PER_PRICE_UNIT, 6), note


def cost_phrase(cost: Cost) -> str:
    """The cost in one line, for report.md and the command line."""
    if cost["input_tokens"] is None:
        tokens = "tokens not recorded"
    else:
        tokens = (
            f"{cost['input_tokens']:,} input + {cost['output_tokens'] or 0:,} output tokens"
            f" ({cost['n_attempts_with_tokens']} of {cost['n_attempts']} attempts)"
        )
    times = []
    if cost["wall_seconds"] is not None:
        times.append(f"wall {cost['wall_seconds']:,.1f} s")
    if cost["sample_seconds"] is not None:
        times.append(f"samples {cost['sample_seconds']:,.1f} s")
    if cost["working_seconds"] is not None:
        times.append(f"working {cost['working_seconds']:,.1f} s")
    dollars = (
        f"${cost['usd']:,.4f}" if cost["usd"] is not None else f"cost n/a ({cost['usd_note']})"
    )
    return "; ".join([tokens, *(times or ["time not recorded"]), dollars])


def _number(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "not recorded"
    return f"{value:,}{unit}" if isinstance(value, int) else f"{value:,.1f}{unit}"


def cost_rows(cost: Cost) -> list[list[str]]:
    """report.md's cost table: (what, how much)."""
    usd = "—" if cost["usd"] is None else f"${cost['usd']:,.4f}"
    return [
        ["input tokens", _number(cost["input_tokens"])],
        ["output tokens", _number(cost["output_tokens"])],
        [
            "attempts with a token count",
            f"{cost['n_attempts_with_tokens']} of {cost['n_attempts']}",
        ],
        ["wall time of the runs", _number(cost["wall_seconds"], " s")],
        ["samples' clock time (sum)", _number(cost["sample_seconds"], " s")],
        ["samples' working time (sum)", _number(cost["working_seconds"], " s")],
        ["cost (USD)", f"{usd} ({cost['usd_note']})"],
    ]


def tokens_text(cost: Cost | None) -> str:
    """Input / output tokens as a table cell."""
    if cost is None or cost["input_tokens"] is None:
        return "not recorded"
    return f"{cost['input_tokens']:,} / {cost['output_tokens'] or 0:,}"


def usd_text(cost: Cost | None) -> str:
    """The cost in USD as a table cell ("—" without one)."""
    if cost is None or cost["usd"] is None:
        return "—"
    return f"${cost['usd']:,.4f}"


def wall_text(cost: Cost | None) -> str:
    if cost is None or cost["wall_seconds"] is None:
        return "—"
    return f"{cost['wall_seconds']:,.0f} s"
