"""The shape of a `submission.json` (format 3), checked before anything reads it.

`verify` and `leaderboard` receive files from people they do not know: every field a computation
reads is checked here for its type first, so a malformed file is one line naming the field
(`runs[0].coverage.filters.tiers: expected a list of text or null, found [1]`), never a
traceback deep in a computation. Figures (`pass@1`, `failures`, ...) need only be JSON here:
`verify` recomputes them from the inputs checked below and compares.

    from smoldataenvs_tasks.results.schema import check_submission
    check_submission(json.loads(Path("submission.json").read_text()))  # or SubmissionFormatError
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from smoldataenvs_tasks.results.runs import RunLoadError

# A check returns None when the value fits, else the words for what was expected.
Check = Callable[[Any, str], None]


class SubmissionFormatError(RunLoadError):
    """A submission.json that is not of the expected shape; the message names the field."""


def _found(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(path: str, wanted: str, value: Any) -> SubmissionFormatError:
    return SubmissionFormatError(f"{path}: expected {wanted}, found {_found(value)}")


def text(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "text", value)


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise _fail(path, "true or false", value)


def count(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(path, "a whole number >= 0", value)


def positive(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(path, "a whole number >= 1", value)


def number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, "a finite number", value)


def reward(value: Any, path: str) -> None:
    if value is not None and (isinstance(value, bool) or value not in (0, 1)):
        raise _fail(path, "a reward (1, 0 or null)", value)


def json_value(value: Any, path: str) -> None:
    """Anything JSON can hold (the reader already refused NaN, infinities and deep nesting)."""


def optional(check: Check) -> Check:
    def run(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)

    return run


def list_of(check: Check, words: str) -> Check:
    def run(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _fail(path, words, value)
        for index, item in enumerate(value):
            check(item, f"{path}[{index}]")

    return run


def non_empty(check: Check, words: str) -> Check:
    def run(value: Any, path: str) -> None:
        check(value, path)
        if not value:
            raise _fail(path, words, value)

    return run


def map_of(check: Check, words: str) -> Check:
    def run(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _fail(path, words, value)
        for key, item in value.items():
            check(item, f"{path}.{key}")

    return run


def one_or_many(check: Check, words: str) -> Check:
    """A value, or a list of them (a submission's field when its runs differ)."""

    def run(value: Any, path: str) -> None:
        if isinstance(value, list):
            list_of(check, words)(value, path)
        else:
            check(value, path)

    return run


def obj(fields: dict[str, Check], *, words: str = "an object") -> Check:
    """An object holding at least `fields` (more keys are left to the figures' comparison)."""

    def run(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _fail(path, words, value)
        for key, check in fields.items():
            where = f"{path}.{key}" if path else key
            if key not in value:
                raise SubmissionFormatError(f"{where}: missing")
            check(value[key], where)

    return run


def _limit(value: Any, path: str) -> None:
    if value is None:
        return
    if isinstance(value, list):
        if len(value) != 2:
            raise _fail(path, "a --limit (N, [start, end] or a fraction)", value)
        list_of(count, "two whole numbers")(value, path)
        return
    number(value, path)
    if value < 0:
        raise _fail(path, "a --limit >= 0", value)


_NAMES = optional(list_of(text, "a list of text or null"))
_FILTERS = obj({"tiers": _NAMES, "reward_modes": _NAMES, "task_ids": _NAMES})
_COVERAGE_INPUTS = obj(
    {
        "split_tasks": optional(count),
        "filters": _FILTERS,
        "n_selected": optional(count),
        "limit": _limit,
        "sample_ids": _NAMES,
        "finished": boolean,
    }
)
_RUN = obj(
    {
        "source": text,
        "framework": text,
        "framework_version": optional(text),
        "model": text,
        "task": text,
        "run_id": optional(text),
        "created": optional(text),
        "sandbox": optional(text),
        "epochs": positive,
        "coverage": _COVERAGE_INPUTS,
    }
)
_DIGESTS = optional(map_of(text, "a map of table names to sha256 digests"))
_ATTEMPT = obj(
    {
        "run": count,
        "epoch": positive,
        "reward": reward,
        "category": text,
        "detail": optional(text),
        "method": text,
        "prediction": optional(text),
        "by_grader": map_of(reward, "a map of grader profiles to rewards"),
        "table_sha256": _DIGESTS,
    }
)
_TASK = obj(
    {
        "task_id": text,
        "difficulty_tier": text,
        "reward_mode": text,
        "table_in_train": optional(boolean),
        "attempts": non_empty(list_of(_ATTEMPT, "a list of attempts"), "at least one attempt"),
    }
)
_SETTINGS = map_of(json_value, "an object of protocol settings")
_TRAIN_TABLES = obj({"available": boolean, "note": optional(text)})
SUBMISSION = obj(
    {
        "format": text,
        "benchmark": text,
        "model": text,
        "model_ids": list_of(text, "a list of model names"),
        "framework": one_or_many(text, "a framework or a list of them"),
        "versions": map_of(text, "an object of package versions"),
        "report_generator": map_of(optional(text), "an object of package versions"),
        "variant": text,
        "protocol": text,
        "split": text,
        "dataset": optional(text),
        "dataset_revision": optional(text),
        "tables_manifest_digest": optional(one_or_many(text, "a digest or a list of them")),
        "grader_version": optional(text),
        "grader_profile": text,
        "sandbox": optional(one_or_many(text, "a sandbox kind or a list of them")),
        "epochs": optional(one_or_many(positive, "a number of epochs or a list of them")),
        "sampling": map_of(json_value, "an object"),
        "protocol_settings": _SETTINGS,
        "split_sha256": optional(one_or_many(text, "a digest or a list of them")),
        "train_tables": _TRAIN_TABLES,
        "runs": list_of(_RUN, "a list of runs"),
        "tasks": list_of(_TASK, "a list of tasks"),
        "sha256": optional(text),
    },
    words="a submission (a JSON object)",
)


def check_submission(data: Any) -> None:
    """Raise SubmissionFormatError naming the first field that is not of the expected shape."""
    SUBMISSION(data, "")


def parse_json(raw: str, where: str) -> Any:
    """JSON as a submission may hold it: no NaN, no infinities (1e309 is one), no nesting
    deeper than Python can walk; each refusal one SubmissionFormatError naming `where`."""

    def finite(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ValueError(f"the number {literal[:40]} is out of range")
        return value

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(raw, parse_float=finite, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise SubmissionFormatError(f"{where}: not JSON: {exc}") from None
    except RecursionError:
        raise SubmissionFormatError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        raise SubmissionFormatError(f"{where}: {exc}") from None
