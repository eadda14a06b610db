"""Property tests of the strict profile, rule by rule (issue 25): for a random gold g and a wrong
answer w, no template of the rule's loophole class that combines them is accepted; a correct
phrasing drawn from the rule's template set is accepted (by the default profile too: strict
never accepts more); and strict never accepts what the default profile rejects.

    python -m pytest tests/scorers/test_strict_properties.py -q
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import grade
from tests.scorers.phrasings import (
    DATE_HEDGES,
    MAGNITUDES,
    MONTH_NAMES,
    NEGATIONS,
    SYMBOL_HEDGES,
    WORD_HEDGES,
    in_words,
)

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])
MODES = st.sampled_from(["", "numeric", "flexible", "exact_short"])
TOLERANCES = st.sampled_from([(0.0, 0.0), (1e-3, 1e-3), (0.05, 0.01)])

integers = st.integers(min_value=2, max_value=9_999_999)
decimals = st.builds(
    lambda n, places: f"{n / 10**places:.{places}f}",
    st.integers(min_value=1_000, max_value=99_999_999),
    st.integers(min_value=1, max_value=3),
)
values = st.one_of(integers.map(str), decimals)


def _far_apart(g: str, w: str) -> bool:
    """w is wrong under every row tolerance used here (and not g times or over 100)."""
    a, b = float(g), float(w)
    return abs(a - b) > 0.1 * max(abs(a), 1.0) and not any(
        abs(a - b * k) <= 0.1 * abs(a) for k in (100, 0.01)
    )


def _accepted(gold: str, candidate: str, mode: str, tol: tuple[float, float], profile: str):
    return grade(
        gold, candidate, reward_mode=mode, abs_tol=tol[0], rel_tol=tol[1], profile=profile
    ).reward


def _refused(gold: str, candidate: str, mode: str, tol: tuple[float, float]) -> None:
    assert _accepted(gold, candidate, mode, tol, "strict") == 0.0, (gold, candidate, mode, tol)


def _kept(gold: str, candidate: str, mode: str, tol: tuple[float, float]) -> None:
    assert _accepted(gold, candidate, mode, tol, "default") == 1.0, (gold, candidate, mode, tol)
    assert _accepted(gold, candidate, mode, tol, "strict") == 1.0, (gold, candidate, mode, tol)


# --- one_number / one_expression: hedges by any separator --------------------------------------


@PROPERTY
@given(
    g=values,
    w=values,
    template=st.sampled_from(
        [*SYMBOL_HEDGES, "{a} or maybe {b}", "{a} {b}", "{a}, {b}", "between {a} and {b}"]
    ),
    gold_first=st.booleans(),
    mode=MODES,
    tol=TOLERANCES,
)
def test_one_number_no_hedge_of_gold_and_wrong_value_is_accepted(
    g, w, template, gold_first, mode, tol
) -> None:
    assume(_far_apart(g, w))
    a, b = (g, w) if gold_first else (w, g)
    # "2 / 1.000" is also the quotient 2: an expression strict values as the gold itself stands
    # (docs/scoring.md, round 3), so it is no hedge of a wrong value.
    assume(not (template == "{a} / {b}?" and math.isclose(float(a) / float(b), float(g))))
    _refused(g, template.format(a=a, b=b), mode, tol)


@PROPERTY
@given(
    g=st.integers(min_value=2, max_value=999),
    w=st.integers(min_value=2, max_value=999),
    template=st.sampled_from(WORD_HEDGES),
    mode=MODES,
    tol=TOLERANCES,
)
def test_one_number_no_spelled_out_hedge_is_accepted(g, w, template, mode, tol) -> None:
    assume(g != w)
    _refused(str(g), template.format(a=g, words=in_words(w)), mode, tol)


@PROPERTY
@given(
    g=values,
    template=st.sampled_from(
        [
            "{g}",
            "{g}.",
            "The answer is {g}",
            "about {g} {unit}",
            "**{g}**",
            "\\boxed{{{g}}}",
            "Answer: {g} {unit}",
            "{g} {unit} in total",
        ]
    ),
    unit=st.sampled_from(["respondents", "orders", "years", "units"]),
    mode=st.sampled_from(["numeric", "flexible"]),
    tol=TOLERANCES,
)
def test_one_number_a_single_value_in_words_is_accepted(g, template, unit, mode, tol) -> None:
    _kept(g, template.format(g=g, unit=unit), mode, tol)


# --- comparison: negations, bounds and comparison signs ----------------------------------------


@PROPERTY
@given(g=values, template=st.sampled_from(NEGATIONS), mode=MODES, tol=TOLERANCES)
def test_comparison_no_negation_or_bound_of_a_plain_gold_is_accepted(g, template, mode, tol):
    _refused(g, template.format(g=g), mode, tol)


OPERATORS = {
    ">": [">", "more than ", "greater than ", "over ", "above "],
    ">=": [">=", "≥", "at least ", "no less than "],
    "<": ["<", "less than ", "fewer than ", "under ", "below "],
    "<=": ["<=", "≤", "at most ", "no more than ", "up to "],
}


@PROPERTY
@given(
    k=st.integers(min_value=2, max_value=999),
    magnitude=st.sampled_from(["", "K", "k"]),
    pair=st.sampled_from([(a, b) for a in OPERATORS for b in OPERATORS if a != b] + [(">", "")]),
    data=st.data(),
    mode=MODES,
    tol=TOLERANCES,
)
def test_comparison_no_other_comparison_of_a_comparison_label_is_accepted(
    k, magnitude, pair, data, mode, tol
) -> None:
    right, wrong = pair
    spelled = data.draw(st.sampled_from(OPERATORS[wrong])) if wrong else ""
    _refused(f"{right}{k}{magnitude}", f"{spelled}{k}{magnitude}", mode, tol)


@PROPERTY
@given(
    k=st.integers(min_value=2, max_value=999),
    magnitude=st.sampled_from(["", "K"]),
    op=st.sampled_from(list(OPERATORS)),
    data=st.data(),
    mode=st.sampled_from(["numeric", "flexible"]),
)
def test_comparison_the_same_comparison_in_words_is_accepted(k, magnitude, op, data, mode):
    spelled = data.draw(st.sampled_from(OPERATORS[op]))
    _kept(f"{op}{k}{magnitude}", f"{spelled}{k}{magnitude}", mode, (0.0, 0.0))


# --- magnitude ------------------------------------------------------------------------------------


@PROPERTY
@given(g=values, template=st.sampled_from(MAGNITUDES), mode=MODES, tol=TOLERANCES)
def test_magnitude_no_magnitude_word_on_a_plain_gold_is_accepted(g, template, mode, tol):
    _refused(g, template.format(g=g), mode, tol)


@PROPERTY
@given(
    k=st.integers(min_value=2, max_value=999),
    written=st.sampled_from([("K", "k"), ("K", " thousand"), ("M", " million"), ("bn", "B")]),
    mode=st.sampled_from(["numeric", "flexible"]),
)
def test_magnitude_the_same_magnitude_written_another_way_is_accepted(k, written, mode):
    gold, candidate = written
    _kept(f"{k}{gold}", f"{k}{candidate}", mode, (0.0, 0.0))


# --- dropped_sign -------------------------------------------------------------------------------


@PROPERTY
@given(
    g=values,
    sign=st.sampled_from(["\u2212", "- ", "minus ", "\u2013", "negative ", "-$"]),
    mode=MODES,
    tol=TOLERANCES,
)
def test_dropped_sign_no_negative_of_a_positive_gold_is_accepted(g, sign, mode, tol) -> None:
    _refused(g, f"{sign}{g}", mode, tol)


# --- dates ----------------------------------------------------------------------------------------

dates = st.builds(
    lambda y, m, d: (y, m, d),
    st.integers(min_value=1990, max_value=2030),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=28),
)


def _iso(date: tuple[int, int, int]) -> str:
    return f"{date[0]}-{date[1]:02d}-{date[2]:02d}"


@PROPERTY
@given(d=dates, e=dates, template=st.sampled_from(DATE_HEDGES), mode=MODES)
def test_dates_no_date_hedge_with_the_gold_is_accepted(d, e, template, mode) -> None:
    assume(d != e)
    _refused(_iso(d), template.format(d=_iso(d), e=_iso(e)), mode, (0.0, 0.0))


@PROPERTY
@given(
    first=dates,
    second=dates,
    other=dates,
    kind=st.sampled_from(["rest wrong", "superset", "subset", "reversed wrong"]),
    mode=st.sampled_from(["", "list", "numeric", "exact_short"]),
)
def test_dates_no_list_right_only_in_its_first_date_is_accepted(first, second, other, kind, mode):
    assume(len({first, second, other}) == 3)
    gold = f"{_iso(first)}, {_iso(second)}"
    candidate = {
        "rest wrong": f"{_iso(first)}, {_iso(other)}",
        "superset": f"{gold}, {_iso(other)}",
        "subset": _iso(first),
        "reversed wrong": f"{_iso(other)}, {_iso(first)}",
    }[kind]
    _refused(gold, candidate, mode, (0.0, 0.0))


@PROPERTY
@given(
    d=dates,
    template=st.sampled_from(
        [
            "{iso}.",
            "The peak was on {iso}.",
            "{y}-{m}-{d}",
            "{y}/{m:02d}/{d:02d}",
            "{iso} 00:00:00",
            "**{iso}**",
        ]
    ),
)
def test_dates_the_same_date_written_another_way_is_accepted(d, template) -> None:
    y, m, day = d
    candidate = template.format(iso=_iso(d), y=y, m=m, d=day)
    _kept(_iso(d), candidate, "numeric", (0.0, 0.0))


@PROPERTY
@given(d=dates, mode=st.sampled_from(["", "numeric"]))
def test_dates_a_month_name_form_is_accepted_wherever_the_published_grader_accepts_it(d, mode):
    y, m, day = d
    month = MONTH_NAMES[m - 1]
    for candidate in (f"{month} {day}, {y}", f"{day} {month} {y}", f"{month[:3]} {day}, {y}"):
        if _accepted(_iso(d), candidate, mode, (0.0, 0.0), "default"):
            assert _accepted(_iso(d), candidate, mode, (0.0, 0.0), "strict") == 1.0, candidate


# --- label_words ----------------------------------------------------------------------------------

UNIT_SYNONYMS = [
    ("years", "yrs"),
    ("years", "yr"),
    ("km", "kilometers"),
    ("kg", "kilograms"),
    ("hours", "h"),
    ("hours", "hrs"),
    ("USD", "dollars"),
    ("minutes", "min"),
    ("days", "day"),
]
OTHER_UNITS = [("years", "months"), ("km", "miles"), ("kg", "g"), ("USD", "EUR"), ("days", "hours")]


@PROPERTY
@given(n=values, units=st.sampled_from(OTHER_UNITS), mode=MODES, tol=TOLERANCES)
def test_label_words_another_unit_is_not_accepted(n, units, mode, tol) -> None:
    _refused(f"{n} {units[0]}", f"{n} {units[1]}", mode, tol)


@PROPERTY
@given(
    n=values, units=st.sampled_from(UNIT_SYNONYMS), mode=st.sampled_from(["numeric", "flexible"])
)
def test_label_words_a_unit_synonym_is_accepted(n, units, mode) -> None:
    _kept(f"{n} {units[0]}", f"{n} {units[1]}", mode, (0.0, 0.0))


@PROPERTY
@given(
    n=st.integers(min_value=2, max_value=99),
    labels=st.sampled_from([("Class", "Type"), ("iPhone", ""), ("Week", "Day"), ("Model", "")]),
    mode=MODES,
)
def test_label_words_another_label_with_the_same_number_is_not_accepted(n, labels, mode) -> None:
    gold, other = labels
    _refused(f"{gold} {n}", f"{other} {n}".strip(), mode, (0.0, 0.0))


@PROPERTY
@given(
    q=st.integers(min_value=1, max_value=4),
    year=st.integers(min_value=2000, max_value=2030),
    mode=st.sampled_from(["numeric", "flexible"]),
)
def test_label_words_a_quarter_written_another_way_is_accepted(q, year, mode) -> None:
    ordinal = ["1st", "2nd", "3rd", "4th"][q - 1]
    _kept(f"Q{q}", f"{ordinal} quarter", mode, (0.0, 0.0))
    _kept(f"Q{q} {year}", f"{year}-Q{q}", mode, (0.0, 0.0))


# --- percent_bridge -------------------------------------------------------------------------------


@PROPERTY
@given(g=st.integers(min_value=2, max_value=99), mode=st.sampled_from(["", "numeric"]))
def test_percent_bridge_a_hundredth_without_a_percentage_is_not_accepted(g, mode) -> None:
    _refused(str(g), f"{g / 100:g}", mode, (0.0, 0.0))
    _refused(str(g), f"{g / 100:g}%", mode, (0.0, 0.0))


@PROPERTY
@given(
    pct=st.integers(min_value=1, max_value=99),
    written=st.sampled_from(["{p}%", "{p} %", "{p} percent"]),
    mode=st.sampled_from(["", "numeric"]),
)
def test_percent_bridge_a_percentage_and_its_fraction_are_accepted(pct, written, mode) -> None:
    fraction = f"{pct / 100:.2f}"
    _kept(fraction, written.format(p=pct), mode, (1e-3, 1e-3))
    _kept(written.format(p=pct), fraction, mode, (1e-3, 1e-3))


# --- comma_merge and lists ------------------------------------------------------------------------


@PROPERTY
@given(g=st.integers(min_value=10, max_value=99_999), cut=st.integers(min_value=1, max_value=4))
def test_comma_merge_digits_split_by_a_comma_are_not_the_number(g, cut) -> None:
    text = str(g)
    assume(cut < len(text) and len(text) - cut != 3)
    _refused(text, f"{text[:cut]},{text[cut:]}", "numeric", (0.0, 0.0))


@PROPERTY
@given(
    items=st.lists(st.integers(min_value=1, max_value=999), min_size=2, max_size=5, unique=True),
    other=st.integers(min_value=1000, max_value=9999),
    kind=st.sampled_from(["one wrong", "superset", "subset", "last only"]),
    mode=st.sampled_from(["list", "list_csv", ""]),
)
def test_list_items_a_list_with_a_wrong_missing_or_extra_item_is_not_accepted(
    items, other, kind, mode
) -> None:
    gold = ", ".join(map(str, items))
    candidate = {
        "one wrong": ", ".join(map(str, [*items[:-1], other])),
        "superset": f"{gold}, {other}",
        "subset": ", ".join(map(str, items[:-1])),
        "last only": str(items[-1]),
    }[kind]
    _refused(gold, candidate, mode, (0.0, 0.0))


@PROPERTY
@given(
    items=st.lists(st.integers(min_value=1, max_value=999), min_size=2, max_size=5, unique=True),
    separator=st.sampled_from([", ", ",", "; ", "\n", "AND"]),
    reverse=st.booleans(),
    mode=st.sampled_from(["list", "list_csv", ""]),
)
def test_list_items_a_list_in_another_separator_or_order_is_accepted(
    items, separator, reverse, mode
) -> None:
    gold = ", ".join(map(str, items))
    shown = list(reversed(items)) if reverse else items
    if separator == "AND":
        candidate = ", ".join(map(str, shown[:-1])) + f" and {shown[-1]}"
    else:
        candidate = separator.join(map(str, shown))
    # The published grader takes these through its list rung or math-verify: strict keeps
    # whichever it takes.
    if _accepted(gold, candidate, mode, (0.0, 0.0), "default"):
        assert _accepted(gold, candidate, mode, (0.0, 0.0), "strict") == 1.0, candidate


# --- one_expression: expressions strict values --------------------------------------------------


@PROPERTY
@given(
    a=st.integers(min_value=1, max_value=999),
    b=st.integers(min_value=2, max_value=999),
    g=st.integers(min_value=2, max_value=9999),
    junk=st.sampled_from(["?", "", " ?", "."]),
)
def test_one_expression_a_fraction_math_verify_reads_as_its_last_number_is_not_accepted(
    a, b, g, junk
) -> None:
    assume(abs(a / b - g) > 1e-3)
    _refused(str(g), f"{a} / {g}{junk}", "", (1e-3, 1e-3))
    _refused(str(g), f"{g} / {b}{junk}", "", (1e-3, 1e-3))


# --- the profile as a whole ------------------------------------------------------------------------

texts = st.one_of(
    st.text(alphabet="0123456789.,-%$ eEkKM/()<>=|+~xQ\n", max_size=16),
    st.text(max_size=12),
)


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(gold=texts, candidate=texts, mode=MODES, tol=TOLERANCES)
def test_strict_never_accepts_what_default_rejects(gold, candidate, mode, tol) -> None:
    strict_reward = _accepted(gold, candidate, mode, tol, "strict")
    assert strict_reward <= _accepted(gold, candidate, mode, tol, "default")
