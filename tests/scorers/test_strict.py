"""The strict profile: each loophole of issue 12 closed by its named rule, and the right answers
the default profile accepts still accepted (docs/scoring.md "The strict profile").

    python -m pytest tests/scorers/test_strict.py -q

Every loophole test grades the pair under both profiles: the default profile must accept it (the
loophole is real in the published grader) and strict must refuse it with the rule named.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import GradeResult, grade
from smoldataenvs_tasks.scorers import grader, strict
from smoldataenvs_tasks.scorers.grader import UnknownProfileError
from smoldataenvs_tasks.scorers.rules import STRICT_RULES, StrictRule

pytestmark = pytest.mark.unit


def loophole(gold: str, candidate: str, rule: str, **row) -> None:
    default = grade(gold, candidate, **row)
    assert default.reward == 1.0, f"default should accept {candidate!r} for {gold!r}: {default}"
    assert grade(gold, candidate, profile="strict", **row) == GradeResult(0.0, "miss", rule)


def kept(gold: str, candidate: str, method: str, **row) -> None:
    assert grade(gold, candidate, **row) == GradeResult(1.0, method)
    assert grade(gold, candidate, profile="strict", **row) == GradeResult(1.0, method)


# --- hedging ------------------------------------------------------------------------------------


def test_hedge_12_or_maybe_17_passes_neither_gold_12_nor_gold_17() -> None:
    loophole("12", "12 or maybe 17", "one_number")  # default: numeric reads the first number
    loophole("17", "12 or maybe 17", "one_expression")  # default: math-verify reads the last


def test_sequence_1_2_3_4_5_does_not_pass_for_5() -> None:
    loophole("5", "1 2 3 4 5", "one_expression")


def test_hedge_as_comma_pair_does_not_pass() -> None:
    loophole("5", "1, 2, 3, 4, 5", "list_rung_only")
    loophole("46708", "33555247, 46708", "list_rung_only", reward_mode="numeric", abs_tol=0)


def test_hedge_as_range_does_not_pass() -> None:
    loophole("35", "35-40", "one_number", reward_mode="numeric", abs_tol=0, rel_tol=0)
    loophole("40", "between 35 and 40", "one_number")


# --- dates --------------------------------------------------------------------------------------


def test_date_gold_2019_05_01_is_not_its_year() -> None:
    loophole("2019-05-01", "2019", "dates")
    loophole("2019-05-01", "2019", "dates", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_date_gold_with_a_wrong_day_or_month_does_not_pass() -> None:
    loophole("2019-05-01", "2019-05-02", "dates")
    loophole("2019-05-01", "2019-12-31", "dates", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_date_gold_without_its_time_does_not_pass() -> None:
    loophole("2019-05-01 14:30:00", "2019-05-01", "dates", reward_mode="numeric", abs_tol=0)


def test_same_date_written_another_way_is_kept() -> None:
    kept("2019-05-01", "2019-5-1", "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)
    kept("2019-05-01", "2019/05/01 00:00:00", "numeric", reward_mode="numeric", abs_tol=0)


def test_year_gold_answered_with_a_date_does_not_pass() -> None:
    loophole("2019", "2019-05-01", "dates", abs_tol=0, rel_tol=0)


# --- lists --------------------------------------------------------------------------------------


def test_list_gold_1_2_3_is_not_its_last_item_even_in_list_mode() -> None:
    loophole("1, 2, 3", "3", "list_rung_only", reward_mode="list")


def test_list_gold_is_not_matched_by_math_verify_on_its_last_element() -> None:
    loophole("0.38, 0.66", "0.58, 0.66", "list_items", reward_mode="list", abs_tol=0)


def test_list_items_10_apples_20_pears_are_not_10_pears_20_apples() -> None:
    loophole("10 apples, 20 pears", "10 pears, 20 apples", "list_items", reward_mode="list")


def test_list_items_of_dates_on_other_days_do_not_pass() -> None:
    loophole("2013-01-01, 2000-02-01", "2013-03-10, 2000-04-11", "list_items", reward_mode="list")


def test_lists_that_say_the_same_are_kept() -> None:
    kept("a, b, c", "c, b, a", "list", reward_mode="list")
    kept("[1, 2]", "1, 2", "list", reward_mode="list")
    kept("10 apples, 20 pears", "20 pears, 10 apples", "list", reward_mode="list")
    kept("0.5, 0.25", "0.50, 0.250", "list", reward_mode="list_csv", abs_tol=0, rel_tol=0)


# --- the x100 bridge -----------------------------------------------------------------------------


@pytest.mark.parametrize(("gold", "candidate"), [("1", "0.01"), ("0.5", "50"), ("12", "0.12")])
def test_x100_bridge_needs_a_percentage(gold: str, candidate: str) -> None:
    loophole(gold, candidate, "percent_bridge", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_x100_bridge_goes_from_the_percentage_to_its_fraction_only() -> None:
    # 0.45% is 0.0045, not 45: default's ÷100 retry accepted it.
    loophole("45", "0.45%", "percent_bridge", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_percentage_and_its_fraction_are_kept() -> None:
    kept("45%", "0.45", "numeric_scaled")
    kept("0.45", "45%", "numeric_scaled")
    kept("0.45", "45 percent", "numeric_scaled")
    kept("45%", "45", "numeric")


# --- labels -------------------------------------------------------------------------------------


def test_label_gold_50k_comparison_sign_must_agree() -> None:
    loophole(">50K", "<=50K", "comparison", reward_mode="numeric", abs_tol=0, rel_tol=0)
    loophole(">50K", "50K", "comparison", reward_mode="numeric", abs_tol=0, rel_tol=0)
    kept(">50K", "> 50K", "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_label_gold_class_2_is_not_type_2() -> None:
    loophole("Class 2", "Type 2", "label_words", reward_mode="numeric", abs_tol=0, rel_tol=0)
    loophole("Class 2", "Type 2", "label_words", reward_mode="flexible", abs_tol=0, rel_tol=0)


def test_label_gold_iphone_12_is_not_12() -> None:
    loophole("iPhone 12", "12", "label_words")  # default: math-verify reads the digits
    loophole("iPhone 12", "12", "label_words", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_different_units_are_different_answers() -> None:
    loophole("12 years", "12 months", "label_words", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_a_unit_or_a_word_before_a_bare_gold_number_is_kept() -> None:
    kept("19", "19 respondents", "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)
    kept("19 respondents", "19", "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)
    kept("19", "about 19", "numeric")
    kept("5 passengers", "5", "math_verify")
    kept("Class 2", "class 2", "exact")


# --- signs and commas ---------------------------------------------------------------------------


def test_comma_merge_15_is_not_1_5() -> None:
    loophole("15", "1,5", "comma_merge")
    loophole("1,5", "15", "comma_merge", reward_mode="numeric", abs_tol=0, rel_tol=0)


def test_thousands_separators_are_kept() -> None:
    kept("1,234", "1234", "numeric")
    kept("12345678", "12,345,678", "numeric")
    kept("1000000", "1 000 000", "math_verify")


def test_unicode_minus_5_is_not_5() -> None:
    loophole("5", "\u22125", "dropped_sign")


def test_spaced_minus_5_is_not_5() -> None:
    loophole("5", "- 5", "dropped_sign")  # default: numeric reads 5 (and math-verify too)


def test_negative_dollar_gold_is_not_read_as_positive_in_numeric_mode() -> None:
    loophole("-$4058", "4058", "dropped_sign", reward_mode="numeric", abs_tol=0, rel_tol=0)


# --- math-verify's own slips --------------------------------------------------------------------


def test_scientific_mantissa_8_3e_4_is_not_8_3e_3() -> None:
    # math-verify 0.9.0 reads both as 8.3.
    loophole("8.3e-4", "8.3e-3", "numeric_rung_only")


def test_symbolic_equivalents_are_kept() -> None:
    kept("1/2", "0.5", "math_verify")
    kept("\\frac{1}{2}", "0.5", "math_verify")
    kept("$\\frac{1}{2}$", "$\\frac{2}{4}$", "math_verify")
    kept("$\\sqrt{49}$", "7", "math_verify")


# --- the profile itself -------------------------------------------------------------------------


def test_strict_reports_the_first_rule_that_refused() -> None:
    # numeric refuses (one_number) before math-verify would have been asked.
    assert grade("12", "12 or maybe 17", profile="strict").rule == "one_number"
    assert grade("12", "13", profile="strict") == GradeResult(0.0, "miss")


def test_default_profile_never_reports_a_rule() -> None:
    assert grade("12", "12 or maybe 17").rule is None
    assert grade("12", "13").rule is None


def test_every_reported_rule_is_a_named_rule() -> None:
    assert len(set(strict.RULES)) == len(strict.RULES)
    for gold, candidate, mode in [
        ("12", "12 or maybe 17", ""),
        ("2019-05-01", "2019", ""),
        ("15", "1,5", ""),
        ("1", "0.01", "numeric"),
    ]:
        assert grade(gold, candidate, reward_mode=mode, profile="strict").rule in strict.RULES


def test_unknown_profile_is_a_clear_error() -> None:
    with pytest.raises(UnknownProfileError, match="choose one of default, strict"):
        grade("1", "1", profile="lenient")


def test_profiles_are_remembered_apart() -> None:
    grader.clear_memo()
    assert grade("12", "17 | 12").reward == 1.0  # math-verify reads the last number
    assert grade("12", "17 | 12", profile="strict").reward == 0.0
    assert grade("12", "17 | 12").reward == 1.0
    assert grader.memo_info()["hits"] == 1


# --- issue 25: the classes the audit found open, and the right answers strict refused -----------


@pytest.mark.parametrize(
    "candidate",
    ["17 | 12", "17 -> 12", "17 \u2192 12", "17 = 12", "48 \u2248 12", "7885.54? 12?",
     "```\n17\n```\n```\n12\n```"],
)  # fmt: skip
def test_hedge_joined_by_a_symbol_does_not_pass_on_math_verify(candidate: str) -> None:
    default = grade("12", candidate)
    assert default.reward == 1.0, default
    assert grade("12", candidate, profile="strict").reward == 0.0


def test_hedge_with_a_bracketed_second_number_does_not_pass() -> None:
    loophole("12", "12 (17)", "one_number")
    loophole("34639.76", "34639.76 \u00b1 12829.54", "one_number")
    loophole("409", "409\u2013286", "one_number")


def test_spelled_out_hedge_12_or_seventeen_does_not_pass() -> None:
    loophole("12", "12 or seventeen", "one_number")
    loophole("250", "eighty, or possibly 250", "one_number")


@pytest.mark.parametrize(
    ("candidate", "rule"),
    [("not 12", "comparison"), ("at least 12", "comparison"), ("\u2260 12", "comparison"),
     ("12+", "comparison"), ("< 12", "comparison"), ("12 or more", "comparison"),
     ("minus 12", "dropped_sign")],
)  # fmt: skip
def test_negation_or_bound_of_12_does_not_pass(candidate: str, rule: str) -> None:
    loophole("12", candidate, rule)


def test_comparison_label_lt_12_is_not_gt_12() -> None:
    # No letters on either side: the text rules used to apply to worded sides only.
    loophole("> 12", "< 12", "comparison")


@pytest.mark.parametrize(
    ("gold", "candidate"), [("12", "12 thousand"), ("12", "12k"), ("3.14", "3.14M"), ("7", "7 bn")]
)
def test_magnitude_word_on_a_plain_gold_does_not_pass(gold: str, candidate: str) -> None:
    loophole(gold, candidate, "magnitude")


@pytest.mark.parametrize(
    "candidate", ["2019-05-01 or 2019-05-02", "2019-05-01 to 2019-05-02", "2019-05-01\n2019-05-02"]
)
def test_date_hedge_with_the_gold_first_does_not_pass(candidate: str) -> None:
    # The dates rule used to settle on the first date of each side.
    loophole("2019-05-01", candidate, "dates")


def test_date_list_right_only_in_its_first_date_does_not_pass() -> None:
    gold = "2020-01-01, 2020-02-01"
    loophole(gold, "2020-01-01, 2020-02-01, 2020-03-01", "list_rung_only")
    loophole(gold, "2020-01-01, 2020-03-05", "list_items", reward_mode="list")


def test_fraction_math_verify_reads_as_its_last_number_does_not_pass() -> None:
    loophole("4271", "6387 / 4271?", "one_expression")


def test_power_gold_2_squared_is_not_2() -> None:
    # math-verify reads "2^{2}" without $ as 2; strict values the power itself.
    loophole("2^{2}", "2", "one_expression")


@pytest.mark.parametrize("candidate", ["2019-05-01.", "The peak was on 2019-05-01."])
def test_date_followed_by_a_period_is_kept(candidate: str) -> None:
    kept("2019-05-01", candidate, "math_verify")
    kept("12/13/1994", "12/13/1994.", "math_verify")


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("2019-05-01", "May 1, 2019"), ("2019-05-01", "1 May 2019"), ("2019-05", "May 2019"),
     ("March 2020", "2020-03")],
)  # fmt: skip
def test_month_name_dates_are_kept(gold: str, candidate: str) -> None:
    kept(gold, candidate, "math_verify")


def test_month_abbreviation_is_kept() -> None:
    kept("March 2020", "Mar 2020", "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)


@pytest.mark.parametrize(
    ("gold", "candidate", "method"),
    [("30-40", "30\u201340", "numeric"), ("30-40", "30 to 40", "numeric"),
     ("Q3 2021", "2021 Q3", "math_verify"), ("Q3 2021", "2021-Q3", "math_verify"),
     (">50K", "more than 50K", "numeric"), ("Q3", "3rd quarter", "numeric")],
)  # fmt: skip
def test_labels_written_another_way_are_kept(gold: str, candidate: str, method: str) -> None:
    kept(gold, candidate, method, reward_mode="numeric", abs_tol=0, rel_tol=0)


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("12 years", "12 yrs"), ("5 km", "5 kilometers"), ("5768 USD", "5768 dollars"),
     ("72 kg", "72 kilograms"), ("3.5 hours", "3.5 h"), ("3.5 hours", "3.5 hrs")],
)  # fmt: skip
def test_unit_synonyms_are_kept(gold: str, candidate: str) -> None:
    kept(gold, candidate, "math_verify")
    kept(gold, candidate, "numeric", reward_mode="numeric", abs_tol=0, rel_tol=0)


@pytest.mark.parametrize("candidate", ["12; 7; 3", "12, 7 and 3", "12\n7\n3", "12 | 7 | 3"])
def test_lists_in_another_separator_are_compared_item_by_item(candidate: str) -> None:
    kept("12, 7, 3", candidate, "math_verify", reward_mode="list")


# docs/scoring.md "The rules": each rule's record (`scorers/rules.py`) with one answer it
# accepts and one it refuses, under the mode given (tolerances 0).
@pytest.mark.parametrize("rule", STRICT_RULES, ids=[rule.name for rule in STRICT_RULES])
def test_documented_rule_examples(rule: StrictRule) -> None:
    gold, accepted, mode = rule.accepts
    row = {"reward_mode": mode, "abs_tol": 0, "rel_tol": 0}
    assert grade(gold, accepted, profile="strict", **row).reward == 1.0
    refused_gold, refused, mode = rule.refused
    row = {"reward_mode": mode, "abs_tol": 0, "rel_tol": 0}
    default = grade(refused_gold, refused, **row)
    assert default.reward == 1.0  # the loophole is real
    assert default.method in rule.rungs  # on a rung the record says the rule guards
    assert grade(refused_gold, refused, profile="strict", **row) == GradeResult(
        0.0, "miss", rule.name
    )
    assert rule.refuses


def test_every_rule_is_documented_with_examples() -> None:
    assert [rule.name for rule in STRICT_RULES] == list(strict.RULES)
    assert len(set(strict.RULES)) == len(strict.RULES)


# --- the quick path for candidates of plain words and numbers ------------------------------------

_WORDS = [
    "or",
    "maybe",
    "about",
    "years",
    "the",
    "answer",
    "is",
    "and",
    "to",
    "k",
    "M",
    "not",
    "least",
    "at",
    "(sd",
    "3)",
    "min",
    "per",
    "cent",
    "May",
    "seventeen",
    "minus",
    "-",
    "?",
]
_NUMBERS = ["12", "-12", "7", "12.5", "1000", "000", "(12)", "12?", "2019"]
_mixed = st.lists(
    st.one_of(
        st.sampled_from(_WORDS + _NUMBERS),
        st.from_regex(r"-?\d{1,5}(\.\d{1,2})?", fullmatch=True),
    ),
    max_size=4,
)
# gold, and its first number as the published reading takes it
GOLDS = [
    ("12", "12"),
    ("-12", "-12"),
    ("12 years", "12"),
    ("45%", "45"),
    ("$12", "12"),
    ("Class 12", "12"),
    ("2019-05-01", "2019"),
    ("12, 7", "12"),
]


@settings(deadline=None, max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(
    gold=st.sampled_from(GOLDS),
    before=st.lists(st.sampled_from(_WORDS), max_size=3),
    after=_mixed,
    tol=st.sampled_from([(0.0, 0.0), (0.05, 0.01)]),
)
@pytest.mark.slow
def test_plain_words_quick_path_refuses_exactly_as_the_full_reading(gold, before, after, tol):
    gold, number = gold
    # The numeric rung accepted: the candidate's first number is the gold's.
    candidate = " ".join([*before, number, *after])
    assume(grader._first_number(candidate) == grader._first_number(gold))
    gold_words = gold.lower().split()
    plain = len(gold_words) == 1 and grader._PLAIN_NUMBER.fullmatch(gold_words[0])
    gold_value = grader._first_number(gold) if plain else None
    quick = strict.plain_words_refusal(
        gold, gold_value, candidate, candidate.lower().split(), tol[1], tol[0]
    )
    assert quick == strict.numeric_refusal(gold, candidate.strip(), False, tol[1], tol[0])
