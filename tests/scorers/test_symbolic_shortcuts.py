"""The in-process shortcuts never change a verdict of math-verify 0.9.0 (checked over many pairs).

    python -m pytest tests/scorers/test_symbolic_shortcuts.py -q

math-verify runs here in the test's main thread with its timeouts off, exactly as the workers
run it, so every shortcut verdict is compared with the real library's.
"""

from __future__ import annotations

import logging
import random
import string

import pytest

from smoldataenvs_tasks.scorers.symbolic import Outcome, shortcut

math_verify = pytest.importorskip("math_verify")
from math_verify.parser import (  # noqa: E402
    ExprExtractionConfig,
    LatexExtractionConfig,
    get_extraction_regexes,
)

pytestmark = pytest.mark.unit

logging.getLogger("math_verify").setLevel(logging.CRITICAL + 1)


def _real(gold: str, candidate: str) -> bool:
    parse = math_verify.parse
    return bool(
        math_verify.verify(
            parse(gold, parsing_timeout=None),
            parse(candidate, parsing_timeout=None),
            timeout_seconds=None,
        )
    )


def test_pinned_math_verify_version() -> None:
    from importlib.metadata import version

    # The shortcuts were proven against this version's extraction patterns.
    assert version("math-verify") == "0.9.0"


# Text without a digit, `$`, backslash or `[`, but with everything else math-verify's patterns
# look for: "answer", "final answer is", percent words, operators, braces, unicode letters.
_NO_TRIGGER_ALPHABET = string.ascii_letters + " \t\n.,;:!?%()^{}*/+-=<>_'\"#&@~|" + "éüßñ€£¥πΣ×÷–—"
_NO_TRIGGER_WORDS = [
    "answer",
    "Answer:",
    "final answer is",
    "The final answer is",
    "percent",
    "pct",
    "and",
    "or",
    "East",
    "West",
    "yes",
    "no",
    "Not Applicable",
    "N/A",
    "x",
    "y",
    "pi",
    "oo",
    "infty",
    "frac",
    "boxed{x}",
    "sqrt",
    "x^y",
    "(a)",
    "{b}",
    "a/b",
    "e",
    "E",
    "I hope",
    "**bold**",
]


def _no_trigger_text(rnd: random.Random) -> str:
    if rnd.random() < 0.5:
        return " ".join(rnd.choice(_NO_TRIGGER_WORDS) for _ in range(rnd.randint(1, 6)))
    return "".join(rnd.choice(_NO_TRIGGER_ALPHABET) for _ in range(rnd.randint(1, 40)))


_TRIGGER_TEXTS = [
    "12",
    "0.5",
    "$x$",
    "$\\frac{1}{2}$",
    "\\[3\\]",
    " [4] ",
    "\\boxed{5}",
    "answer: 7",
    "The final answer is $8$",
    "45%",
    "1/2",
    "x = 3",
    "-2",
    "١٢",
]


def test_every_extraction_pattern_needs_a_trigger_character() -> None:
    rnd = random.Random(0)
    patterns = [
        pattern
        for target_patterns, _ in get_extraction_regexes(
            [LatexExtractionConfig(), ExprExtractionConfig()]
        )
        for pattern, _priority in target_patterns
    ]
    assert patterns
    for _ in range(3000):
        text = _no_trigger_text(rnd)
        for pattern in patterns:
            assert pattern.search(text) is None, (pattern.pattern[:60], text)


def test_no_trigger_shortcut_agrees_with_math_verify_over_many_pairs() -> None:
    rnd = random.Random(1)
    checked = 0
    for i in range(1500):
        plain = _no_trigger_text(rnd)
        other = rnd.choice(_TRIGGER_TEXTS) if i % 3 else _no_trigger_text(rnd)
        gold, candidate = (plain, other) if i % 2 else (other, plain)
        assert shortcut(gold, candidate) is Outcome.NO_MATCH
        assert _real(gold, candidate) is False, (gold, candidate)
        checked += 1
    assert checked == 1500


def _decimal(rnd: random.Random) -> str:
    kind = rnd.random()
    if kind < 0.3:
        return str(rnd.randint(-(10**6), 10**6))
    if kind < 0.6:
        return f"{rnd.uniform(-1000, 1000):.{rnd.randint(1, 8)}f}"
    if kind < 0.8:
        return f"{rnd.uniform(0, 1):.{rnd.randint(1, 12)}f}"
    return f"{rnd.uniform(1e9, 1e14):.{rnd.randint(0, 4)}f}"


def _near(value: str, rnd: random.Random) -> str:
    # A neighbour of `value` at a distance around math-verify's 6-decimal rounding.
    x = float(value) + rnd.choice([-1, 1]) * 10 ** rnd.uniform(-9, -3)
    return f"{x:.{rnd.randint(3, 12)}f}"


@pytest.mark.slow
def test_plain_number_shortcut_agrees_with_math_verify_over_many_pairs() -> None:
    rnd = random.Random(2)
    shortcut_used = 0
    declined = 0
    for i in range(2500):
        gold = _decimal(rnd)
        candidate = _near(gold, rnd) if i % 2 else _decimal(rnd)
        verdict = shortcut(gold, candidate)
        if verdict is Outcome.NO_MATCH:
            shortcut_used += 1
            assert _real(gold, candidate) is False, (gold, candidate)
        else:
            assert verdict is None
            declined += 1
    # Both branches were exercised: far pairs skip the worker, near pairs go to it.
    assert shortcut_used > 1000
    assert declined > 100


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [
        ("0.3333333", "0.33333334"),  # math-verify says equal (6-decimal rounding)
        ("1/2", "0.5"),
        ("45%", "0.45"),
        ("12", "12 years"),
        ("007", "7"),  # leading zeros are not a plain decimal for the shortcut
        ("1e6", "1000000"),
        ("$x$", "$x$"),
    ],
)
def test_shortcut_declines_pairs_math_verify_may_match(gold: str, candidate: str) -> None:
    assert shortcut(gold, candidate) is None
