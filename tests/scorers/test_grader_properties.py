"""Property tests: `grade` and the answer rules never raise, whatever text they are given.

python -m pytest tests/scorers/test_grader_properties.py -q
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import grade
from smoldataenvs_tasks.scorers.answers import (
    exception_name_from_stderr,
    extract_program,
    is_command,
    is_syntax_error,
    last_nonempty_line,
)

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
# Text biased toward what reaches every rung: digits, commas, %, $, LaTeX, fences.
answers = st.one_of(
    st.text(),
    st.text(alphabet="0123456789.,-%$eE /\\{}[]()^ abcxyz"),
    st.from_regex(r"-?\d{1,6}(\.\d{1,4})?%?", fullmatch=True),
)
modes = st.sampled_from(
    ["", "numeric", "flexible", "list", "list_csv", "exact_short", "exact_bool"]
)
tolerances = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1e-3, 0.05])
)


@pytest.mark.slow
@PROPERTY
@given(gold=answers, candidate=answers, mode=modes, atol=tolerances, rtol=tolerances)
def test_grade_never_raises_and_returns_zero_or_one(gold, candidate, mode, atol, rtol) -> None:
    result = grade(gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol)
    assert result.reward in (0.0, 1.0)
    assert result.method in (
        "exact",
        "numeric",
        "numeric_scaled",
        "list",
        "math_verify",
        "math_verify_timeout",
        "miss",
    )
    assert (result.reward == 1.0) == (result.method not in ("miss", "math_verify_timeout"))


@PROPERTY
@given(x=st.text().filter(lambda s: s.strip() != ""), mode=modes)
def test_grade_of_x_against_itself_is_one(x: str, mode: str) -> None:
    assert grade(x, x, reward_mode=mode).reward == 1.0


@pytest.mark.slow
@PROPERTY
@given(x=st.text().filter(lambda s: s.strip() == ""))
def test_blank_side_is_a_miss(x: str) -> None:
    assert grade(x, "5").method == "miss"
    assert grade("5", x).method == "miss"


@PROPERTY
@given(text=st.text())
def test_answer_rules_never_raise(text: str) -> None:
    line = last_nonempty_line(text)
    assert line is None or (line == line.strip() and line)
    extracted = extract_program(text)
    assert extracted.code is None or isinstance(extracted.code, str)
    assert isinstance(is_command(text), bool)
    name = exception_name_from_stderr(text)
    assert name is None or "." not in name
    assert isinstance(is_syntax_error(text), bool)


@PROPERTY
@given(text=st.text())
def test_fast_normalisation_equals_the_regex_statement(text: str) -> None:
    import re

    from smoldataenvs_tasks.scorers.grader import _normalise

    assert _normalise(text) == re.sub(r"\s+", " ", text.strip().lower())
