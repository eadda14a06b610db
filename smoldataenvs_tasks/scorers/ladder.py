"""The grader ladder as data, and a plain reference ladder built from it.

`RUNGS` are the rungs as records (the method each returns, when it runs, what it accepts, and
under strict the veto that can refuse its acceptance); `STRICT_RULES` (`scorers/rules.py`) the
strict rules. `reference_grade` walks the records one by one, with none of the fast path's
memo, caches, shortcuts or settled refusals. `grade` (`scorers/grader.py`) is the fast path and
must give the same `GradeResult` on every pair under both profiles
(tests/scorers/test_ladder.py holds it to that on the corpora and on random text).

    python -c "from smoldataenvs_tasks.scorers.ladder import reference_grade as r; print(r('12', '12 or maybe 17', profile='strict'))"

The reference is slow by design; nothing on a grading path calls it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from smoldataenvs_tasks.scorers import strict, symbolic
from smoldataenvs_tasks.scorers.grader import GradeResult
from smoldataenvs_tasks.scorers.rules import STRICT_RULES, StrictRule

__all__ = ["RUNGS", "STRICT_RULES", "Pair", "Rung", "StrictRule", "reference_grade"]


class Pair(NamedTuple):
    gold: str
    candidate: str
    mode: str
    rel: float
    abs_: float


class Rung(NamedTuple):
    method: str  # what the rung returns when it accepts
    runs: str  # when it runs
    accepting: str  # what it accepts
    applies: Callable[[Pair], bool]
    accepts: Callable[[Pair], bool]
    # strict: the rule that refuses this rung's acceptance of the pair, or None
    veto: Callable[[Pair], str | None]


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CLEAN = re.compile(r"-?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")


def _normalised(text: str) -> str:
    return " ".join(text.lower().split())


def _first_number(text: str) -> float | None:
    found = _NUMBER.search(text.replace(",", ""))
    return None if found is None else float(found.group())


def _close(g: float, c: float, p: Pair) -> bool:
    return abs(g - c) <= p.abs_ or abs(g - c) / max(abs(g), 1e-9) <= p.rel


def _numeric_runs(p: Pair) -> bool:
    clean = _CLEAN.fullmatch(p.gold.strip().strip("%$").strip().replace(",", "")) is not None
    return (p.mode in ("numeric", "flexible") or clean) and (
        _first_number(p.gold) is not None and _first_number(p.candidate) is not None
    )


def _numbers(p: Pair) -> tuple[float, float]:
    g, c = _first_number(p.gold), _first_number(p.candidate)
    assert g is not None and c is not None  # `_numeric_runs` checked
    return g, c


def _numeric_accepts(p: Pair) -> bool:
    return _close(*_numbers(p), p)


def _scaled_accepts(p: Pair) -> bool:
    g, c = _numbers(p)
    one_side_fraction = (0 < abs(g) < 1 <= abs(c)) or (0 < abs(c) < 1 <= abs(g))
    return one_side_fraction and (_close(g, c * 100, p) or _close(g, c / 100, p))


def _numeric_veto(p: Pair) -> str | None:
    return strict.numeric_refusal(p.gold.strip(), p.candidate.strip(), False, p.rel, p.abs_)[0]


def _scaled_veto(p: Pair) -> str | None:
    return strict.numeric_refusal(p.gold.strip(), p.candidate.strip(), True, p.rel, p.abs_)[0]


def _items(side: str) -> list[str]:
    return [part.strip() for part in side.split(",") if part.strip()]


def _list_runs(p: Pair) -> bool:
    return p.mode in ("list", "list_csv") or ("," in p.gold and "," in p.candidate)


def _orders(p: Pair) -> list[list[tuple[str, str]]]:
    """The item pairs in the given order and with both sides sorted case-insensitively."""
    gold, cand = _items(p.gold), _items(p.candidate)
    if len(gold) < 2 or len(gold) != len(cand):
        return []
    in_order = list(zip(gold, cand, strict=True))
    by_text = list(zip(sorted(gold, key=str.lower), sorted(cand, key=str.lower), strict=True))
    return [in_order, by_text]


def _items_agree(g: str, c: str, p: Pair) -> bool:
    if _normalised(g) == _normalised(c):
        return True
    x, y = _first_number(g), _first_number(c)
    return x is not None and y is not None and _close(x, y, p)


def _list_accepts(p: Pair) -> bool:
    return any(all(_items_agree(g, c, p) for g, c in order) for order in _orders(p))


def _list_veto(p: Pair) -> str | None:
    for order in _orders(p):
        if all(
            _normalised(g) == _normalised(c)
            or (_items_agree(g, c, p) and strict.list_item_refusal(g, c, p.rel, p.abs_) is None)
            for g, c in order
        ):
            return None
    return "list_items"


def _always(_pair: Pair) -> bool:
    return True


def _scaled_runs(p: Pair) -> bool:
    # the ×100 bridge is tried only where the plain comparison did not accept
    return _numeric_runs(p) and not _numeric_accepts(p)


def _symbolic_accepts(p: Pair) -> bool:
    return symbolic.verify(p.gold, p.candidate) is symbolic.Outcome.MATCH


def _symbolic_veto(p: Pair) -> str | None:
    rule = strict.symbolic_refusal(p.gold.strip(), p.candidate.strip(), p.rel, p.abs_)
    return None if rule is None else str(rule)


RUNGS: tuple[Rung, ...] = (
    Rung(
        "exact",
        "always",
        "both sides lowercased, stripped, inner whitespace collapsed, equal (punctuation counts)",
        _always,
        lambda p: _normalised(p.gold) == _normalised(p.candidate),
        lambda _pair: None,  # strict never touches an exact match
    ),
    Rung(
        "numeric",
        "mode numeric/flexible or a clean-number gold, and a number on each side",
        "the first numbers (commas removed) within abs_tol or rel_tol",
        _numeric_runs,
        _numeric_accepts,
        _numeric_veto,
    ),
    Rung(
        "numeric_scaled",
        "as numeric, where numeric did not accept",
        "exactly one side strictly inside (0, 1), and the candidate's number x100 or /100 "
        "within tolerance",
        _scaled_runs,
        _scaled_accepts,
        _scaled_veto,
    ),
    Rung(
        "list",
        "mode list/list_csv or a comma on both sides",
        "at least two comma items, as many on each side, agreeing in order or both sorted",
        _list_runs,
        _list_accepts,
        _list_veto,
    ),
    Rung(
        "math_verify",
        "always",
        "math-verify's verify(parse(gold), parse(candidate)) under a hard deadline",
        _always,
        _symbolic_accepts,
        _symbolic_veto,
    ),
)

_MISS = GradeResult(0.0, "miss")


def reference_grade(
    gold: str,
    candidate: str,
    *,
    reward_mode: str = "",
    rel_tol: float = 1e-3,
    abs_tol: float = 1e-3,
    profile: str = "default",
) -> GradeResult:
    """The ladder of `RUNGS`, plainly: the first rung that runs and accepts wins; under strict,
    a rung's veto sends the pair on down and the first rule that refused is named. Strings and
    valid float tolerances only (`grade` coerces the rest first)."""
    if not gold.split() or not candidate.split():
        return _MISS
    is_strict = profile == "strict"
    pair = Pair(gold, candidate, reward_mode, rel_tol, abs_tol)
    refused: str | None = None
    for rung in RUNGS:
        if not rung.applies(pair):
            continue
        if rung.method == "math_verify":
            return _symbolic_rung(pair, is_strict, refused)
        if not rung.accepts(pair):
            continue
        rule = rung.veto(pair) if is_strict else None
        if rule is None:
            return GradeResult(1.0, rung.method)
        refused = refused or rule
    return _MISS  # pragma: no cover - the math_verify rung always runs


def _symbolic_rung(pair: Pair, is_strict: bool, refused: str | None) -> GradeResult:
    """math-verify's rung. A pair math-verify provably cannot match is a miss. Strict then asks
    its veto first: a rule that refuses whatever math-verify
    says is named without asking it (after an earlier refusal, that one is named); where the
    sides only say different things, a match is named by the rule it would have met."""
    missed = _MISS if refused is None else GradeResult(0.0, "miss", refused)
    if symbolic.shortcut(pair.gold, pair.candidate) is symbolic.Outcome.NO_MATCH:
        return missed  # math-verify provably cannot match: no rule is named here
    if is_strict:
        rule = strict.symbolic_refusal(
            pair.gold.strip(), pair.candidate.strip(), pair.rel, pair.abs_
        )
        if rule is not None:
            if refused is not None:
                return missed
            if type(rule) is not strict.Different:
                return GradeResult(0.0, "miss", rule)
            if _symbolic_accepts(pair):
                return GradeResult(0.0, "miss", str(rule))
            return missed
    outcome = symbolic.verify(pair.gold, pair.candidate)
    if outcome is symbolic.Outcome.MATCH:
        return GradeResult(1.0, "math_verify")
    if outcome is symbolic.Outcome.TIMEOUT:
        return GradeResult(0.0, "math_verify_timeout")
    return missed
