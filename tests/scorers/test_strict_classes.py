"""Every loophole class of issue 25, as generated variants: the published grader (the default
profile) accepts some of each class, so the loophole is real; strict accepts none.

    python -m pytest tests/scorers/test_strict_classes.py -q

The variants (`tests/scorers/phrasings.py` `loophole_variants`) combine a random gold with a
wrong value in each class's templates, under four reward modes: hedges joined by a symbol or
brackets, spelled-out hedges, negations and comparisons, magnitude words on a plain gold, date
hedges with the gold first, date lists right only in their first date (the rest wrong, a
superset, a subset), and comparison labels without letters.
"""

from __future__ import annotations

from collections import Counter

import pytest

from smoldataenvs_tasks.scorers import strict
from smoldataenvs_tasks.scorers.grader import GradeResult, grade
from tests.scorers.phrasings import Variant, loophole_variants

pytestmark = [pytest.mark.unit, pytest.mark.slow]

CLASSES = {
    "hedge joined by a symbol or brackets",
    "spelled-out hedge",
    "negation or comparison",
    "magnitude word on a plain gold",
    "date hedge with the gold first",
    "date list right only in its first date",
    "comparison label without letters",
}


def _grades(variant: Variant) -> tuple[GradeResult, GradeResult]:
    row = {"reward_mode": variant.reward_mode, "abs_tol": variant.atol, "rel_tol": variant.rtol}
    return (
        grade(variant.gold, variant.candidate, **row),
        grade(variant.gold, variant.candidate, profile="strict", **row),
    )


@pytest.fixture(scope="module")
def graded() -> list[tuple[Variant, GradeResult, GradeResult]]:
    return [(v, *_grades(v)) for v in loophole_variants()]


def test_every_class_of_the_issue_is_generated(graded) -> None:
    counts = Counter(v.loophole for v, _, _ in graded)
    assert set(counts) == CLASSES
    assert all(n >= 100 for n in counts.values()), counts


def test_default_accepts_some_of_every_class(graded) -> None:
    accepted = Counter(v.loophole for v, default, _ in graded if default.reward)
    for name in CLASSES:
        assert accepted[name] > 0, name


def test_strict_accepts_no_variant_of_any_class(graded) -> None:
    opened = [(v, s) for v, _, s in graded if s.reward]
    assert not opened, opened[:5]


def test_strict_names_a_rule_wherever_default_accepted(graded) -> None:
    for variant, default, strict_result in graded:
        if default.reward:
            assert strict_result.rule in strict.RULES, (variant, strict_result)
