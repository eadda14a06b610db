"""A `$` that opens or closes LaTeX math is a delimiter, not a dollar sign (issue 33).

Strict read "The final answer is $\\boxed{12}$." as 12 dollars, so gold `12 kg` refused it as
another unit (`label_words`) while the default profile accepted it. Math delimiters now follow
the Markdown rule (`scorers/reading.py` `_MATH_SPAN`); a currency sign (`$45`, `US$ 45`,
`$45.00`) is still dollars, and dollars still do not answer a gold in another unit.

    python -m pytest tests/scorers/test_strict_math_dollars.py -q
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import grade

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])
MODES = st.sampled_from(["", "numeric", "flexible"])

numbers = st.one_of(
    st.integers(min_value=1, max_value=999_999).map(str),
    st.builds(
        lambda n, places: f"{n / 10**places:.{places}f}",
        st.integers(min_value=100, max_value=9_999_999),
        st.integers(min_value=1, max_value=2),
    ),
)
# Golds with a unit, a currency, a percentage, or none (`{}` is the number).
golds = st.sampled_from(
    ["{} kg", "{} years", "{} km", "{} months", "${}", "€{}", "£{}", "{}%", "{}", "{} USD"]
)
# The number inside LaTeX math, in the forms models print it, alone or in a sentence.
maths = st.sampled_from(
    ["${}$", "$${}$$", "$\\boxed{{{}}}$", "$$\\boxed{{{}}}$$", "$\\displaystyle {}$"]
)
leads = st.sampled_from(
    ["", "The final answer is ", "Final answer: ", "So the answer is ", "Therefore, "]
)
ends = st.sampled_from(["", ".", " .", "\n"])
# `\text{4.5}` and `\mathrm{4.5}` the published grader itself does not read as 4.5: for them
# strict is held to the default profile's verdict, whatever it is.
wrapped_words = st.sampled_from(["$\\text{{{}}}$", "$\\mathrm{{{}}}$"])
# Dollars as a currency sign, alone or in a sentence.
dollars = st.sampled_from(
    ["${}", "US$ {}", "US${}", "$ {}", "The answer is ${}.", "It costs ${} in total", "${} USD"]
)
other_units = st.sampled_from(["{} kg", "{} years", "{} km", "€{}", "£{}", "{} litres"])


def _both(gold: str, candidate: str, mode: str) -> tuple[float, float]:
    return (
        grade(gold, candidate, reward_mode=mode).reward,
        grade(gold, candidate, reward_mode=mode, profile="strict").reward,
    )


@PROPERTY
@given(numbers, golds, maths, leads, ends, MODES)
def test_a_number_in_math_delimiters_answers_any_gold(number, gold, math, lead, end, mode):
    gold_text = gold.format(number)
    candidate = lead + math.format(number) + end
    assert _both(gold_text, candidate, mode) == (1.0, 1.0), (gold_text, candidate, mode)


@PROPERTY
@given(numbers, golds, wrapped_words, leads, ends, MODES)
def test_text_wrapped_math_is_graded_as_default_grades_it(number, gold, math, lead, end, mode):
    gold_text = gold.format(number)
    candidate = lead + math.format(number) + end
    default, strict = _both(gold_text, candidate, mode)
    assert strict == default, (gold_text, candidate, mode)


@PROPERTY
@given(numbers, golds.filter(lambda g: "$" in g or "USD" in g), st.sampled_from(["", "."]), MODES)
def test_an_escaped_dollar_inside_math_is_dollars(number, gold, end, mode):
    candidate = "$\\$" + number + "$" + end
    assert _both(gold.format(number), candidate, mode) == (1.0, 1.0)


@PROPERTY
@given(numbers, other_units, dollars, st.sampled_from(["", "numeric", "flexible"]))
def test_dollars_still_do_not_answer_another_unit(number, gold, candidate, mode):
    gold_text = gold.format(number)
    result = grade(gold_text, candidate.format(number), reward_mode=mode, profile="strict")
    assert result.reward == 0.0, (gold_text, candidate, mode, result)


@PROPERTY
@given(numbers, dollars, MODES)
def test_dollars_still_answer_dollars(number, candidate, mode):
    assert _both("$" + number, candidate.format(number), mode) == (1.0, 1.0)


def test_boxed_answer_in_a_sentence_answers_a_gold_in_kg():
    """The case found: `12 kg` against `The final answer is $\\boxed{12}$.`"""
    candidate = "The final answer is $\\boxed{12}$."
    assert grade("12 kg", candidate).reward == 1.0
    assert grade("12 kg", candidate, profile="strict").reward == 1.0
    refused = grade("12 kg", "$12", profile="strict")
    assert (refused.reward, refused.rule) == (0.0, "label_words")
