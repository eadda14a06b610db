"""How strict reads one side (`scorers/reading.py`): the issue's phrasings read as what they
say, and the quick paths give exactly what the full reading gives.

    python -m pytest tests/scorers/test_reading.py -q
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks.scorers import reading
from smoldataenvs_tasks.scorers.reading import (
    Date,
    Expr,
    Items,
    Multi,
    Period,
    Range,
    Ratio,
    Text,
    Value,
    read,
    read_item,
    read_words,
)
from tests.scorers.fuzz_corpus import corpus
from tests.scorers.phrasings import correct_phrasings, loophole_variants

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])


def _value(text: str) -> Value:
    found = read(text)
    assert type(found) is Value, (text, found)
    return found


# --- regression: what the issue's phrasings read as ---------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["17 -> 12", "17 \u2192 12", "17 = 12", "48 \u2248 42", "12 (17)",
     "34639.76 \u00b1 12829.54", "7885.54? 2920.57?", "12 or seventeen", "1 2 3 4 5"],
)  # fmt: skip
def test_hedges_read_as_several_numbers(text: str) -> None:
    assert type(read(text)) is Multi


@pytest.mark.parametrize(
    "text",
    [
        "```\n17\n```\n```\n12\n```",
        "**17**\n**12**",
        "12; 7; 3",
        "12, 7 and 3",
        "12\n7\n3",
        "17 | 12",
        "12 | 7 | 3",
    ],
)
def test_several_lines_separators_and_code_fences_read_as_a_list(text: str) -> None:
    assert type(read(text)) is Items


def test_a_range_with_a_dash_to_or_between_reads_as_a_range() -> None:
    for text in ("30-40", "30\u201340", "30 to 40", "between 30 and 40", "409\u2013286"):
        assert type(read(text)) is Range, text


@pytest.mark.parametrize(
    ("text", "comparison"),
    [("not 12", {"!="}), ("at least 12", {">="}), ("\u2260 12", {"!="}), ("12+", {">="}),
     ("< 12", {"<"}), ("> 250", {">"}), ("12 or more", {">="}), ("more than 50K", {">"}),
     (">50K", {">"}), ("<=50K", {"<="}), ("no more than 5", {"<="}), ("12", set())],
)  # fmt: skip
def test_comparisons_and_negations_are_read(text: str, comparison: set[str]) -> None:
    assert _value(text).comparison == comparison


@pytest.mark.parametrize(
    ("text", "number"),
    [("12 thousand", 12_000), ("12k", 12_000), ("3.14M", 3_140_000), ("7 bn", 7e9),
     ("50K", 50_000), ("12 kg", 12), ("5 m", 5)],
)  # fmt: skip
def test_magnitude_words_multiply_and_units_do_not(text: str, number: float) -> None:
    assert _value(text).number == number


@pytest.mark.parametrize(
    "text", ["\u221212", "- 12", "minus 12", "\u201312", "-$12", "$-12", "negative 12"]
)
def test_signs_the_published_reading_drops_are_read(text: str) -> None:
    assert _value(text).number == -12


def test_a_dash_glued_to_a_word_is_not_a_sign() -> None:
    assert _value("COVID-19").number == 19
    assert _value("x-5").number == 5


@pytest.mark.parametrize(
    "text",
    ["2019-05-01", "2019-05-01.", "The peak was on 2019-05-01.", "2019-5-1", "2019/05/01",
     "May 1, 2019", "1 May 2019", "1st of May 2019", "2019-05-01 00:00:00", "05/01/2019"],
)  # fmt: skip
def test_forms_of_one_date_read_alike(text: str) -> None:
    expected = (2019, 5, 1, 0, 0, 0) if text != "05/01/2019" else ("ambiguous", 5, 1, 2019, 0, 0, 0)
    assert read(text) == Date(expected)


def test_a_month_reads_as_a_month_in_any_form() -> None:
    assert (
        read("May 2019") == read("2019-05") == read("May 2019.") == Date((2019, 5, None, 0, 0, 0))
    )
    assert read("Mar 2020") == read("March 2020") == read("2020-03")


def test_day_first_and_month_first_dates_resolve_when_one_part_exceeds_12() -> None:
    assert read("12/13/1994") == read("13/12/1994") == read("1994-12-13")


def test_quarters_read_in_any_form() -> None:
    assert read("Q3 2021") == read("2021 Q3") == read("2021-Q3") == Period(3, 2021)
    assert read("Q3") == read("3rd quarter") == read("third quarter") == Period(3, None)


@pytest.mark.parametrize(
    ("text", "unit"),
    [("12 yrs", "year"), ("12 years", "year"), ("5 kilometers", "km"), ("5 km", "km"),
     ("5768 dollars", "usd"), ("5768 USD", "usd"), ("$5768", "usd"), ("72 kilograms", "kg"),
     ("3.5 h", "hour"), ("3.5 hrs", "hour"), ("3.5 hours", "hour")],
)  # fmt: skip
def test_unit_synonyms_read_as_one_unit(text: str, unit: str) -> None:
    assert _value(text).unit == unit


def test_labels_are_the_word_before_the_number_and_filler_is_not() -> None:
    assert _value("Class 2").label == "class"
    assert _value("The answer is 2").label is None
    assert _value("about 2").label is None


def test_simple_expressions_are_valued() -> None:
    assert read("1/2") == read("\\frac{1}{2}") == read("$\\frac{1}{2}$") == Expr(0.5)
    assert read("2^{10}") == Expr(1024.0)
    assert read("\\sqrt{49}") == Expr(7.0)
    assert read("6387 / 4271?") == Expr(6387 / 4271)
    assert read("9^{9^{9}}") == Expr(None)  # never computed


def test_other_shapes() -> None:
    assert read("3:1") == Ratio((3, 1))
    assert read("East") == Text()
    assert read("\\pi") == Expr(None)
    assert type(read("1,5")) is Items and read("1,5").comma_joined
    assert read("1,234") == read("1 234") == _value("1234")._replace(plain=False)


# --- the quick paths give what the full reading gives -------------------------------------------


def _full(text: str, whole: bool):
    saved = reading._shapes
    reading._shapes = lambda text, whole: None
    try:
        return reading._read(text, whole=whole)
    finally:
        reading._shapes = saved


def _tokens_key(text: str, quick: bool) -> list[tuple]:
    return [
        (t.kind, t.start, t.end, t.reading, t.value, t.exponent, t.magnitude, t.percent)
        for t in reading._tokens(text, quick=quick)
    ]


side_texts = st.one_of(
    st.text(alphabet="0123456789 ,.-/:%$€abcdeKMQ\u2212\u2013()[]{}?\n", max_size=20),
    st.lists(
        st.sampled_from(
            ["12", "7", "1,234", "0.5", "-3", "2019-05-01", "May", "2019", "Q3", "or", "and",
             "maybe", "years", "to", ",", ";", "-", "k", "%", "$", "between", "thousand",
             "seventeen", "1 000", "3.5e-3", "\u221212", "**", "\\boxed{", "}", "?", "(",
             ")", "[", "]", "percent", "\u20ac", "USD", "$$", "\\text{", "{",
             # issue 46: space-grouped decimals, glued signs, magnitudes, markup and rules
             "1 234.56", "234.5", "1\u00a0234.5", "42!", "42()", "!", "lakh", "MM", "Mrd.", "sq",
             "ft", "\u00b2", "\u2030", "<b>", "</b>", "<|im_end|>", "|---|", ">>>", "CO2", "1990s",
             "not", "maximum", "is", "over", "\u00d710\u00b3", "\u00bd"]
        ),
        max_size=7,
    ).map(" ".join),
)  # fmt: skip


# What property runs found (CI, then a 900,000-side search over the strategy's tokens glued and
# spaced): markup and a letter glued to a digit in a comma list, "x" between numbers, a sign
# before a line break.
@PROPERTY
@given(text=side_texts, whole=st.booleans())
@example(text="12 , 12 <b>", whole=True)
@example(text="1e3, lakh1 234.56", whole=True)
@example(text="over 2019and, 7", whole=True)
@example(text="0.5 x 12", whole=False)
@example(text="- \n 00", whole=True)
def test_quick_shapes_read_exactly_as_the_full_reading(text: str, whole: bool) -> None:
    assert reading._read(text, whole=whole) == _full(text, whole)


@PROPERTY
@given(text=side_texts)
def test_quick_tokens_are_the_full_tokens(text: str) -> None:
    assert _tokens_key(text, quick=True) == _tokens_key(text, quick=False)


@pytest.mark.slow
def test_quick_paths_agree_with_the_full_reading_on_every_corpus_side() -> None:
    sides = {p.gold for p in corpus()} | {p.candidate for p in corpus()}
    sides |= {p.candidate for p in correct_phrasings()} | {v.candidate for v in loophole_variants()}
    for text in sides:
        for whole in (True, False):
            assert reading._read(text, whole=whole) == _full(text, whole), text
        assert _tokens_key(text, quick=True) == _tokens_key(text, quick=False), text


# Issue 33's quick shapes for realistic answers: wrapped numbers, dashed dates listed or ending a
# sentence, a number with a magnitude. Their near misses too (another wrapper's end, a month
# 13, a lowercase "m"), so a quick shape that took one would fail here.
_numbers = st.from_regex(r"-?\d{1,6}(\.\d{1,3})?", fullmatch=True)
_wrapper_parts = sorted({part for pair in reading._WRAPPER_PAIRS for part in pair})
_dashed_days = st.builds(
    "{}-{}-{}".format,
    st.sampled_from(["2019", "0000", "1996", "9999", "12"]),
    st.sampled_from(["1", "01", "09", "12", "13", "00"]),
    st.sampled_from(["1", "01", "27", "31", "32", "00"]),
)
_magnitude_words = st.sampled_from(sorted(reading._MAGNITUDES)).flatmap(
    lambda word: st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(word, upper, strict=True))
    )
)
_worded = st.lists(
    st.sampled_from(
        ["four", "hundred", "and", "ninety", "-", "six", "seventeen", "one", "a", "thousand",
         "Five", "dozen", "fourty", "sixtyish", "and and", "twenty-", " "]
    ),
    min_size=1,
    max_size=6,
).map(lambda words: " ".join(words).replace(" - ", "-"))  # fmt: skip
quick_shape_texts = st.one_of(
    st.builds(
        "{}{}{}{}{}".format,
        st.sampled_from(_wrapper_parts),
        st.sampled_from(["", " ", "  "]),
        _numbers,
        st.sampled_from(["", " ", "\n"]),
        st.sampled_from(_wrapper_parts),
    ),
    st.sampled_from(sorted(reading._WRAPPER_PAIRS)).flatmap(
        lambda pair: _numbers.map(lambda n: f"{pair[0]}{n}{pair[1]}")
    ),
    st.lists(_dashed_days, min_size=1, max_size=4).flatmap(
        lambda days: st.sampled_from([", ", ",", " , ", ",  "]).map(lambda sep: sep.join(days))
    ),
    st.builds("{}{}".format, _dashed_days, st.sampled_from([".", "..", " .", ""])),
    st.builds(
        "{}{}{}{}".format,
        _dashed_days,
        st.sampled_from(
            [
                " or ",
                " - ",
                " \u2013 ",
                " to ",
                " (or ",
                " (maybe ",
                " or maybe ",
                " or possibly ",
                " and ",
                " | ",
                "; ",
                " / ",
                " or  ",
                "or ",
                " (perhaps ",
            ]
        ),
        _dashed_days,
        st.sampled_from(["", ")", ").", " )"]),
    ),
    st.builds(
        "{}{}{}{}".format,
        st.sampled_from(["12", "7.5", "0", "1", "385"]),
        st.sampled_from(
            [" or ", " or maybe ", " or possibly ", " (or ", " (maybe ", " and ", ", or possibly "]
        ),
        _worded,
        st.sampled_from(["", ")", " )", "."]),
    ),
    st.builds(
        "{}{}{}".format,
        _worded,
        st.sampled_from([", or possibly ", " or possibly ", ", or ", ", or possibly -"]),
        st.sampled_from(["12", "7.5", "0", "1", "385", "12 years"]),
    ),
    st.builds(
        "{}{}{}{}".format,
        _numbers,
        st.sampled_from(["", " ", "  "]),
        _magnitude_words,
        st.sampled_from(["", ".", " ", "s"]),
    ),
)


# Issue 46: a number grouped by spaces before its decimals ("1 234.56") is one number in the
# token pattern; the quick paths read it as two. Generated with the words around it that send a
# side down each quick path (plain words, a hedge, a list, a unit, a sign).
space_grouped_texts = st.builds(
    "{}{}{}{}{}{}".format,
    st.sampled_from(["", "The total is ", "about ", "-", "$", "12 or ", "12, ", "Class "]),
    st.from_regex(r"[1-9]\d{0,3}", fullmatch=True),
    st.sampled_from([" ", "\u00a0", "\u202f", "  "]),
    st.from_regex(r"\d{2,4}", fullmatch=True),
    st.sampled_from([".5", ".56", ".", "", " 789.1"]),
    st.sampled_from(["", " years", "%", " or 17", ", 3", "!", "."]),
)


@PROPERTY
@given(text=space_grouped_texts, whole=st.booleans())
def test_issue_46_space_grouped_decimals_read_exactly_as_the_full_reading(text, whole) -> None:
    assert reading._read(text, whole=whole) == _full(text, whole), text
    _same_reading(text)


def test_issue_46_a_space_grouped_decimal_is_one_number() -> None:
    assert read("1 234.56") == read("1234.56")._replace(plain=False)
    assert read_words("The total is 1 234.56", "the total is 1 234.56".split()) is None


@PROPERTY
@given(text=quick_shape_texts, whole=st.booleans())
def test_issue_33_quick_shapes_read_exactly_as_the_full_reading(text: str, whole: bool) -> None:
    assert reading._read(text, whole=whole) == _full(text, whole), text


def test_issue_33_quick_shapes_are_taken() -> None:
    """The shapes are read by their own pattern (else they would only cost a failed match)."""
    assert reading._quick_shape("The final answer is $\\boxed{-12.5}$.", True) == read(
        "-12.5"
    )._replace(plain=False)
    assert reading._quick_shape("2019-05-01, 2019-05-02", True) == read("2019-05-01, 2019-05-02")
    assert reading._quick_shape("2019-05-01, 2019-05-02", False) is None
    assert reading._quick_shape("2019-05-01.", True) == Date((2019, 5, 1, 0, 0, 0))
    assert reading._quick_shape("12 Mn", True) == read("12 million")
    assert reading._quick_shape("12 m", True) is None  # metres
    for worded in (
        "354 (maybe six hundred and eighteen)",
        "four hundred and eighteen, or possibly 75",
    ):
        assert reading._quick_shape(worded, True) == read(worded), worded
        assert reading._quick_shape(worded, False) == read_item(worded), worded
    hedge = "2019-05-01 (or 2019-05-02)"
    assert reading._quick_shape(hedge, False) == read(hedge) == Multi((), True)


word_texts = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "12",
                "-12",
                "7",
                "12.5",
                "1000",
                "000",
                "(12)",
                "12?",
                "2019",
                "or",
                "maybe",
                "the",
                "answer",
                "is",
                "years",
                "yrs",
                "Class",
                "about",
                "k",
                "M",
                "not",
                "and",
                "to",
                "(sd",
                "3)",
                "?",
                "min",
                "May",
                "seventeen",
                "minus",
                "-",
                "km",
                "USD",
                # issue 46
                "234.56",
                "1",
                "42!",
                "12(",
                "lakhs",
                "crore",
                "sq",
                "ft",
                "squared",
                "maximum",
                "over",
            ]
        ),
        st.from_regex(r"-?\d{1,5}(\.\d{1,2})?", fullmatch=True),
        st.from_regex(r"[A-Za-z]{1,6}", fullmatch=True),
    ),
    min_size=1,
    max_size=6,
).map(" ".join)


def _same_reading(text: str) -> None:
    quick = read_words(text, text.lower().split())
    if quick is not None:
        assert quick == reading._read(text.strip(), whole=True), text


@PROPERTY
@given(text=word_texts)
def test_a_side_of_plain_words_and_numbers_reads_from_its_words_as_read_gives(text: str):
    _same_reading(text)


@pytest.mark.slow
def test_reading_from_words_agrees_on_every_corpus_side() -> None:
    for text in {p.candidate for p in corpus()} | {p.candidate for p in correct_phrasings()}:
        _same_reading(text)


@settings(deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text())
def test_reading_any_text_never_raises(text: str) -> None:
    read(text)
    read_item(text)


# --- worded numbers: the trie matches what the alternation of the words matched -----------------

_WORDS = reading._NUMBER_WORDS.split("|")
# The token pattern's worded number before issue 33 made it a trie, from the same word list.
_ALTERNATION = re.compile(
    r"(?i:\b(?:" + reading._NUMBER_WORDS + r")(?:[\s-]+(?:and\s+)?(?:"
    + reading._NUMBER_WORDS + r"))*\b)"
)  # fmt: skip
_TRIE = re.compile(
    r"(?i:\b" + reading._NUMBER_WORD + r"(?:[\s-]+(?:and\s+)?" + reading._NUMBER_WORD + r")*\b)"
)

worded_texts = st.lists(
    st.one_of(
        st.sampled_from(_WORDS),
        st.sampled_from([w.upper() for w in _WORDS] + [w.title() for w in _WORDS]),
        st.sampled_from([" ", "-", " and ", "and", "  ", "\n", "_", "1", "s", "teen", "ty", ","]),
    ),
    max_size=8,
).map("".join)


@PROPERTY
@given(text=worded_texts)
def test_worded_numbers_match_as_the_alternation_of_the_words_did(text: str) -> None:
    for start in range(len(text) + 1):
        old, new = _ALTERNATION.match(text, start), _TRIE.match(text, start)
        assert (old and old.span()) == (new and new.span()), (text, start)
    assert [t.span() for t in _ALTERNATION.finditer(text)] == [
        t.span() for t in _TRIE.finditer(text)
    ]


def test_every_number_word_and_pair_of_them_matches_as_the_alternation_did() -> None:
    texts = [w + tail for w in _WORDS for tail in ("", "s", "ty", "teen", "1", "_", ".")]
    texts += [a + gap + b for a in _WORDS for b in _WORDS for gap in (" ", "-", " and ", "")]
    texts += [t.upper() for t in texts[: len(_WORDS) * 7]]
    for text in texts:
        old, new = _ALTERNATION.match(text), _TRIE.match(text)
        assert (old and old.span()) == (new and new.span()), text


# --- issue 46: the comparison pattern tried only where its gate says one can start -------------

comparison_texts = st.lists(
    st.one_of(
        st.sampled_from(reading._COMPARISON_FIRST_WORDS),
        st.sampled_from(
            ["than", "least", "most", "of", "the", "very", "but", "isn't", "n't", "42", "less",
             "fewer", "more", "<", ">", "=", "!", "+", "/", "-", "\\geq", "\\pm", "\\le", "\u2265",
             "\u00b1", "Not", "AT", "Least", "excess", "upwards", "plus", "moreover", "notable"]
        ),
        st.from_regex(r"[A-Za-z]{1,5}", fullmatch=True),
    ),
    max_size=8,
).flatmap(lambda words: st.sampled_from([" ", "", ", "]).map(lambda gap: gap.join(words)))  # fmt: skip


@PROPERTY
@given(text=comparison_texts)
def test_issue_46_gated_comparison_matches_are_the_pattern_s_own(text: str) -> None:
    gated = [m.span() for m in reading._comparison_matches(text)]
    assert gated == [m.span() for m in reading._COMPARISON.finditer(text)], text
