"""The fast path is the ladder of its records (issue 34): `grade` gives `reference_grade`'s
GradeResult, the plain walk over `RUNGS` and `STRICT_RULES` (scorers/ladder.py), on the
generated answers, a sample of the fuzz corpus and random text, under both profiles.

    python -m pytest tests/scorers/test_ladder.py -q
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks.scorers import grader, strict
from smoldataenvs_tasks.scorers.ladder import RUNGS, reference_grade
from smoldataenvs_tasks.scorers.rules import STRICT_RULES
from tests.scorers.fuzz_corpus import corpus
from tests.scorers.phrasings import correct_phrasings, loophole_variants

pytestmark = pytest.mark.unit

PROFILES = ("default", "strict")


def _agree(gold: str, candidate: str, mode: str, atol: float, rtol: float) -> None:
    for profile in PROFILES:
        row = {"reward_mode": mode, "abs_tol": atol, "rel_tol": rtol, "profile": profile}
        assert grader.grade(gold, candidate, **row) == reference_grade(gold, candidate, **row), (
            gold,
            candidate,
            row,
        )


def test_the_records_name_every_method_and_rule() -> None:
    assert [rung.method for rung in RUNGS] == [
        "exact",
        "numeric",
        "numeric_scaled",
        "list",
        "math_verify",
    ]
    assert {rung.method for rung in RUNGS} | {"math_verify_timeout", "miss"} == set(grader.METHODS)
    methods = {rung.method for rung in RUNGS}
    for rule in STRICT_RULES:
        assert set(rule.rungs) <= methods, rule.name
    assert tuple(rule.name for rule in STRICT_RULES) == strict.RULES


def test_grade_is_the_reference_ladder_on_the_generated_answers() -> None:
    grader.clear_memo()
    for p in (*correct_phrasings(), *loophole_variants()):
        _agree(p.gold, p.candidate, p.reward_mode, p.atol, p.rtol)


@pytest.mark.slow
def test_grade_is_the_reference_ladder_on_the_fuzz_corpus() -> None:
    pairs = list(corpus())
    random.Random(34).shuffle(pairs)
    grader.clear_memo()
    for p in pairs[:20_000]:
        _agree(p.gold, p.candidate, p.reward_mode, p.atol, p.rtol)


_PIECES = st.sampled_from(
    [
        "12",
        "-12",
        "12.5",
        "1,234",
        "0.45",
        "45%",
        "$45",
        "12k",
        "or",
        "not",
        "at least",
        "years",
        "Class",
        "2019-05-01",
        "May 1, 2019",
        ",",
        ", ",
        "\n",
        "|",
        "(",
        ")",
        "=",
        "~",
        "about",
        "<answer>",
        "</answer>",
        "Answer:",
        "\\frac{1}{2}",
        "$",
        "17",
        "seventeen",
        "Q3",
    ]
)
_SIDES = st.lists(_PIECES, min_size=1, max_size=5).map(" ".join)


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    gold=_SIDES,
    candidate=_SIDES,
    mode=st.sampled_from(["", "numeric", "flexible", "list", "exact_short"]),
    tol=st.sampled_from([(0.0, 0.0), (1e-3, 1e-3), (0.05, 0.01)]),
)
def test_grade_is_the_reference_ladder_on_random_answers(gold, candidate, mode, tol) -> None:
    _agree(gold, candidate, mode, *tol)
