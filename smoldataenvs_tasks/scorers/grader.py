"""The SmolDataEnvs grader ladder: a drop-in for the dataset's own `grader.grade`.

One module of over 500 lines on purpose: this is the fast path, called millions of times in RL,
and its rungs, the memo and the gold facts it reads are module globals and local helpers because
each attribute look-up across modules costs on every call. The ladder as a specification lives
elsewhere: its rungs and strict's rules as records, and the plain `reference_grade` built from
them (`scorers/ladder.py`, `scorers/rules.py`), which tests/scorers/test_ladder.py holds `grade`
to, under both profiles.

Pure: imports neither inspect_ai nor lm_eval. The first five rungs run in-process; the symbolic
rung (math-verify) runs under a hard deadline, in-process for a tame pair called from the main
thread and in a small pool of worker processes otherwise (`scorers/symbolic.py`), so `grade` is
safe from threads and from asyncio code via `asyncio.to_thread`.

    python -c "from smoldataenvs_tasks import grade; print(grade('45%', '0.45'))"
    smoldataenvs grade 5768.04 5768 --mode numeric --atol 0.05 --rtol 0.01
    smoldataenvs grade 12 "12 or maybe 17" --grader strict

Two profiles of this one ladder (docs/scoring.md): `default` gives the published grader's reward
on every pair except the deviations docs/scoring.md lists; `strict` runs the same rungs, and where
one would accept, asks the rules in `scorers/strict.py`, whose refusal sends the pair on down.

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
6. otherwise `miss` (under strict, `GradeResult.rule` names the first rule that refused a rung).

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
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

from smoldataenvs_tasks._pins import KNOWN_REWARD_MODES
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.scorers import reading, strict, symbolic
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, GRADER_PROFILES

__all__ = [
    "METHODS",
    "GoldFacts",
    "GradeResult",
    "UnknownProfileError",
    "clear_memo",
    "grade",
    "memo_info",
]

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
    # strict only: the rule that refused a rung's acceptance (the first, when several did).
    rule: str | None = None


class UnknownProfileError(SmolDataEnvsError, ValueError):
    """A grader profile other than those in GRADER_PROFILES."""


_NUMERIC_MODES = frozenset({"numeric", "flexible"})
_LIST_MODES = frozenset({"list", "list_csv"})
_KNOWN_MODES = frozenset(KNOWN_REWARD_MODES)

# A "clean number" gold (after stripping and removing %, $ and commas) turns the numeric rung on
# in every mode. `[.,]` keeps upstream's pattern even though commas are already gone.
_CLEAN_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?(?:[eE][-+]?\d+)?")
# A gold that is one plain number: strict has nothing to read in it.
_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# The first number of a side, read after removing every comma: sign, decimals, exponent.
_FIRST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

# A tolerance the caller did not give (None is a value: it counts as 0.0).
_UNSET: Any = object()
_DEFAULT_TOLERANCE = 1e-3

_MISS = GradeResult(0.0, "miss")
_EXACT = GradeResult(1.0, "exact")
_NUMERIC = GradeResult(1.0, "numeric")
_NUMERIC_SCALED = GradeResult(1.0, "numeric_scaled")
_LIST = GradeResult(1.0, "list")
_MATH_VERIFY = GradeResult(1.0, "math_verify")
_MATH_VERIFY_TIMEOUT = GradeResult(0.0, "math_verify_timeout")
_REFUSED = {rule: GradeResult(0.0, "miss", rule) for rule in strict.RULES}


def grade(
    gold: Any,
    candidate: Any,
    *,
    reward_mode: Any = "",
    rel_tol: Any = _UNSET,
    abs_tol: Any = _UNSET,
    profile: str = DEFAULT_PROFILE,
    **keywords: Any,
) -> GradeResult:
    """Grade one candidate answer against the gold with the ladder, under `profile`.

    `profile="default"` is the published grader; `"strict"` closes its loopholes. The
    tolerances are `rel_tol`/`abs_tol` (the published grader's names, 1e-3 each when not given)
    or `rtol`/`atol` (the dataset rows' names, the same meaning). `keywords` takes those two and
    the published grader's other keywords, `question`, `judge` and `judge_model` (accepted, and
    unused there too). Any other keyword raises TypeError, as does one tolerance given under
    both names with two values: a tolerance under a name nobody reads would silently grade with
    the default.

    Returns reward 1.0 or 0.0 for any input. Raises `UnknownProfileError` for a profile not in
    GRADER_PROFILES, and `symbolic.SymbolicUnavailableError` when the symbolic rung's worker
    processes cannot start at all (an infrastructure failure, which callers above this layer
    record as ungraded, never as 0).
    """
    # RL calls this millions of times: the common types take the shortest path through each
    # coercion (the slow path gives the same values).
    if profile == "default":
        is_strict = False
    elif profile == "strict":
        is_strict = True
    else:
        raise UnknownProfileError(
            f"unknown grader profile {profile!r}: choose one of {', '.join(GRADER_PROFILES)}"
        )
    if type(gold) is not str:
        gold = _as_text(gold)
    if type(candidate) is not str:
        candidate = _as_text(candidate)
    mode = (
        reward_mode
        if type(reward_mode) is str
        else ("" if reward_mode is None else str(reward_mode))
    )
    if mode not in _KNOWN_MODES:
        _warn_unknown_mode(mode)
    if keywords:
        # Rare (the dataset's names for the tolerances, upstream's unused keywords): read only
        # when a call gives one, off the path every call takes.
        rel_tol, abs_tol = _dataset_keywords(keywords, rel_tol, abs_tol)
    # `x >= 0.0` is False for NaN, which takes the slow path to 0.0.
    if type(rel_tol) is float and rel_tol >= 0.0:
        rel = rel_tol
    else:
        rel = _DEFAULT_TOLERANCE if rel_tol is _UNSET else _tolerance(rel_tol)
    if type(abs_tol) is float and abs_tol >= 0.0:
        abs_ = abs_tol
    else:
        abs_ = _DEFAULT_TOLERANCE if abs_tol is _UNSET else _tolerance(abs_tol)
    if gold is None or candidate is None:
        return _MISS

    # str.split() and str.strip() agree on what whitespace is (str.isspace), so no words means
    # blank, and equal word lists mean equal normalised texts (re.sub(r"\s+", " ", ...)).
    info = _golds.get(gold)
    gold_words = gold.lower().split() if info is None else info.words
    if not gold_words:
        return _MISS
    cand_words = candidate.lower().split()
    if not cand_words:
        return _MISS
    if gold_words == cand_words:
        return _EXACT
    if info is None:
        info = _read_gold(gold, gold_words)
    g = info.first

    refused: str | None = None
    settled = False  # strict refused the numeric rung's match and would refuse math-verify's
    if g is not None and (mode in _NUMERIC_MODES or info.clean):
        found = _FIRST_NUMBER.search(candidate.replace(",", "") if "," in candidate else candidate)
        if found is not None:
            c = float(found.group())
            diff = abs(g - c)
            accepted = None
            if diff <= abs_ or diff / max(abs(g), 1e-9) <= rel:
                accepted = _NUMERIC
            elif _one_side_fractional(g, c) and (
                _close(g, c * 100, rel, abs_) or _close(g, c / 100, rel, abs_)
            ):
                accepted = _NUMERIC_SCALED
            if accepted is not None:
                if not is_strict:
                    return accepted
                gold_stripped = info.stripped
                gold_plain = info.plain
                both_plain = (
                    gold_plain and len(cand_words) == 1 and _PLAIN_NUMBER.fullmatch(cand_words[0])
                )
                if accepted is _NUMERIC:
                    if both_plain:
                        return accepted  # two plain numbers: nothing for a strict rule
                    refused, settled = strict.plain_words_refusal(
                        gold_stripped, g if gold_plain else None, candidate, cand_words, rel, abs_
                    )
                    if refused is None:
                        return accepted
                elif both_plain:
                    # Neither is a percentage: the ×100 bridge has nothing to stand on.
                    refused, settled = "percent_bridge", True
                else:
                    refused, settled = strict.numeric_refusal(
                        gold_stripped, candidate.strip(), True, rel, abs_
                    )
                if refused is None:
                    return accepted
                if settled and not (mode in _LIST_MODES or ("," in gold and "," in candidate)):
                    # math-verify's match would be refused too, and no list rung runs.
                    return _REFUSED[refused]

    # The exact and numeric rungs cost less than a memo look-up; what follows may not.
    if len(gold) + len(candidate) > _MEMO_MAX_KEY_CHARS:
        return _lower_rungs(gold, candidate, mode, rel, abs_, is_strict, refused, settled)
    key = (gold, candidate, mode, rel, abs_, is_strict)
    hit = _memo.recall(key)
    if hit is not None:
        return hit
    result = _lower_rungs(gold, candidate, mode, rel, abs_, is_strict, refused, settled)
    # A timeout says nothing about the pair (a retry on a quieter machine may finish), so it is
    # never remembered.
    if result is not _MATH_VERIFY_TIMEOUT:
        _memo.keep(key, result)
    return result


class GoldFacts(NamedTuple):
    """What the ladder needs of a gold past the exact rung, remembered per gold string (RL
    grades many candidates against one gold)."""

    words: list[str]  # lowercased, split on whitespace
    stripped: str
    clean: bool  # upstream's "clean number": the numeric rung runs in every mode
    first: float | None  # the first number, commas removed
    plain: bool  # one plain number: strict has nothing to read in it


def _read_gold(gold: str, words: list[str]) -> GoldFacts:
    found = _FIRST_NUMBER.search(gold.replace(",", "") if "," in gold else gold)
    stripped = gold.strip()
    if found is None:
        clean = plain = False  # no number: neither test can pass
    elif len(words) == 1 and _PLAIN_NUMBER.fullmatch(stripped) is not None:
        clean = plain = True  # the commonest gold: one pattern answers both
    else:
        # Upstream's "clean number" test: `%`/`$` come off the ends only, then the spaces they
        # uncovered ("65 %", "$ 5"); a sign or symbol inside ("-$4058") leaves the gold unclean.
        bare = stripped.strip("%$").strip()
        clean = _CLEAN_NUMBER.fullmatch(bare.replace(",", "") if "," in bare else bare) is not None
        plain = False
    # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function.
    facts: GoldFacts = _new(
        GoldFacts,
        (words, stripped, clean, float(found.group()) if found is not None else None, plain),
    )
    if len(gold) <= _MEMO_MAX_KEY_CHARS:
        if len(_golds) >= _MEMO_MAX_ENTRIES:
            _golds.clear()
            _gold_items.clear()
        _golds[gold] = facts
    return facts


_new = tuple.__new__


def _lower_rungs(
    gold: str,
    candidate: str,
    mode: str,
    rel: float,
    abs_: float,
    is_strict: bool,
    refused: str | None,
    settled: bool,
) -> GradeResult:
    """The list rung and math-verify, for a pair the exact and numeric rungs did not accept.
    `settled`: strict refused the numeric rung's match (`refused`) and already knows that it
    would refuse math-verify's, so only the list rung can still accept the pair."""
    if mode in _LIST_MODES or ("," in gold and "," in candidate):
        # A gold's items are remembered with its facts (a candidate's are not: on the
        # all-distinct list set that cost 0.2x).
        gold_items = _gold_items.get(gold)
        if gold_items is None:
            gold_items = _list_items(gold)
            if len(gold) <= _MEMO_MAX_KEY_CHARS:
                _gold_items[gold] = gold_items
        accepted, kept = _lists_match(gold_items, candidate, rel, abs_, is_strict=is_strict)
        if accepted and (kept or not is_strict):
            return _LIST
        if accepted:
            refused = refused or "list_items"
        if settled and refused is not None:
            # What `symbolic_refusal` would find again, reading both sides a third time.
            return _REFUSED[refused]

    missed = _MISS if refused is None else _REFUSED[refused]
    if symbolic.shortcut(gold, candidate) is symbolic.Outcome.NO_MATCH:
        return missed
    if is_strict:
        # Strict accepts math-verify's match only where its own reading of the two sides
        # agrees. Where a rule refuses, math-verify is not asked (its answer would change
        # nothing); where the sides say different things, it is asked only to know whether a
        # rule refused its match.
        rule = strict.symbolic_refusal(gold.strip(), candidate.strip(), rel, abs_)
        if rule is not None:
            if refused is not None:
                return missed
            if type(rule) is not strict.Different:
                return _REFUSED[rule]
            if _symbolic(gold, candidate) is symbolic.Outcome.MATCH:
                return _REFUSED[str(rule)]
            return missed
    outcome = _symbolic(gold, candidate)
    if outcome is symbolic.Outcome.MATCH:
        return _MATH_VERIFY
    if outcome is symbolic.Outcome.TIMEOUT:
        return _MATH_VERIFY_TIMEOUT
    return missed


def _normalise(text: str) -> str:
    # str.split() and re's \s agree on what whitespace is (str.isspace), so this equals
    # re.sub(r"\s+", " ", text.strip().lower()) and is several times faster.
    return " ".join(text.lower().split())


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


def _lists_match(
    gold_items: list[_ListItem], candidate: str, rel: float, abs_: float, *, is_strict: bool
) -> tuple[bool, bool]:
    """(the list rung accepts, strict's item rules let it) in one pass over both orders."""
    cand_items = _list_items(candidate)
    if len(gold_items) < 2 or len(gold_items) != len(cand_items):
        return False, False
    accepted, kept = _items_match(gold_items, cand_items, rel, abs_, is_strict)
    if kept or (accepted and not is_strict):
        return True, kept
    gold_sorted = sorted(gold_items, key=_LOWERED)
    cand_sorted = sorted(cand_items, key=_LOWERED)
    if gold_sorted == gold_items and cand_sorted == cand_items:
        return accepted, kept  # already in order: the sorted pass is the pass just made
    accepted_sorted, kept = _items_match(gold_sorted, cand_sorted, rel, abs_, is_strict)
    return accepted or accepted_sorted, kept


_LOWERED = itemgetter(0)


_ListItem = tuple[str, str, str, float | None]


def _list_items(side: str) -> list[_ListItem]:
    """(lowercased, item, normalised, first number) per comma-separated item; sorted on the
    first, as upstream sorts items with `key=str.lower`. A gold's are remembered with the rest
    of what the ladder needs of it (callers only read the list)."""
    items = []
    search = _FIRST_NUMBER.search
    for part in side.split(","):
        item = part.strip()
        if item:
            lowered = item.lower()
            found = search(item)  # no comma left to remove in an item
            number = float(found.group()) if found is not None else None
            items.append((lowered, item, " ".join(lowered.split()), number))
    return items


def _items_match(
    gold_items: list[_ListItem],
    cand_items: list[_ListItem],
    rel: float,
    abs_: float,
    is_strict: bool,
) -> tuple[bool, bool]:
    kept = is_strict
    for (_, g_item, g_norm, g), (_, c_item, c_norm, c) in zip(gold_items, cand_items, strict=True):
        if g_norm == c_norm:
            continue
        if g is None or c is None or not _close(g, c, rel, abs_):
            return False, False
        if kept and strict.list_item_refusal(g_item, c_item, rel, abs_) is not None:
            kept = False
    return True, kept


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


# The published grader's keywords that grading does not use (it does not use them either).
_UNUSED_KEYWORDS = frozenset({"question", "judge", "judge_model"})
_DATASET_TOLERANCES = {"rtol": "rel_tol", "atol": "abs_tol"}
_KEYWORDS = (
    "reward_mode",
    "rel_tol",
    "abs_tol",
    "profile",
    "rtol",
    "atol",
    *sorted(_UNUSED_KEYWORDS),
)


def _dataset_keywords(keywords: dict[str, Any], rel_tol: Any, abs_tol: Any) -> tuple[Any, Any]:
    """(rel_tol, abs_tol) once `rtol`/`atol` are read from `keywords`; TypeError for a keyword
    `grade` does not take, or for one tolerance given under both names with two values
    (compared as grading reads them: None and 0.0 are one value)."""
    tolerances = {"rel_tol": rel_tol, "abs_tol": abs_tol}
    for keyword, value in keywords.items():
        name = _DATASET_TOLERANCES.get(keyword)
        if name is None:
            if keyword in _UNUSED_KEYWORDS:
                continue
            raise TypeError(
                f"grade() got an unexpected keyword argument {keyword!r} (it takes "
                f"{', '.join(_KEYWORDS)})"
            )
        given = tolerances[name]
        if given is not _UNSET and _tolerance(given) != _tolerance(value):
            raise TypeError(
                f"grade() got {name}={given!r} and {keyword}={value!r}: two values for one "
                f"tolerance (give either name, not both)"
            )
        tolerances[name] = value
    return tolerances["rel_tol"], tolerances["abs_tol"]


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


class _Memo:
    """A bounded memo in two generations of plain dicts: when the young one is full it becomes
    the old one, and a hit in the old one moves back to the young one (the pairs in use stay).

    No lock: single dict operations are atomic under the GIL, and a lock around them cost as
    much as grading an exact or numeric pair; a race can only forget an entry or count a hit
    twice. (Evicting one oldest entry at a time from one dict is quadratic: CPython's dict
    iteration walks over the deleted entries.)
    """

    def __init__(self) -> None:
        self.young: dict = {}
        self.old: dict = {}
        self.hits = 0
        self.misses = 0

    def recall(self, key: tuple) -> Any:
        hit = self.young.get(key)
        if hit is None:
            old = self.old
            hit = old.get(key) if old else None
            if hit is None:
                self.misses += 1
                return None
            self.keep(key, hit)
        self.hits += 1
        return hit

    def keep(self, key: tuple, value: Any) -> None:
        young = self.young
        young[key] = value
        if len(young) >= _MEMO_MAX_ENTRIES // 2:
            self.old = young
            self.young = {}

    def clear(self) -> None:
        self.young = {}
        self.old = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.young) + len(self.old)


_memo = _Memo()
_symbolic_memo = _Memo()
_golds: dict[str, GoldFacts] = {}
_gold_items: dict[str, list[_ListItem]] = {}


def _symbolic(gold: str, candidate: str) -> symbolic.Outcome:
    """math-verify's outcome for a pair the shortcuts could not settle (in this process or from
    the worker pool, `symbolic.settle`), remembered per pair: it depends on neither the mode,
    the tolerances nor the profile, so regrading under the other profile (or another row with the
    same gold) costs no second worker round trip."""
    key = (gold, candidate)
    cacheable = len(gold) + len(candidate) <= _MEMO_MAX_KEY_CHARS
    if cacheable:
        hit = _symbolic_memo.recall(key)
        if hit is not None:
            return hit
    outcome = symbolic.settle(gold, candidate)
    if cacheable and outcome is not symbolic.Outcome.TIMEOUT:
        _symbolic_memo.keep(key, outcome)
    return outcome


def clear_memo() -> None:
    """Forget every remembered grade, symbolic outcome and strict reading (benchmarks and tests
    start cold)."""
    _memo.clear()
    _symbolic_memo.clear()
    _golds.clear()
    _gold_items.clear()
    reading.clear_cache()
    symbolic.clear_cache()


def memo_info() -> dict[str, int]:
    """Hits, misses, current size and bound of the grade memo."""
    return {
        "hits": _memo.hits,
        "misses": _memo.misses,
        "size": len(_memo),
        "max_entries": _MEMO_MAX_ENTRIES,
    }
