"""The strict profile's rules: each closes one way the published ladder lets a model score
without knowing the answer (docs/scoring.md "The strict profile").

A rule is a veto on one rung's acceptance. The ladder runs as in the default profile; where a
rung would accept, strict asks that rung's rules, and a rule that refuses sends the pair on down
the ladder, where a later rung may still accept under its own rules. So strict never accepts a
pair the default profile rejects, and the first rule that refused is reported
(`GradeResult.rule`).

    python -c "from smoldataenvs_tasks import grade; print(grade('12', '12 or maybe 17', profile='strict'))"

The text rules (the numeric rung, list items paired by their numbers, and math-verify on a side
with words), read on each side's text:
  dates           a date matches only the same date (and time), in any of its written forms:
                  "2019-05-01" is not "2019", "2019-05-02" or "2019-12-31"; it is "2019-5-1"
  comma_merge     a comma between digits is a thousands separator or nothing: "1,5" is not 15
  one_number      each side holds one number: "12 or maybe 17", "1 2 3 4 5", "3-4 years"
  dropped_sign    a minus the published reading drops makes the side unreadable: "−5", "- 5",
                  "-$4058" are not 5 or 4058
  label_words     the words that make a number a label agree: the gold's word before its number
                  ("Class 2", "iPhone 12", "Q3") must be the candidate's, comparison signs must
                  be the same (">50K" vs "<=50K" or "50K"), and two units must be one ("12 years"
                  vs "12 months"); a unit on one side only ("19" vs "19 respondents") is fine
numeric rung only:
  percent_bridge  ×100 / ÷100 only from a percentage (a `%` or "percent") to the fraction it
                  stands for: "45%" vs "0.45", never "12" vs "0.12" or "45%" vs "4500"
list rung:
  list_items      items paired by their numbers pass the text rules: "10 apples, 20 pears" vs
                  "10 pears, 20 apples" is not a match
symbolic rung (math-verify): the text rules on a side with words ("iPhone 12" vs "12",
"17" vs "12 or maybe 17"), dates, a leading dropped sign, and
  list_rung_only  a comma list is graded by the list rung alone: math-verify compares one
                  element ("1, 2, 3" vs "3", "5" vs "1, 2, 3, 4, 5")
  one_expression  no numbers side by side: "1 2 3 4 5" is not 5 ("1 000 000" is one number)
  numeric_rung_only  two plain numbers, or a number in scientific notation, are the numeric
                  rung's to judge under the row's tolerances: math-verify rounds to 6 decimals
                  and reads "8.3e-4" as 8.3 (so "8.3e-4" vs "8.3e-3" passed)

Pure and cheap: these run only on pairs a rung has already accepted.
"""

from __future__ import annotations

import re

__all__ = ["RULES", "list_item_refusal", "numeric_refusal", "symbolic_refusal"]

RULES = (
    "dates",
    "comma_merge",
    "one_number",
    "dropped_sign",
    "label_words",
    "percent_bridge",
    "list_items",
    "list_rung_only",
    "numeric_rung_only",
    "one_expression",
)

# A side that is one plain number (what most answers are) needs no further look.
_PLAIN = re.compile(r"\s*-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\s*")
# Digits joined by commas with no space between ("1,234", "1,5", "12,34,567").
_COMMA_RUN = re.compile(r"\d+(?:,\d+)+")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Minus signs and dashes Unicode has besides ASCII '-', which the published reading ignores.
_MINUSES = "\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d"
# Right before a number: an ASCII minus parted from it by spaces or a currency sign, or any other
# minus or dash.
_DROPPED_SIGN = re.compile(rf"(?:-[\s$€£]+|[{_MINUSES}][\s$€£]*)$")
_LEADING_DROPPED_SIGN = re.compile(rf"^\s*\$?\s*(?:-[\s$€£]+|[{_MINUSES}][\s$€£]*)\d")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_LAST_WORD = re.compile(r"([^\W\d_]+)[^\w<>≤≥]*$")
_FIRST_WORD = re.compile(r"^[^\w<>≤≥]*([^\W\d_]+)")
_COMPARISON = re.compile(r"[<>]=?|=[<>]|[≤≥]")
_CANONICAL_COMPARISON = {"=<": "<=", "=>": ">=", "≤": "<=", "≥": ">="}
_PERCENT_WORD = re.compile(r"%|percent", re.IGNORECASE)
# A date: year first (2019-05-01, 2019/5/1, 2019.05.01, 2019-05) or year last (05/01/2019), with
# an optional time.
_DATE = re.compile(
    r"(?<![\d.])(?:(\d{4})[-/](\d{1,2})(?:[-/](\d{1,2}))?|(\d{4})\.(\d{1,2})\.(\d{1,2})"
    r"|(\d{1,2})[-/.](\d{1,2})[-/.](\d{4}))"
    r"(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?(?![\d.])"
)
_HAS_DATE_HINT = re.compile(r"\d[-/.]\d")
# Symbolic rung.
_LETTER = re.compile(r"[^\W\d_]")
_SCIENTIFIC = re.compile(r"\d[eE][-+]?\d")
_SPACE_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)")
_SIDE_BY_SIDE = re.compile(r"\d[\s;]+[-+]?\d")


def numeric_refusal(
    gold: str, candidate: str, g: float, c: float, *, scaled: bool, rel: float, abs_: float
) -> str | None:
    """The rule that refuses the numeric rung's acceptance of this pair, or None.

    `g` and `c` are the numbers the published reading took from each side; `scaled` says the
    rung accepted through the ×100 bridge.
    """
    rule = list_item_refusal(gold, candidate)
    if rule is None and scaled:
        return _bridge_refusal(gold, candidate, g, c, rel, abs_)
    return rule


def list_item_refusal(gold: str, candidate: str) -> str | None:
    """The text rule that says two texts whose numbers agree do not say the same, or None."""
    if _PLAIN.fullmatch(gold) and _PLAIN.fullmatch(candidate):
        return None
    dated = _date_refusal(gold, candidate)
    if dated is not None:
        return dated or None
    gold_side = _read(gold)
    if isinstance(gold_side, str):
        return gold_side
    cand_side = _read(candidate)
    if isinstance(cand_side, str):
        return cand_side
    return _label_refusal(gold_side, cand_side)


def symbolic_refusal(gold: str, candidate: str) -> str | None:
    """The rule that refuses math-verify's acceptance of this pair, or None."""
    # Two plain numbers reach this rung only when the numeric rung, under the row's tolerances,
    # said no; math-verify's 6-decimal rounding, and its reading of "8.3e-4" as 8.3, say nothing
    # more about them.
    if (_PLAIN.fullmatch(gold) and _PLAIN.fullmatch(candidate)) or (
        _SCIENTIFIC.search(gold) or _SCIENTIFIC.search(candidate)
    ):
        return "numeric_rung_only"
    dated = _date_refusal(gold, candidate)
    if dated is not None:
        return dated or None
    worded = False
    for side in (gold, candidate):
        text = _LATEX_COMMAND.sub(" ", side) if "\\" in side else side
        if _LEADING_DROPPED_SIGN.search(text):
            return "dropped_sign"
        if "," in text and "," in _THOUSANDS.sub("0", text):
            return "list_rung_only"
        worded = worded or _LETTER.search(text) is not None
        if _SIDE_BY_SIDE.search(text) and _SIDE_BY_SIDE.search(_SPACE_THOUSANDS.sub("0", text)):
            return "one_expression"
    # math-verify finds a number in words ("iPhone 12", "12 or maybe 17"): hold such a side to
    # what the numeric rung asks of its text.
    return list_item_refusal(gold, candidate) if worded else None


def _date_refusal(gold: str, candidate: str) -> str | None:
    """None when neither side holds a date; "" when both hold the same one; else "dates"."""
    if _HAS_DATE_HINT.search(gold) is None and _HAS_DATE_HINT.search(candidate) is None:
        return None
    gold_date = _DATE.search(gold)
    cand_date = _DATE.search(candidate)
    if gold_date is None and cand_date is None:
        return None
    if gold_date is None or cand_date is None or _date_key(gold_date) != _date_key(cand_date):
        return "dates"
    return ""


def _date_key(match: re.Match[str]) -> tuple[int, ...]:
    """The date's parts in the order written, after the form's kind, then the time (midnight
    when none is written): two forms of one date (2019-05-01, 2019/5/1) agree; day-first and
    month-first dates are never compared with year-first ones."""
    groups = match.groups()
    if groups[0] is not None:
        kind, parts = 0, groups[0:3]
    elif groups[3] is not None:
        kind, parts = 0, groups[3:6]
    else:
        kind, parts = 1, groups[6:9]
    day = tuple(-1 if part is None else int(part) for part in parts)
    time = tuple(int(part or 0) for part in groups[9:12])
    return (kind, *day, *time)


def _read(side: str) -> tuple[str, str] | str:
    """(text before, text after) the side's one number, or the rule its reading breaks."""
    if "," in side:
        for run in _COMMA_RUN.finditer(side):
            if _THOUSANDS.fullmatch(run.group()) is None:
                return "comma_merge"
        side = side.replace(",", "")
    numbers = _NUMBER.findall(side)
    if len(numbers) != 1:
        return "one_number"
    match = _NUMBER.search(side)
    assert match is not None
    before = side[: match.start()]
    if _DROPPED_SIGN.search(before):
        return "dropped_sign"
    return before, side[match.end() :]


def _label_refusal(gold: tuple[str, str], candidate: tuple[str, str]) -> str | None:
    (gold_before, gold_after), (cand_before, cand_after) = gold, candidate
    if _comparison(gold_before + gold_after) != _comparison(cand_before + cand_after):
        return "label_words"
    # A word right before the gold's number names what is counted ("Class 2", "iPhone 12",
    # "Q3"): the candidate must name the same (a word before a bare gold number is fine).
    label = _word(_LAST_WORD, gold_before)
    if label is not None and label != _word(_LAST_WORD, cand_before):
        return "label_words"
    # A unit after the number may be left out, but two different units are two answers.
    unit = _word(_FIRST_WORD, gold_after)
    cand_unit = _word(_FIRST_WORD, cand_after)
    if unit is not None and cand_unit is not None and unit != cand_unit:
        return "label_words"
    return None


def _word(pattern: re.Pattern[str], text: str) -> str | None:
    if "\\" in text:
        text = _LATEX_COMMAND.sub(" ", text)
    found = pattern.search(text)
    if found is None:
        return None
    word = found.group(1).lower()
    # "year" and "years" are one unit.
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _comparison(text: str) -> str:
    if not any(ch in text for ch in "<>≤≥"):
        return ""
    return "".join(_CANONICAL_COMPARISON.get(op, op) for op in _COMPARISON.findall(text))


def _bridge_refusal(
    gold: str, candidate: str, g: float, c: float, rel: float, abs_: float
) -> str | None:
    gold_percent = _PERCENT_WORD.search(gold) is not None
    cand_percent = _PERCENT_WORD.search(candidate) is not None
    if gold_percent == cand_percent:
        return "percent_bridge"
    # The percentage side must be the fraction times 100, not the other way round.
    expected = c * 100 if gold_percent else c / 100
    diff = abs(g - expected)
    if diff <= abs_ or diff / max(abs(g), 1e-9) <= rel:
        return None
    return "percent_bridge"
