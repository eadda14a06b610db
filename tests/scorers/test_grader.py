"""The grader ladder: every rung, the issue's examples, the §3.3 edge cases, the whileai fixtures.

python -m pytest tests/scorers/test_grader.py -q
"""

from __future__ import annotations

import math
import warnings

import pytest

from smoldataenvs_tasks import GradeResult, grade
from smoldataenvs_tasks.scorers import grader, symbolic

pytestmark = pytest.mark.unit

# A pair math-verify 0.9.0 cannot finish: 9**(9**9) has ~370 million digits, computed in C.
PATHOLOGICAL = ("$9^{9^{9}}$", "1")

# (gold, candidate, expected reward, expected method): issue 2 "Examples that must hold",
# graded with the default tolerances (rel_tol = abs_tol = 1e-3) and mode "".
ISSUE_EXAMPLES = [
    ("East", " east ", 1.0, "exact"),
    ("East", "East.", 0.0, "miss"),
    ("1,234", "1234", 1.0, "numeric"),
    ("12", "12 years", 1.0, "numeric"),
    ("45%", "0.45", 1.0, "numeric_scaled"),
    ("1", "0.01", 1.0, "numeric_scaled"),
    ("a, b, c", "c, b, a", 1.0, "list"),
    ("[1, 2]", "1, 2", 1.0, "list"),
    ("1/2", "0.5", 1.0, "math_verify"),
    ("yes", "true", 0.0, "miss"),
    ("Not Applicable", "N/A", 0.0, "miss"),
]


@pytest.mark.parametrize(("gold", "candidate", "reward", "method"), ISSUE_EXAMPLES)
def test_issue_example(gold: str, candidate: str, reward: float, method: str) -> None:
    assert grade(gold, candidate) == GradeResult(reward, method)


def test_issue_example_5768_within_row_tolerance() -> None:
    result = grade("5768.04", "5768", reward_mode="numeric", abs_tol=0.05, rel_tol=0.01)
    assert result == GradeResult(1.0, "numeric")


# The published grader's edge-case table (as vendored copies document it), row by row, with each
# row's mode and tolerances, checked
# against math-verify 0.9.0 as installed.
EDGE_CASES = [
    ("East", " east ", "exact_short", 0, 0, 1.0, "exact"),
    ("East", "East.", "exact_short", 1e-3, 1e-3, 0.0, "miss"),
    ("5768.04", "5768", "numeric", 0.05, 0.01, 1.0, "numeric"),
    ("19", "19.0", "numeric", 0, 0, 1.0, "numeric"),
    ("19", "19 respondents", "numeric", 0, 0, 1.0, "numeric"),
    ("1234", "1,234", "numeric", 0, 0, 1.0, "numeric"),
    ("1,234", "1234", "numeric", 0, 0, 1.0, "numeric"),
    ("12", "12 years", "exact_short", 0, 0, 1.0, "numeric"),
    ("45%", "45", "", 0, 0, 1.0, "numeric"),
    ("45%", "0.45", "", 0, 0, 1.0, "numeric_scaled"),
    ("45.2", "0.452", "numeric", 1e-3, 1e-3, 1.0, "numeric_scaled"),
    ("1", "0.01", "numeric", 0, 0, 1.0, "numeric_scaled"),
    ("0.5", "50", "numeric", 0, 0, 1.0, "numeric_scaled"),
    (">50K", ">50k", "exact_short", 1e-3, 1e-3, 1.0, "exact"),
    (">50K", "50K", "exact_short", 1e-3, 1e-3, 0.0, "miss"),
    ("yes", "Yes", "exact_bool", 1e-3, 1e-3, 1.0, "exact"),
    ("yes", "True", "exact_bool", 1e-3, 1e-3, 0.0, "miss"),
    ("a, b, c", "c, b, a", "list", 1e-3, 1e-3, 1.0, "list"),
    ("[1, 2]", "1, 2", "list", 1e-3, 1e-3, 1.0, "list"),
    ("a, b", "a, b, c", "list", 1e-3, 1e-3, 0.0, "miss"),
    ("Not Applicable", "N/A", "exact_short", 1e-3, 1e-3, 0.0, "miss"),
    ("1/2", "0.5", "", 1e-3, 1e-3, 1.0, "math_verify"),
    ("\\frac{1}{2}", "0.5", "", 1e-3, 1e-3, 1.0, "math_verify"),
    ("2019-05-01", "2019", "", 1e-3, 1e-3, 1.0, "math_verify"),
    ("2.14", 'echo -n "2.14" > answer.txt', "numeric", 1e-3, 1e-3, 1.0, "numeric"),
]


@pytest.mark.parametrize(
    ("gold", "candidate", "mode", "atol", "rtol", "reward", "method"), EDGE_CASES
)
def test_reference_edge_case(gold, candidate, mode, atol, rtol, reward, method) -> None:
    result = grade(gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol)
    assert result == GradeResult(reward, method)


# The whileai fixture task fx_orders_kettle_revenue (gold 5768.04, numeric, atol .05, rtol .01).
WHILEAI_KETTLE = {"reward_mode": "numeric", "abs_tol": 0.05, "rel_tol": 0.01}


def test_whileai_kettle_rounded_to_two_decimals_is_exact() -> None:
    assert grade("5768.04", "5768.04", **WHILEAI_KETTLE) == GradeResult(1.0, "exact")


def test_whileai_kettle_rounded_to_integer_is_within_tolerance() -> None:
    assert grade("5768.04", "5768", **WHILEAI_KETTLE) == GradeResult(1.0, "numeric")


def test_whileai_kettle_forgetting_units_is_a_miss() -> None:
    assert grade("5768.04", "623.97", **WHILEAI_KETTLE) == GradeResult(0.0, "miss")


def test_whileai_top_region_counting_orders_is_a_miss() -> None:
    assert grade("East", "West", reward_mode="exact_short", abs_tol=0, rel_tol=0).reward == 0.0


# --- rung by rung ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [(None, "x"), ("x", None), ("", "x"), ("x", ""), ("   ", "x"), ("x", "\n\t "), (None, None)],
)
def test_miss_when_a_side_is_none_or_blank(gold, candidate) -> None:
    assert grade(gold, candidate) == GradeResult(0.0, "miss")


@pytest.mark.parametrize(
    ("gold", "candidate", "reward"),
    [
        ("New  York", "new york", 1.0),
        ("New\tYork\n", "  NEW YORK", 1.0),
        ("St. Louis", "St Louis", 0.0),  # punctuation counts
        ("Ünïcode", "üNÏCODE", 1.0),
    ],
)
def test_exact_rung_normalises_case_and_whitespace_only(gold, candidate, reward) -> None:
    result = grade(gold, candidate, reward_mode="exact_short")
    assert result.reward == reward
    if reward:
        assert result.method == "exact"


@pytest.mark.parametrize(
    ("gold", "candidate", "mode", "atol", "rtol", "reward"),
    [
        ("100", "100.0004", "", 1e-3, 0, 1.0),  # abs_tol
        ("100", "100.002", "", 1e-3, 0, 0.0),
        ("1000", "1000.9", "", 0, 1e-3, 1.0),  # rel_tol relative to the gold
        ("1000", "1001.1", "", 0, 1e-3, 0.0),
        ("1e6", "1000000", "", 0, 0, 1.0),  # an exponent is read: 1e6 is a million
        ("$1,250", "1250", "", 0, 0, 1.0),  # clean-number gold after removing $ and commas
        ("-3.5", "-3.5 degrees", "", 0, 0, 1.0),
        ("about 12", "12", "numeric", 0, 0, 1.0),  # mode numeric reads the first numbers
        ("about 12", "12", "flexible", 0, 0, 1.0),
        ("0", "0.0000", "", 0, 0, 1.0),
    ],
)
def test_numeric_rung(gold, candidate, mode, atol, rtol, reward) -> None:
    result = grade(gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol)
    assert result.reward == reward
    if reward:
        assert result.method == "numeric"


# Issue 12: upstream's clean-number test strips `%`/`$` from the ends only, then the spaces that
# uncovers ("65 %" is clean), and a sign outside a `$` stays outside ("-$4058" is not clean).
@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("65 %", "65.0"), ("7 %", "7"), ("$ 5", "5"), ("578.03 $", "578.03"), ("-5 %", "-5")],
)
def test_gold_with_a_space_beside_its_percent_or_dollar_sign_is_a_clean_number(
    gold, candidate
) -> None:
    assert grade(gold, candidate, abs_tol=0, rel_tol=0) == GradeResult(1.0, "numeric")


def test_negative_dollar_gold_is_not_read_as_positive_4058() -> None:
    assert grade("-$4058", "4058", abs_tol=0, rel_tol=0) == GradeResult(0.0, "miss")


def test_blank_gold_is_a_miss_even_against_a_blank_answer() -> None:
    # Deliberate deviation (docs/scoring.md): upstream's `if not gold` lets "  " reach the exact
    # rung, where a blank answer matches it.
    assert grade("  ", " ") == GradeResult(0.0, "miss")


def test_numeric_rung_does_not_apply_to_a_non_clean_gold_in_a_label_mode() -> None:
    # "about 12" is not a clean number, so mode exact_short never compares numbers; math-verify
    # then extracts 12 from both sides, so the pair still passes, but on the symbolic rung.
    assert grade("about 12", "12", reward_mode="exact_short", abs_tol=0, rel_tol=0) == GradeResult(
        1.0, "math_verify"
    )


@pytest.mark.parametrize(
    ("gold", "candidate", "reward"),
    [
        ("45%", "0.45", 1.0),
        ("0.45", "45", 1.0),  # the gold is the fraction, the candidate the percent
        ("12.5", "0.125", 1.0),
        ("45", "0.46", 0.0),
        ("0.5", "0.005", 0.0),  # both below 1: the bridge needs exactly one side below 1
    ],
)
def test_numeric_scaled_rung(gold, candidate, reward) -> None:
    result = grade(gold, candidate, reward_mode="numeric", abs_tol=0, rel_tol=0)
    assert result.reward == reward
    if reward:
        assert result.method == "numeric_scaled"


@pytest.mark.parametrize(
    ("gold", "candidate", "mode", "reward"),
    [
        ("3.5, 7", "3.50, 7.0", "", 1.0),  # items compared by first number
        ("x, y", "Y, X", "", 1.0),  # case-insensitive sort
        ("a, b,", "b, a", "list", 1.0),  # empty items dropped
        ("a", "a, b", "list", 0.0),  # needs >= 2 gold items
        ("a, b", "a, c", "list", 0.0),
        ("a;b", "b;a", "list_csv", 0.0),  # only commas separate items
    ],
)
def test_list_rung(gold, candidate, mode, reward) -> None:
    result = grade(gold, candidate, reward_mode=mode, abs_tol=0, rel_tol=0)
    assert result.reward == reward
    if reward:
        assert result.method == "list"


def test_list_rung_uses_tolerances_per_item() -> None:
    assert grade("1.00, 2.00", "1.004, 1.996", abs_tol=0.005, rel_tol=0).method == "list"
    assert grade("1.00, 2.00", "1.00, 2.01", abs_tol=0.005, rel_tol=0).reward == 0.0


def test_math_verify_rung_matches_equivalent_expressions() -> None:
    assert grade("\\frac{3}{4}", "0.75") == GradeResult(1.0, "math_verify")
    assert grade("2/3", "0.7") == GradeResult(0.0, "miss")


def test_math_verify_timeout_rung(short_symbolic_deadline: float) -> None:
    assert grade(*PATHOLOGICAL) == GradeResult(0.0, "math_verify_timeout")


@pytest.mark.slow
def test_timeouts_are_never_memoised(short_symbolic_deadline: float) -> None:
    pool = symbolic.default_pool()
    before = pool.replaced
    assert grade(*PATHOLOGICAL).method == "math_verify_timeout"
    assert grade(*PATHOLOGICAL).method == "math_verify_timeout"
    # Each call reached a worker and timed out (a memo hit would not have killed one).
    assert pool.replaced == before + 2


def test_identical_calls_are_memoised() -> None:
    grader.clear_memo()
    first = grade("3/4", "0.75")
    assert grader.memo_info()["hits"] == 0
    again = grade("3/4", "0.75")
    assert again == first
    assert grader.memo_info()["hits"] == 1
    grade("3/4", "0.75", rel_tol=0.5)  # another tolerance is another call
    assert grader.memo_info()["hits"] == 1


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grader, "_MEMO_MAX_ENTRIES", 10)
    grader.clear_memo()
    for i in range(25):
        grade(f"label {i}", f"other {i}")
        assert 0 < grader.memo_info()["size"] <= 10
    # The pairs graded last are still remembered; the first ones are gone.
    hits = grader.memo_info()["hits"]
    grade("label 24", "other 24")
    assert grader.memo_info()["hits"] == hits + 1
    grade("label 0", "other 0")
    assert grader.memo_info()["hits"] == hits + 1


def test_memo_keeps_a_pair_in_use_across_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grader, "_MEMO_MAX_ENTRIES", 10)
    grader.clear_memo()
    grade("kept", "not kept")
    for i in range(40):
        grade(f"label {i}", f"other {i}")
        hits = grader.memo_info()["hits"]
        grade("kept", "not kept")  # RL re-samples the same answer all along
        assert grader.memo_info()["hits"] == hits + 1


def test_exact_and_numeric_acceptances_are_not_memoised() -> None:
    # Recomputing them costs less than a memo look-up; everything below them is remembered.
    grader.clear_memo()
    grade("12", "12.0")
    grade("12", "12.0")
    grade("East", " east ")
    assert grader.memo_info() | {"max_entries": 0} == {
        "hits": 0,
        "misses": 0,
        "size": 0,
        "max_entries": 0,
    }


# --- keywords and coercion ---------------------------------------------------------------------


def test_upstream_keywords_are_accepted_and_ignored() -> None:
    result = grade("East", "east", question="Which region?", judge=None, judge_model="gpt-4o-mini")
    assert result == GradeResult(1.0, "exact")


@pytest.mark.parametrize("profile", ["default", "strict"])
def test_issue_27_atol_10_vs_10_4_numeric_scores_1_under_the_dataset_name(profile: str) -> None:
    # The dataset's rows spell the tolerances atol/rtol; `atol=0.5` was swallowed and the
    # pair graded with the default 1e-3, a silent 0.
    assert grade("10", "10.4", reward_mode="numeric", atol=0.5, profile=profile) == GradeResult(
        1.0, "numeric"
    )
    assert grade("10", "10.4", reward_mode="numeric", profile=profile).reward == 0.0


def test_issue_27_rtol_is_rel_tol() -> None:
    assert grade("100", "104", reward_mode="numeric", rtol=0.05).reward == 1.0
    assert grade("100", "104", reward_mode="numeric", rtol=0.01).reward == 0.0
    assert grade("100", "104", reward_mode="numeric", rel_tol=0.05).reward == 1.0


def test_issue_27_both_names_of_one_tolerance_with_one_value_are_accepted() -> None:
    result = grade("10", "10.4", reward_mode="numeric", atol=0.5, abs_tol=0.5, rtol=0, rel_tol=0.0)
    assert result == GradeResult(1.0, "numeric")
    # None and 0.0 grade alike, so they are one value.
    assert grade("10", "10.4", reward_mode="numeric", atol=None, abs_tol=0.0).reward == 0.0


@pytest.mark.parametrize(
    ("keywords", "names"),
    [
        ({"atol": 0.5, "abs_tol": 0.1}, ("abs_tol=0.1", "atol=0.5")),
        ({"rtol": 0.05, "rel_tol": 1e-3}, ("rel_tol=0.001", "rtol=0.05")),
        ({"atol": 0.5, "abs_tol": None}, ("abs_tol=None", "atol=0.5")),
    ],
)
def test_issue_27_both_names_of_one_tolerance_with_two_values_raise(
    keywords: dict, names: tuple[str, str]
) -> None:
    with pytest.raises(TypeError, match="two values for one tolerance") as raised:
        grade("10", "10.4", reward_mode="numeric", **keywords)
    for name in names:
        assert name in str(raised.value)


@pytest.mark.parametrize("keyword", ["tol", "tolerance", "abs_tolerance", "mode", "grader"])
def test_issue_27_an_unknown_keyword_raises_naming_it(keyword: str) -> None:
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{keyword}'"):
        grade("10", "10.4", reward_mode="numeric", **{keyword: 0.5})


def test_issue_27_tolerances_not_given_are_the_published_defaults() -> None:
    assert grade("1000", "1001", reward_mode="numeric") == GradeResult(1.0, "numeric")
    assert grade("1000", "1002", reward_mode="numeric").reward == 0.0
    assert grade("0", "0.001", reward_mode="numeric") == GradeResult(1.0, "numeric")
    assert grade("0", "0.002", reward_mode="numeric").reward == 0.0


def test_unknown_reward_mode_warns_once_and_uses_the_generic_ladder() -> None:
    mode = "mode_nobody_uses_0"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert grade("12", "12 years", reward_mode=mode) == GradeResult(1.0, "numeric")
        assert grade("a, b", "b, a", reward_mode=mode) == GradeResult(1.0, "list")
    messages = [str(w.message) for w in caught if mode in str(w.message)]
    assert len(messages) == 1


@pytest.mark.parametrize(
    "mode",
    ["numeric", "flexible", "list", "list_csv", "exact_short", "exact_bool", "exact", "", None],
)
def test_known_modes_do_not_warn(mode) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grade("x", "x", reward_mode=mode)


@pytest.mark.parametrize("tol", [None, math.nan, -1.0, "not a number"])
def test_unusable_tolerance_counts_as_zero(tol) -> None:
    assert grade("19", "19.0", abs_tol=tol, rel_tol=tol) == GradeResult(1.0, "numeric")
    assert grade("19", "19.5", abs_tol=tol, rel_tol=tol, reward_mode="numeric").reward == 0.0


def test_row_values_that_are_not_strings_are_read_as_text() -> None:
    assert grade(19, "19") == GradeResult(1.0, "exact")
    assert grade(5768.04, 5768, abs_tol=0.05, rel_tol=0.01) == GradeResult(1.0, "numeric")


def test_grader_module_is_pure() -> None:
    import subprocess
    import sys

    code = (
        "import sys, smoldataenvs_tasks.scorers.grader, smoldataenvs_tasks.scorers.decide;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('inspect_ai', 'lm_eval')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
