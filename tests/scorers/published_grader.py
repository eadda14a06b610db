"""The published grader, restated: the oracle our `default` profile is held to.

The dataset's own `grader.py` (FineEnvs/SmolDataEnvs at revision b2bf356) cannot be fetched in
tests, so this is an independent, deliberately plain restatement of its documented ladder —
written from its semantics, sharing no code with `smoldataenvs_tasks.scorers`. Where the
published grader would do something odd, so does this (that is the point). Its two patterns
are compiled once, as the original's are, so that it also runs at the original's speed:
`bench/bench_grader.py --published-grader` prints the ratio (0.9-1.1x); figures against it are
figures against the original.

    python -c "from tests.scorers.published_grader import published_grade as g; print(g('65 %', '65.0'))"

The ladder, first match wins:

1. `miss` when the gold is empty ("" only: a whitespace-only gold goes on) or the candidate None.
2. `exact`: both sides lowercased, stripped, whitespace runs collapsed to one space.
3. numeric, when the mode is numeric/flexible or the gold is a clean number (strip, strip `%`/`$`
   from both ends, strip, remove commas; then the whole of it is `-?\\d+([.,]\\d+)?([eE][-+]?\\d+)?`).
   Each side's first match of that pattern after removing every comma is its number. `numeric` when
   `|g-c| <= abs_tol` or `|g-c| / max(|g|, 1e-9) <= rel_tol`; else, when one side is strictly
   inside (0, 1) in absolute value and the other is at least 1, `numeric_scaled` when c×100 or
   c/100 passes that test.
4. `list`, when the mode is list/list_csv or both sides hold a comma: split on commas, strip, drop
   empty items; at least two gold items and as many candidate items; every pair of items equal
   after normalising or (both having a number) close; tried in order, then with both sides sorted
   by their lowercased text.
5. `math_verify`: `verify(parse(gold), parse(candidate), timeout_seconds=5)`; any exception is no.
6. `miss`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")


def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _number_in(text: str) -> float | None:
    found = _NUMBER.search(text.replace(",", ""))
    if not found:
        return None
    try:
        return float(found.group(0))
    except ValueError:
        return None


def _clean_number(text: str) -> bool:
    return _NUMBER.fullmatch(text.strip().strip("%$").strip().replace(",", "")) is not None


def _within(g: float, c: float, abs_tol: float, rel_tol: float) -> bool:
    return abs(g - c) <= abs_tol or abs(g - c) / max(abs(g), 1e-9) <= rel_tol


def _items_agree(a: str, b: str, abs_tol: float, rel_tol: float) -> bool:
    if _normalised(a) == _normalised(b):
        return True
    x, y = _number_in(a), _number_in(b)
    return x is not None and y is not None and _within(x, y, abs_tol, rel_tol)


def _list_agrees(gold: str, candidate: str, abs_tol: float, rel_tol: float) -> bool:
    gold_items = [part.strip() for part in gold.split(",") if part.strip()]
    cand_items = [part.strip() for part in candidate.split(",") if part.strip()]
    if len(gold_items) < 2 or len(cand_items) != len(gold_items):
        return False
    for left, right in (
        (gold_items, cand_items),
        (sorted(gold_items, key=str.lower), sorted(cand_items, key=str.lower)),
    ):
        if all(_items_agree(a, b, abs_tol, rel_tol) for a, b in zip(left, right, strict=True)):
            return True
    return False


def math_verify_agrees(gold: str, candidate: str) -> bool:
    """math-verify 0.9.0 in this process and thread, exactly as the published grader calls it."""
    try:
        from math_verify import parse, verify

        return bool(verify(parse(gold), parse(candidate), timeout_seconds=5))
    except Exception:
        return False


@cache
def _parsed(text: str) -> list:
    from math_verify import parse

    return parse(text)


@cache
def remembered_math_verify(gold: str, candidate: str) -> bool:
    """`math_verify_agrees`, remembered per pair and parsing each distinct string once (the
    differential test grades thousands of pairs that share their strings)."""
    try:
        from math_verify import verify

        return bool(verify(_parsed(gold), _parsed(candidate), timeout_seconds=5))
    except Exception:
        return False


def published_grade(
    gold: str | None,
    candidate: str | None,
    *,
    reward_mode: str = "",
    rel_tol: float = 1e-3,
    abs_tol: float = 1e-3,
    symbolic: Callable[[str, str], bool] = math_verify_agrees,
) -> tuple[float, str]:
    """(reward, method) as the published grader returns them, for string inputs.

    `symbolic` is the last rung: math-verify in this process, as upstream calls it.
    """
    if not gold or candidate is None:
        return 0.0, "miss"
    if _normalised(gold) == _normalised(candidate):
        return 1.0, "exact"
    if reward_mode in ("numeric", "flexible") or _clean_number(gold):
        g, c = _number_in(gold), _number_in(candidate)
        if g is not None and c is not None:
            if _within(g, c, abs_tol, rel_tol):
                return 1.0, "numeric"
            one_side_fraction = (0 < abs(g) < 1 <= abs(c)) or (0 < abs(c) < 1 <= abs(g))
            if one_side_fraction and (
                _within(g, c * 100, abs_tol, rel_tol) or _within(g, c / 100, abs_tol, rel_tol)
            ):
                return 1.0, "numeric_scaled"
    if reward_mode in ("list", "list_csv") or ("," in gold and "," in candidate):
        if _list_agrees(gold, candidate, abs_tol, rel_tol):
            return 1.0, "list"
    if symbolic(gold, candidate):
        return 1.0, "math_verify"
    return 0.0, "miss"
