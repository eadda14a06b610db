"""The strict profile's rules: each closes one way the published ladder lets a model score
without knowing the answer (docs/scoring.md "The strict profile").

A rule is a veto on one rung's acceptance. The ladder runs as in the default profile; where a
rung would accept, strict compares what the two sides say, each read whole
(`scorers/reading.py`), and a rule that refuses sends the pair on down the ladder, where a later
rung may still accept under its own rules. So strict never accepts a pair the default profile
rejects, and the first rule that refused is reported (`GradeResult.rule`).

    python -c "from smoldataenvs_tasks import grade; print(grade('12', '12 or maybe 17', profile='strict'))"

The rules, each with one refusal (docs/scoring.md gives one acceptance of each too):
  dates           every date on each side, and only dates, agree: "2019-05-01 or 2019-05-02"
                  and "2019" are not 2019-05-01; "May 1, 2019" and "2019-05-01." are
  comma_merge     a comma between digits is a thousands separator or a list: "1,5" is not 15
  one_number      a side read for its one value holds one: "12 or maybe 17", "12 or seventeen",
                  "17 | 12", "12 (17)", "53-78"
  dropped_sign    a minus the published reading drops: "−5", "- 5", "minus 5" are not 5
  magnitude       a magnitude word changes the number: "12k", "12 thousand", "3.14M" are not
                  12 or 3.14
  comparison      comparisons and negations agree: "not 12", "at least 12", "12+", "< 12" are
                  not 12 or "> 12"; "more than 50K" is ">50K"
  label_words     the word naming the gold's number ("Class 2", "iPhone 12", "Q3") and the unit
                  after it ("12 years" vs "12 months"; "12 yrs" is 12 years) agree
  percent_bridge  ×100 / ÷100 only from a percentage to the fraction it stands for: "45%" and
                  "0.45", never "12" and "0.12"
  list_items      list items paired by the list rung, or parsed from any separator
                  (",", ";", lines, "and"), agree item by item
  list_rung_only  a list answers a list of as many items: "3" is not "1, 2, 3"
  numeric_rung_only  math-verify is not asked about values the numeric rung judged under the
                  row's tolerances: it rounds to 6 decimals and reads "8.3e-4" as 8.3
  one_expression  math-verify reads a side that is one value or one expression (`1/2`,
                  `\\frac{1}{2}`): never numbers side by side or joined by other symbols
                  ("1 2 3 4 5", "17 | 12", "48 ≈ 42"); an expression strict values itself
                  must come to the other side's value ("6387 / 4271?" is not 4271)

Pure and cheap: the rules run only on pairs a rung would accept; two plain numbers need no
reading, and a side of plain words and numbers is read from its words.
"""

from __future__ import annotations

import re

from smoldataenvs_tasks.scorers.reading import (
    FUNCTION_MARK,
    NAME_MARK,
    Crowd,
    Date,
    Expr,
    Items,
    Multi,
    Period,
    Range,
    Ratio,
    Reading,
    Text,
    Value,
    read,
    read_item,
    read_words,
    remember,
    remembered,
)
from smoldataenvs_tasks.scorers.rules import STRICT_RULES

__all__ = [
    "RULES",
    "Different",
    "list_item_refusal",
    "numeric_refusal",
    "plain_words_refusal",
    "symbolic_refusal",
]

# The rule names, in order of precedence (their records: `scorers/rules.py`).
RULES = tuple(rule.name for rule in STRICT_RULES)


class Different(str):
    """The two sides say different things: another answer, not a loophole. At math-verify's
    rung its value is the rule to name if math-verify matches them anyway; on the other rungs,
    whose acceptance is already known, it is `one_number`."""

    __slots__ = ()


_DIFFERENT_VALUE = Different("numeric_rung_only")
_DIFFERENT_RANGE = Different("one_number")
_DIFFERENT_LABEL = Different("label_words")
_DIFFERENT_EXPRESSION = Different("one_expression")
_DIFFERENT_LIST = Different("list_rung_only")

# A side that is one plain number (what most answers are) needs no reading.
_PLAIN = re.compile(r"\s*-?\d+(?:\.\d+)?\s*")


def numeric_refusal(
    gold: str, candidate: str, scaled: bool, rel: float, abs_: float
) -> tuple[str | None, bool]:
    """The rule that refuses the numeric rung's acceptance of this pair (or None), and whether
    math-verify's acceptance would be refused too (then the pair is settled unless the list
    rung can still accept it).

    `scaled` says the rung accepted through the ×100 bridge.
    """
    gold_reading = remembered.get(gold)
    if gold_reading is None:
        gold_reading = read(gold)
    cand_reading = remembered.get(candidate)
    if cand_reading is None:
        cand_reading = read(candidate)
    return _numeric_verdict(gold_reading, cand_reading, scaled, rel, abs_)


def _numeric_verdict(
    gold: Reading, cand: Reading, scaled: bool, rel: float, abs_: float
) -> tuple[str | None, bool]:
    if type(gold) is Value and type(cand) is Value:
        if gold.plain and cand.plain:
            # Neither side is a percentage, so the bridge has nothing to stand on; math-verify
            # is not asked about two plain numbers.
            return ("percent_bridge", True) if scaled else _ACCEPTED
        rule = _values(gold, cand, rel, abs_, scaled, False)
    else:
        rule = _disagreement(gold, cand, rel, abs_, scaled, False)
    if rule is None:
        return _ACCEPTED
    if type(rule) is Different:
        rule = "one_number"
    return rule, _math_verify_refuses(gold, cand, rel, abs_)


def _math_verify_refuses(gold: Reading, cand: Reading, rel: float, abs_: float) -> bool:
    """Whether math-verify's acceptance of the pair would be refused too: whether
    `_disagreement(..., symbolic=True)` names any rule, without working out which one."""
    gold_kind = type(gold)
    cand_kind = type(cand)
    if (
        (gold_kind is Multi or cand_kind is Multi)
        and gold_kind is not Items
        and cand_kind is not Items
    ):
        return True  # `_hedge` names a rule for every hedge; which one costs a pass over it
    return _disagreement(gold, cand, rel, abs_, False, True) is not None


_ACCEPTED = (None, False)


def plain_words_refusal(
    gold: str,
    gold_plain: float | None,
    candidate: str,
    words: list[str],
    rel: float,
    abs_: float,
) -> tuple[str | None, bool]:
    """`numeric_refusal` for a pair the numeric rung accepted (not by ×100), given the gold's
    value when the gold is one plain number (else None) and the candidate's lowercased words.
    A candidate of plain words and numbers (the usual shape of an answer, and of a hedge in
    words) is read from its words, and a plain gold not at all."""
    stripped = candidate.strip()
    cand_reading = remembered.get(stripped)
    if cand_reading is None:
        # One word is one token: `read` gives a plain number the same reading as `read_words`
        # and reads every other word (a date, "1,234", "−5", "45%") that `read_words` refuses.
        cand_reading = read_words(candidate, words) if len(words) > 1 else None
        if cand_reading is None:
            cand_reading = read(stripped)
        else:
            remember(stripped, cand_reading)
    if gold_plain is not None:
        # A plain gold has no word, unit, comparison or magnitude for a candidate to miss, so
        # the gold need not be read (`_numeric_verdict` on its reading gives the same).
        if type(cand_reading) is Multi:
            return _DATES_HEDGE if cand_reading.has_date else _HEDGE
        if (
            type(cand_reading) is Value
            and not cand_reading.comparison
            and _close(gold_plain, cand_reading.number, rel, abs_)
        ):
            return _ACCEPTED
    gold_reading = remembered.get(gold)
    if gold_reading is None:
        gold_reading = read(gold)
    return _numeric_verdict(gold_reading, cand_reading, False, rel, abs_)


_HEDGE = ("one_number", True)
_DATES_HEDGE = ("dates", True)


def list_item_refusal(gold_item: str, candidate_item: str, rel: float, abs_: float) -> str | None:
    """The rule that says two list items whose numbers agree do not say the same, or None."""
    if _PLAIN.fullmatch(gold_item) and _PLAIN.fullmatch(candidate_item):
        return None
    rule = _disagreement(read_item(gold_item), read_item(candidate_item), rel, abs_, False, False)
    return "one_number" if type(rule) is Different else rule


def symbolic_refusal(gold: str, candidate: str, rel: float, abs_: float) -> str | None:
    """The rule that refuses math-verify's acceptance of this pair; a `Different` when the two
    sides say different things; None when only math-verify can tell (its MATCH then stands)."""
    if _PLAIN.fullmatch(gold) and _PLAIN.fullmatch(candidate):
        # The numeric rung already judged two plain numbers under the row's tolerances.
        return "numeric_rung_only"
    return _disagreement(read(gold), read(candidate), rel, abs_, False, True)


def _close(g: float, c: float, rel: float, abs_: float) -> bool:
    diff = abs(g - c)
    return diff <= abs_ or diff / max(abs(g), 1e-9) <= rel


def _same(g: float, c: float, rel: float, abs_: float) -> bool:
    """`_close`, or equal but for float rounding (a magnitude applied: 47 bps is 0.47%)."""
    return _close(g, c, rel, abs_) or abs(g - c) <= 1e-9 * max(abs(g), abs(c))


def _disagreement(
    gold: Reading, cand: Reading, rel: float, abs_: float, scaled: bool, symbolic: bool
) -> str | None:
    # Each kind is tested on the reading itself (`type(x) is K`), which is what lets a type
    # checker know the fields of the kind in each branch. The order of the tests is the rules'
    # order of precedence: values, lists, hedges, dates, expressions, ranges, quarters, ratios.
    if type(gold) is Value and type(cand) is Value:
        return _values(gold, cand, rel, abs_, scaled, symbolic)
    if type(gold) is Crowd or type(cand) is Crowd:
        # Thousands of numbers are no one answer (a table, a log); exact matches never get here.
        return "one_expression" if symbolic else "one_number"
    if type(gold) is Items:
        if type(cand) is Items:
            return _lists(gold, cand, rel, abs_, symbolic=symbolic)
        return "comma_merge" if gold.comma_joined else "list_rung_only"
    if type(cand) is Items:
        return _list_for_one(gold, cand, rel, abs_, symbolic=symbolic)
    if type(cand) is Multi:
        return _hedge(cand, gold, rel, abs_, symbolic=symbolic)
    if type(gold) is Multi:
        return _hedge(gold, cand, rel, abs_, symbolic=symbolic)
    if type(gold) is Date or type(cand) is Date:
        if type(gold) is Date and type(cand) is Date:
            if gold.key == cand.key:
                return None
            # A date read with a comparison ("before 2019-03-01") ends its key with it.
            if _date_only(gold.key) == _date_only(cand.key):
                return "comparison"
        return "dates"
    # The numeric rung's first number is not an expression's value. Where math-verify judges,
    # a simple expression strict values itself must come to the other side's value.
    # An expression strict values and finds equal to the other side stands on any rung: the
    # rung read some number of it, but the side says the other's value ("4.2×10^-2" for 0.042,
    # accepted by the ×100 bridge on its 4.2; issue 46).
    if type(gold) is Expr:
        if symbolic:
            return _expression_disagreement(gold, cand, rel, abs_)
        return None if _expression_agrees(gold, cand, rel, abs_) else "one_expression"
    if type(cand) is Expr:
        if symbolic:
            return _expression_disagreement(cand, gold, rel, abs_)
        return None if _expression_agrees(cand, gold, rel, abs_) else "one_expression"
    if type(gold) is Range and type(cand) is Range:
        for gold_end, cand_end in ((gold.low, cand.low), (gold.high, cand.high)):
            rule = _values(gold_end, cand_end, rel, abs_, False, symbolic)
            if rule is not None:
                if type(rule) is Different:
                    return _DIFFERENT_RANGE if symbolic else "one_number"
                return rule
        return None
    if type(gold) is Range or type(cand) is Range:
        return "one_number"
    if type(gold) is Period and type(cand) is Period:
        if gold.quarter != cand.quarter:
            return _DIFFERENT_LABEL if symbolic else "label_words"
        return None if gold.year == cand.year else "dates"
    if type(gold) is Period or type(cand) is Period:
        return "label_words"
    if type(gold) is Ratio or type(cand) is Ratio:
        if type(gold) is Ratio and type(cand) is Ratio and gold.parts == cand.parts:
            return None
        return _DIFFERENT_EXPRESSION if symbolic else "one_number"
    if type(gold) is Text and type(cand) is Text:
        return None
    # One side holds no number at all (a number in words, a LaTeX symbol): math-verify decides.
    return None if symbolic else "one_number"


def _date_only(key: tuple) -> tuple:
    return key[:-1] if key and type(key[-1]) is frozenset else key


def _expression_agrees(expression: Expr, other: Reading, rel: float, abs_: float) -> bool:
    """Whether strict values `expression` and it comes to `other`'s value under the row's
    tolerances (no slack for math-verify's rounding: no math-verify here)."""
    if expression.value is None:
        return False
    if type(other) is Value:
        if other.comparison or other.percent:
            return False
        target = other.number
    elif type(other) is Expr and other.value is not None:
        target = other.value
    else:
        return False
    return _same(expression.value, target, rel, abs_)


def _expression_disagreement(
    expression: Expr, other: Reading, rel: float, abs_: float
) -> str | None:
    """At math-verify's rung: `_DIFFERENT_EXPRESSION` when strict can value both sides and the
    values differ; None when they agree or only math-verify can tell."""
    if expression.value is None:
        return None
    if type(other) is Value:
        target = other.number
        if other.percent and _close(expression.value, target / 100, rel, abs_):
            return None  # 1/8 for 12.5%: a percentage's fraction, as `percent_bridge` allows
    elif type(other) is Expr and other.value is not None:
        target = other.value
    else:
        return None
    if _close(expression.value, target, rel, abs_) or abs(expression.value - target) <= (
        1e-6 * max(1.0, abs(target))
    ):
        return None
    return _DIFFERENT_EXPRESSION


def _values(
    gold: Value, cand: Value, rel: float, abs_: float, scaled: bool, symbolic: bool
) -> str | None:
    if scaled:
        if gold.percent == cand.percent:
            # 50 bps for 0.5%: two percentages of one value, one of them in basis points; the
            # ×100 bridge only met the digits (issue 46).
            if gold.magnitude == cand.magnitude or not _same(gold.number, cand.number, rel, abs_):
                return "percent_bridge"
            return _qualifiers(gold, cand)
        # The percentage side must be the fraction times 100, not the other way round.
        expected = cand.number * 100 if gold.percent else cand.number / 100
        if not _close(gold.number, expected, rel, abs_):
            return "percent_bridge"
    elif not _close(gold.number, cand.number, rel, abs_) and not (
        # math-verify reads "52.37%" as 0.5237 (and rounds to 6 decimals).
        symbolic and gold.percent != cand.percent and _percent_agrees(gold, cand, rel, abs_)
    ):
        if gold.negative != cand.negative and _close(abs(gold.number), abs(cand.number), rel, abs_):
            return "dropped_sign"
        if gold.magnitude != cand.magnitude and _close(gold.digits, cand.digits, rel, abs_):
            return "magnitude"
        if not symbolic:
            return _DIFFERENT_VALUE
        # math-verify rounds to 6 decimals and reads "8.3e-4" as 8.3: values it could match
        # although they differ are the numeric rung's to judge.
        diff = abs(gold.number - cand.number)
        if (
            gold.scientific
            or cand.scientific
            or diff <= 1e-5 + 1e-9 * max(abs(gold.number), abs(cand.number))
        ):
            return "numeric_rung_only"
        return _DIFFERENT_VALUE
    return _qualifiers(gold, cand)


def _qualifiers(gold: Value, cand: Value) -> str | None:
    """What two values of the same number say about it: comparisons, what is glued to them,
    labels and units."""
    if gold.comparison != cand.comparison:
        marks = gold.comparison ^ cand.comparison
        if marks.isdisjoint(_COMPARISON_OPS):
            # Only what is glued to the number differs: a name ("CO2"), a decade ("1990s") or
            # a function of it ("42!", "sqrt(42)"). "Class2" is "Class 2".
            if marks == _NAME_ONLY and gold.label is not None and gold.label == cand.label:
                pass
            elif FUNCTION_MARK in marks:
                return "one_expression"
            else:
                return "label_words"
        else:
            return "comparison"
    if gold.label is not None and gold.label != cand.label:
        return "label_words"
    if gold.label is not None and gold.unit is None and cand.unit is not None:
        # A word after a labelled gold's number extends the label: "iPhone 12 Pro" is another
        # product than "iPhone 12" (issue 33).
        return "label_words"
    if gold.unit is not None and cand.unit is not None and gold.unit != cand.unit:
        return "label_words"
    return None


_NAME_ONLY = frozenset([NAME_MARK])
_COMPARISON_OPS = frozenset([">=", "<=", "!=", ">", "<", "±"])


def _percent_agrees(gold: Value, cand: Value, rel: float, abs_: float) -> bool:
    g = gold.number / 100 if gold.percent else gold.number
    c = cand.number / 100 if cand.percent else cand.number
    return _close(g, c, rel, abs_) or abs(g - c) <= 1e-6 * max(1.0, abs(g))


def _hedge(hedge: Multi, other: Reading, rel: float, abs_: float, *, symbolic: bool) -> str:
    if type(other) is Date or hedge.has_date:
        return "dates"
    if symbolic and type(other) is Value:
        # A rule is named only when the hedge holds the other side's value (else it is simply
        # another answer).
        target = other.number
        if not any(_close(target, value, rel, abs_) for value in hedge.values):
            return _DIFFERENT_EXPRESSION
    return "one_expression" if symbolic else "one_number"


def _list_for_one(gold: Reading, cand: Items, rel: float, abs_: float, *, symbolic: bool) -> str:
    """A list answering a gold that is not one."""
    if cand.comma_joined:
        return "comma_merge"
    if type(gold) is Date:
        return "dates"
    if symbolic and type(gold) is Value:
        target = gold.number
        numbers = [item.number for item in cand.items if type(item) is Value]
        if not any(_close(target, number, rel, abs_) for number in numbers):
            return _DIFFERENT_LIST
    return "list_rung_only" if symbolic else "one_number"


def _lists(gold: Items, cand: Items, rel: float, abs_: float, *, symbolic: bool) -> str | None:
    gold_items, cand_items = gold.items, cand.items
    if len(gold_items) != len(cand_items):
        return "list_rung_only"
    gold_texts, cand_texts = gold.texts, cand.texts  # normalised
    in_order = []
    for i, (gold_item, cand_item) in enumerate(zip(gold_items, cand_items, strict=True)):
        same = gold_texts[i] == cand_texts[i] or (
            _disagreement(gold_item, cand_item, rel, abs_, False, symbolic) is None
        )
        in_order.append(same)
        if not same:
            break
    else:
        return None
    # In another order: pair each gold item with the first unused candidate item it agrees with
    # (the pairs already judged in order are not judged again).
    unused = list(range(len(cand_items)))
    for i in range(len(gold_items)):
        for j in unused:
            if i == j and i < len(in_order):
                same = in_order[i]
            else:
                same = gold_texts[i] == cand_texts[j] or (
                    _disagreement(gold_items[i], cand_items[j], rel, abs_, False, symbolic) is None
                )
            if same:
                unused.remove(j)
                break
        else:
            return "list_items"
    return None
