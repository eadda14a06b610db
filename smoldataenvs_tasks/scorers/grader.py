"""The SmolDataEnvs grader ladder: a drop-in for the dataset's own `grader.grade`.

Pure: imports neither inspect_ai nor lm_eval. The first five rungs run in-process; the symbolic
rung (math-verify) runs in a small pool of worker processes with a hard deadline
(`scorers/symbolic.py`), so `grade` is safe from threads and from asyncio code via
`asyncio.to_thread`.

    python -c "from smoldataenvs_tasks import grade; print(grade('45%', '0.45'))"
    smoldataenvs grade 5768.04 5768 --mode numeric --atol 0.05 --rtol 0.01

The ladder (first match wins; docs/design.md "The grader ladder"):

1. `miss`: the gold or the candidate is None or blank.
2. `exact`: lowercased, stripped, inner whitespace collapsed; punctuation counts.
3. `numeric`: when `reward_mode` is `numeric`/`flexible` or the gold is a clean number; each side
   is its first number after removing commas; `|g-c| <= abs_tol` or `|g-c|/max(|g|,1e-9) <= rel_tol`.
   `numeric_scaled`: exactly one side strictly inside (0, 1) in absolute value and the other
   >= 1 → retry with the candidate ×100 and ÷100 (the upstream percent bridge, kept for parity).
4. `list`: when `reward_mode` is `list`/`list_csv` or both sides contain a comma; in order, then
   both sides sorted case-insensitively; items match by normalised text or first numbers.
5. `math_verify`: `verify(parse(gold), parse(candidate))`; a timeout is `math_verify_timeout`.
6. otherwise `miss`.

Input coercion (documented choices, none of which changes a verdict for well-formed rows):
non-string gold/candidate values are read with `str()`; a tolerance that is None, NaN, negative
or not a number counts as 0.0 (WAI-env passes `float(row.get("atol") or 0.0)`; a NaN or negative
tolerance could only reject equal numbers). A `reward_mode` outside the known list (docs/design.md "Where data comes from") warns
once per mode and is graded by the generic ladder, as upstream does.
"""

from __future__ import annotations

import math
import re
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from smoldataenvs_tasks._pins import KNOWN_REWARD_MODES
from smoldataenvs_tasks.scorers import symbolic

__all__ = ["METHODS", "GradeResult", "clear_memo", "grade", "memo_info"]

# Every `method` string `grade` can return.
METHODS = (
    "exact",
    "numeric",
    "numeric_scaled",
    "list",
    "math_verify",
    "math_verify_timeout",
    "miss",
)


@dataclass(frozen=True)
class GradeResult:
    reward: float
    method: str


_NUMERIC_MODES = frozenset({"numeric", "flexible"})
_LIST_MODES = frozenset({"list", "list_csv"})
_KNOWN_MODES = frozenset(KNOWN_REWARD_MODES)

# A "clean number" gold (after stripping and removing %, $ and commas) turns the numeric rung on
# in every mode. `[.,]` keeps upstream's pattern even though commas are already gone.
_CLEAN_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")
# The first number of a side, read after removing every comma: sign, decimals, exponent.
_FIRST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

_MISS = GradeResult(0.0, "miss")
_EXACT = GradeResult(1.0, "exact")
_NUMERIC = GradeResult(1.0, "numeric")
_NUMERIC_SCALED = GradeResult(1.0, "numeric_scaled")
_LIST = GradeResult(1.0, "list")
_MATH_VERIFY = GradeResult(1.0, "math_verify")
_MATH_VERIFY_TIMEOUT = GradeResult(0.0, "math_verify_timeout")


def grade(
    gold: Any,
    candidate: Any,
    *,
    reward_mode: Any = "",
    rel_tol: Any = 1e-3,
    abs_tol: Any = 1e-3,
    **ignored: Any,
) -> GradeResult:
    """Grade one candidate answer against the gold, exactly as the dataset's grader does.

    `ignored` absorbs upstream's unused keywords (`question`, `judge`, `judge_model`, ...).
    Returns reward 1.0 or 0.0 for any input. Raises only `symbolic.SymbolicUnavailableError`
    when the symbolic rung's worker processes cannot start at all (an infrastructure failure,
    which callers above this layer record as ungraded, never as 0).
    """
    gold = _as_text(gold)
    candidate = _as_text(candidate)
    mode = "" if reward_mode is None else str(reward_mode)
    if mode not in _KNOWN_MODES:
        _warn_unknown_mode(mode)
    rel = _tolerance(rel_tol)
    abs_ = _tolerance(abs_tol)
    if gold is None or candidate is None:
        return _MISS

    key = (gold, candidate, mode, rel, abs_)
    cacheable = len(gold) + len(candidate) <= _MEMO_MAX_KEY_CHARS
    if cacheable:
        hit = _memo_get(key)
        if hit is not None:
            return hit
    result = _ladder(gold, candidate, mode, rel, abs_)
    # A timeout says nothing about the pair (a retry on a quieter machine may finish), so it is
    # never remembered.
    if cacheable and result is not _MATH_VERIFY_TIMEOUT:
        _memo_put(key, result)
    return result


def _ladder(gold: str, candidate: str, mode: str, rel: float, abs_: float) -> GradeResult:
    gold_stripped = gold.strip()
    cand_stripped = candidate.strip()
    if not gold_stripped or not cand_stripped:
        return _MISS

    gold_norm = _normalise(gold_stripped)
    if gold_norm == _normalise(cand_stripped):
        return _EXACT

    if mode in _NUMERIC_MODES or _is_clean_number(gold_stripped):
        g = _first_number(gold)
        c = _first_number(candidate)
        if g is not None and c is not None:
            if _close(g, c, rel, abs_):
                return _NUMERIC
            if _one_side_fractional(g, c) and (
                _close(g, c * 100, rel, abs_) or _close(g, c / 100, rel, abs_)
            ):
                return _NUMERIC_SCALED

    if mode in _LIST_MODES or ("," in gold and "," in candidate):
        if _lists_match(gold, candidate, rel, abs_):
            return _LIST

    outcome = symbolic.verify(gold, candidate)
    if outcome is symbolic.Outcome.MATCH:
        return _MATH_VERIFY
    if outcome is symbolic.Outcome.TIMEOUT:
        return _MATH_VERIFY_TIMEOUT
    return _MISS


def _normalise(text: str) -> str:
    # str.split() and re's \s agree on what whitespace is (str.isspace), so this equals
    # re.sub(r"\s+", " ", text.strip().lower()) and is several times faster.
    return " ".join(text.lower().split())


def _is_clean_number(stripped: str) -> bool:
    return (
        _CLEAN_NUMBER.fullmatch(stripped.replace("%", "").replace("$", "").replace(",", ""))
        is not None
    )


def _first_number(text: str) -> float | None:
    match = _FIRST_NUMBER.search(text.replace(",", "") if "," in text else text)
    if match is None:
        return None
    try:
        return float(match.group())
    except ValueError:  # pragma: no cover - \d digits float() rejects; none known in Python 3.11
        return None


def _close(g: float, c: float, rel: float, abs_: float) -> bool:
    diff = abs(g - c)
    return diff <= abs_ or diff / max(abs(g), 1e-9) <= rel


def _one_side_fractional(g: float, c: float) -> bool:
    g_frac = 0.0 < abs(g) < 1.0
    c_frac = 0.0 < abs(c) < 1.0
    return (g_frac and abs(c) >= 1.0) or (c_frac and abs(g) >= 1.0)


def _lists_match(gold: str, candidate: str, rel: float, abs_: float) -> bool:
    gold_items = [item for item in (part.strip() for part in gold.split(",")) if item]
    cand_items = [item for item in (part.strip() for part in candidate.split(",")) if item]
    if len(gold_items) < 2 or len(gold_items) != len(cand_items):
        return False
    if _items_match(gold_items, cand_items, rel, abs_):
        return True
    return _items_match(
        sorted(gold_items, key=str.lower), sorted(cand_items, key=str.lower), rel, abs_
    )


def _items_match(gold_items: list[str], cand_items: list[str], rel: float, abs_: float) -> bool:
    for g_item, c_item in zip(gold_items, cand_items, strict=True):
        if _normalise(g_item) == _normalise(c_item):
            continue
        g = _first_number(g_item)
        c = _first_number(c_item)
        if g is None or c is None or not _close(g, c, rel, abs_):
            return False
    return True


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _tolerance(value: Any) -> float:
    if value is None:
        return 0.0
    try:
        tol = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    if math.isnan(tol) or tol < 0.0:
        return 0.0
    return tol


_warned_modes: set[str] = set()
_warn_lock = threading.Lock()


def _warn_unknown_mode(mode: str) -> None:
    with _warn_lock:
        if mode in _warned_modes:
            return
        _warned_modes.add(mode)
    warnings.warn(
        f"unknown reward_mode {mode!r}: grading it with the generic ladder "
        f"(known modes: {', '.join(repr(m) for m in KNOWN_REWARD_MODES)})",
        UserWarning,
        stacklevel=3,
    )


# --- memo: RL samples the same answer many times; the symbolic rung costs a process round trip.
_MEMO_MAX_ENTRIES = 65_536
# Very long strings are rare and cost memory to keep; they are graded afresh every time.
_MEMO_MAX_KEY_CHARS = 4_096
_memo: OrderedDict[tuple[str, str, str, float, float], GradeResult] = OrderedDict()
_memo_lock = threading.Lock()
_memo_stats = {"hits": 0, "misses": 0}


def _memo_get(key: tuple[str, str, str, float, float]) -> GradeResult | None:
    with _memo_lock:
        result = _memo.get(key)
        if result is None:
            _memo_stats["misses"] += 1
            return None
        _memo.move_to_end(key)
        _memo_stats["hits"] += 1
        return result


def _memo_put(key: tuple[str, str, str, float, float], result: GradeResult) -> None:
    with _memo_lock:
        _memo[key] = result
        if len(_memo) > _MEMO_MAX_ENTRIES:
            _memo.popitem(last=False)


def clear_memo() -> None:
    """Forget every remembered grade (benchmarks and tests start cold with this)."""
    with _memo_lock:
        _memo.clear()
        _memo_stats["hits"] = 0
        _memo_stats["misses"] = 0


def memo_info() -> dict[str, int]:
    """Hits, misses, current size and bound of the grade memo."""
    with _memo_lock:
        return {**_memo_stats, "size": len(_memo), "max_entries": _MEMO_MAX_ENTRIES}
