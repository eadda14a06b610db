"""The strict profile's rules as records: name, the rungs whose acceptance each can refuse, what
it refuses, and one pair it lets through and one it refuses (docs/scoring.md "The rules").

Data only: `scorers/strict.py` takes its rule names from here and holds their logic;
`scorers/ladder.py` builds the plain reference ladder from these records and the rungs; the
examples are executed by tests/scorers/test_strict.py (each accepted pair passes under strict,
each refused pair passes under the default profile and is refused by exactly this rule).

    python -c "from smoldataenvs_tasks.scorers.rules import STRICT_RULES as R; print(R[0])"
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["STRICT_RULES", "Example", "StrictRule"]


class Example(NamedTuple):
    gold: str
    candidate: str
    reward_mode: str  # under tolerances 0


class StrictRule(NamedTuple):
    name: str
    # The methods of the rungs whose acceptance this rule can refuse.
    rungs: tuple[str, ...]
    refuses: str
    accepts: Example
    refused: Example


_VALUE_RUNGS = ("numeric", "numeric_scaled", "math_verify")

# In order of precedence where one reading breaks several (strict names the first that refused).
STRICT_RULES: tuple[StrictRule, ...] = (
    StrictRule(
        "dates",
        _VALUE_RUNGS,
        "a side whose dates are not, all of them and only them, the other side's; a date for a "
        "year or a year for a date",
        Example("2019-05-01", "May 1, 2019", ""),
        Example("2019-05-01", "2019-05-01 or 2019-05-02", ""),
    ),
    StrictRule(
        "comma_merge",
        _VALUE_RUNGS,
        "digits joined by a bare comma that is not a thousands separator",
        Example("1234", "1,234", ""),
        Example("15", "1,5", ""),
    ),
    StrictRule(
        "one_number",
        ("numeric", "numeric_scaled", "math_verify"),
        "a side read for its value that holds other numbers too: hedges in any separator or in "
        "words, a bracketed second number, a range for a value",
        Example("12", "The answer is 12 years", "numeric"),
        Example("12", "12 or seventeen", "numeric"),
    ),
    StrictRule(
        "dropped_sign",
        _VALUE_RUNGS,
        "a sign the published reading drops (a Unicode, emoji or spaced minus, `minus`, "
        "`negative`), or an absolute value",
        Example("-$4058", "-$4,058", "numeric"),
        Example("5", "- 5", "numeric"),
    ),
    StrictRule(
        "magnitude",
        _VALUE_RUNGS,
        "a magnitude word or suffix that makes the number another (the table is closed: k, M, "
        "MM, bn, lakh, crore, Mrd., Tsd., ...); basis points or per mille for a percentage",
        Example(">50K", "more than 50K", "numeric"),
        Example("12", "12k", "numeric"),
    ),
    StrictRule(
        "comparison",
        _VALUE_RUNGS,
        "comparisons, negations and sign hedges that differ, on numbers, money, units, years and "
        "dates alike, each read in its number's own clause and next to it",
        Example(">50K", "more than 50K", "numeric"),
        Example("12", "at least 12", "numeric"),
    ),
    StrictRule(
        "label_words",
        _VALUE_RUNGS,
        "a gold whose number follows a word answered without that word or with the label "
        "extended; two different units after the number (`sq m` and `sq ft` too); a number "
        "glued to a name (`CO2`, `uint8`) or a decade (`1990s`) for the number",
        Example("12 years", "12 yrs", "numeric"),
        Example("12 years", "12 months", "numeric"),
    ),
    StrictRule(
        "percent_bridge",
        ("numeric_scaled",),
        "x100 / /100 unless exactly one side is a percentage and the other its fraction",
        Example("45%", "0.45", "numeric"),
        Example("12", "0.12", "numeric"),
    ),
    StrictRule(
        "list_items",
        ("list", "math_verify"),
        "list items that do not agree item by item in some order",
        Example("12, 7, 3", "12; 7; 3", "list"),
        Example("10 apples, 20 pears", "10 pears, 20 apples", "list"),
    ),
    StrictRule(
        "list_rung_only",
        _VALUE_RUNGS,
        "a list answered by a single value, or by a list of another length",
        Example("12, 7, 3", "12\n7\n3", "list"),
        Example("1, 2, 3", "3", "list"),
    ),
    StrictRule(
        "numeric_rung_only",
        ("math_verify",),
        "math-verify on two values the numeric rung judged under the row's tolerances",
        Example("1/2", "0.5", ""),
        Example("8.3e-4", "8.3e-3", ""),
    ),
    StrictRule(
        "one_expression",
        ("math_verify",),
        "at math-verify's rung, a side that is neither one value nor one expression, or an "
        "expression strict can value that does not come to the other side's value; on any rung, "
        "a function of the number (`sqrt(42)`, `42!`, `42²`, `12½`) for the number",
        Example("0.75", "\\frac{3}{4}", ""),
        # "17 | 12" was this rule's example until issue 33 made ` | ` a list separator: it is
        # now refused as a list for one value (list_rung_only).
        Example("12", "17 = 12", ""),
    ),
)
