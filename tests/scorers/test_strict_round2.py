"""The strict profile, round 2 (issue 33): answer wrappers accepted, and the new loophole
classes closed, each as a generated class (a hypothesis strategy per rule).

    python -m pytest tests/scorers/test_strict_round2.py -q

Closed (strict 1.2.0 accepted every one, as the published grader does):
  comparison      LaTeX and Unicode relations (`\\geq 42`, `⩾ 42`, `≳ 42`, `\\gtrsim 42`,
                  `≫ 42`, `$\\neq 42$`), sign hedges (`\\pm 42`, `∓ 42`), and comparisons and
                  negations of dates, years, money and units (`not 2019-03-01`,
                  `before 2021`, `at least $45.00`, `over 5 km`)
  one_expression  products (`2 \\times 42`, `-1 \\times 42` for 42)
  dropped_sign    an absolute value (`|-17|` for -17) and the emoji minus (`➖42` for 42)
  magnitude       basis points for a percentage (`12.5 bps` for `12.5%`, a 100x error)
  label_words     a label extended (`iPhone 12 Pro` for `iPhone 12`)
Accepted (strict 1.2.0 refused): `<answer>42</answer>`, `Answer -> 42`, `Answer -> -17`,
`Final: 42`, boxed forms, and lists joined by ` | `.

Approximation words and signs (`about`, `approximately`, `around`, `~`, `≈`, `\\approx`,
`\\sim`) are not comparisons, for every kind of value alike: docs/scoring.md "Approximation
words" says why. `test_approximation_is_filler_for_every_kind_of_value` holds strict to it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import grade

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
MODES = st.sampled_from(["", "numeric", "flexible", "exact_short"])
TOLERANCES = st.sampled_from([(0.0, 0.0), (1e-3, 1e-3), (0.05, 0.01)])

integers = st.integers(min_value=2, max_value=999_999).map(str)
decimals = st.builds(
    lambda n, places: f"{n / 10**places:.{places}f}",
    st.integers(min_value=1_000, max_value=9_999_999),
    st.integers(min_value=1, max_value=2),
)
values = st.one_of(integers, decimals)
dates = st.builds(
    lambda y, m, d: (y, m, d),
    st.integers(min_value=1990, max_value=2030),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=28),
)
MONTHS = "January February March April May June July August September October November December"
spaces = st.sampled_from(["", " "])


def _grades(gold: str, candidate: str, mode: str, tol: tuple[float, float]) -> tuple[float, float]:
    atol, rtol = tol
    return (
        grade(gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol).reward,
        grade(
            gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol, profile="strict"
        ).reward,
    )


def _refused(gold: str, candidate: str, mode: str = "", tol=(0.0, 0.0)) -> None:
    assert _grades(gold, candidate, mode, tol)[1] == 0.0, (gold, candidate, mode, tol)


def _kept(gold: str, candidate: str, mode: str = "", tol=(0.0, 0.0)) -> None:
    assert _grades(gold, candidate, mode, tol) == (1.0, 1.0), (gold, candidate, mode, tol)


def _math(text: str, dollars: bool) -> str:
    return f"${text}$" if dollars else text


# --- regression: the issue's cases ---------------------------------------------------------------


@pytest.mark.parametrize(
    "candidate",
    ["\\geq 42", "\\leq 42", "\\ge 42", "\u2a7e 42", "\u2a7d 42", "\u2273 42", "\u2272 42",
     "\u226b 42", "\\gtrsim 42", "$\\neq 42$", "\\pm 42", "2 \\times 42", "-1 \\times 42",
     "\u279642"],
)  # fmt: skip
def test_issue_33_relations_signs_and_products_do_not_pass_for_42(candidate: str) -> None:
    _refused("42", candidate)
    _refused("42", candidate, "numeric")


def test_issue_33_absolute_value_of_minus_17_does_not_pass_for_minus_17() -> None:
    _refused("-17", "|-17|")
    _refused("-17", "|-17|", "numeric")


@pytest.mark.parametrize("candidate", ["12.5 bps", "12.5 basis points", "12.5 bp"])
def test_issue_33_basis_points_do_not_pass_for_a_percentage(candidate: str) -> None:
    _refused("12.5%", candidate)


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("2019-03-01", "not 2019-03-01"), ("2019-03-01", "before 2019-03-01"),
     ("2021", "before 2021"), ("$45.00", "at least $45.00"), ("5 km", "over 5 km"),
     ("iPhone 12", "iPhone 12 Pro")],
)  # fmt: skip
def test_issue_33_hedges_on_dates_years_money_units_and_labels_do_not_pass(
    gold: str, candidate: str
) -> None:
    for mode in ("", "numeric", "exact_short"):
        _refused(gold, candidate, mode)


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("42", "<answer>42</answer>"), ("42", "Answer -> 42"), ("-17", "Answer -> -17"),
     ("12, 7, 3", "12 | 7 | 3"), ("42", "Final: 42"), ("42", "Final answer: $\\boxed{42}$")],
)  # fmt: skip
def test_issue_33_wrappers_around_a_right_answer_pass(gold: str, candidate: str) -> None:
    _kept(gold, candidate)


def test_issue_33_a_pipe_hedge_still_does_not_pass_for_one_value() -> None:
    _refused("12", "17 | 12")
    _refused("12", "12 | 17", "numeric")


# --- the closed classes, generated ------------------------------------------------------------

RELATIONS = st.sampled_from(
    ["\\geq", "\\ge", "\\geqslant", "\\leq", "\\le", "\\leqslant", "\\gtrsim", "\\lesssim",
     "\\gg", "\\ll", "\\gt", "\\lt", "\\neq", "\\ne", "\u2a7e", "\u2a7d", "\u2273", "\u2272",
     "\u226b", "\u226a", "\u2265", "\u2264", "\u2260"]
)  # fmt: skip
SIGNS = st.sampled_from(["\\pm", "\\mp", "\u2213", "\u00b1"])


@PROPERTY
@given(
    g=values,
    op=st.one_of(RELATIONS, SIGNS),
    gap=spaces,
    dollars=st.booleans(),
    mode=MODES,
    tol=TOLERANCES,
)
def test_comparison_no_latex_or_unicode_relation_or_sign_of_the_gold_is_accepted(
    g, op, gap, dollars, mode, tol
) -> None:
    # "\\ge42" would be a command named ge42: a LaTeX command needs its space.
    gap = " " if op.startswith("\\") else gap
    _refused(g, _math(f"{op}{gap}{g}", dollars), mode, tol)


@PROPERTY
@given(
    g=values,
    k=st.integers(min_value=-9, max_value=9).filter(lambda k: k not in (0, 1)),
    op=st.sampled_from(["\\times", "\\cdot", "\u00d7", "*", "\u00b7"]),
    gold_first=st.booleans(),
    dollars=st.booleans(),
    mode=MODES,
)
def test_one_expression_no_product_of_the_gold_and_another_factor_is_accepted(
    g, k, op, gold_first, dollars, mode
) -> None:
    product = f"{g} {op} {k}" if gold_first else f"{k} {op} {g}"
    _refused(g, _math(product, dollars), mode)


@PROPERTY
@given(g=values, sign=st.sampled_from(["\u2796", "\u207b"]), mode=MODES, tol=TOLERANCES)
def test_dropped_sign_no_emoji_or_superscript_minus_passes_for_a_positive_gold(
    g, sign, mode, tol
) -> None:
    _refused(g, f"{sign}{g}", mode, tol)


@PROPERTY
@given(g=values, inner=spaces, mode=MODES, tol=TOLERANCES)
def test_dropped_sign_no_absolute_value_passes_for_a_negative_gold(g, inner, mode, tol) -> None:
    _refused(f"-{g}", f"|{inner}-{g}{inner}|", mode, tol)


@PROPERTY
@given(
    pct=st.one_of(
        st.integers(min_value=1, max_value=99).map(str),
        st.builds(lambda n: f"{n / 10:.1f}", st.integers(min_value=5, max_value=995)),
    ),
    unit=st.sampled_from(["bps", "bp", "BPS", "basis points", "basis point", "basis-points"]),
    gap=spaces,
    mode=MODES,
)
def test_magnitude_basis_points_never_pass_for_the_same_number_of_percent(
    pct, unit, gap, mode
) -> None:
    gap = " " if unit.startswith("basis") else gap
    _refused(f"{pct}%", f"{pct}{gap}{unit}", mode)


DATE_OPS = st.sampled_from(
    ["not", "before", "after", "since", "until", "prior to", "earlier than", "later than",
     "at least", "at most", "no later than", "\u2260", "<", ">", "\\neq", "other than"]
)  # fmt: skip


@PROPERTY
@given(d=dates, op=DATE_OPS, form=st.sampled_from(["iso", "named", "slashes"]), mode=MODES)
def test_comparison_no_negation_or_comparison_of_the_gold_date_is_accepted(
    d, op, form, mode
) -> None:
    y, m, day = d
    iso = f"{y}-{m:02d}-{day:02d}"
    written = {
        "iso": iso,
        "named": f"{MONTHS.split()[m - 1]} {day}, {y}",
        "slashes": f"{y}/{m:02d}/{day:02d}",
    }[form]
    _refused(iso, f"{op} {written}", mode)


@PROPERTY
@given(year=st.integers(min_value=1900, max_value=2100), op=DATE_OPS, mode=MODES)
def test_comparison_no_negation_or_comparison_of_the_gold_year_is_accepted(year, op, mode) -> None:
    _refused(str(year), f"{op} {year}", mode)


MONEY_UNIT_OPS = st.sampled_from(
    ["not", "at least", "at most", "more than", "less than", "over", "under", "up to",
     "\\geq", "\u2265", "<", "\u2260", "\\pm", "upwards of", "no more than"]
)  # fmt: skip


@PROPERTY
@given(
    v=values,
    op=MONEY_UNIT_OPS,
    kind=st.sampled_from(["$", "\u20ac", "USD", "km", "kg", "years", "hours"]),
    mode=MODES,
    tol=TOLERANCES,
)
def test_comparison_no_negation_or_comparison_of_money_or_a_unit_is_accepted(
    v, op, kind, mode, tol
) -> None:
    written = f"{kind}{v}" if kind in "$\u20ac" else f"{v} {kind}"
    _refused(written, f"{op} {written}", mode, tol)


@PROPERTY
@given(
    label=st.sampled_from(["iPhone", "Galaxy S", "Model", "Class", "Pixel", "Series"]),
    n=st.integers(min_value=2, max_value=99),
    extension=st.sampled_from(["Pro", "Max", "Mini", "Ultra", "XL", "Lite", "Plus", "SE"]),
    mode=st.sampled_from(["", "exact_short", "numeric", "flexible"]),
)
def test_label_words_an_extended_label_is_not_the_gold_label(label, n, extension, mode) -> None:
    _refused(f"{label} {n}", f"{label} {n} {extension}", mode)


# --- correct phrasings: wrappers, and approximation as filler -----------------------------------

WRAPPERS = [
    "<answer>{v}</answer>",
    "<answer> {v} </answer>",
    "<ANSWER>{v}</ANSWER>",
    "<final_answer>{v}</final_answer>",
    "Answer -> {v}",
    "Answer => {v}",
    "Answer \u2192 {v}",
    "answer: {v}",
    "Final: {v}",
    "Final answer: {v}",
    "**Final answer:** {v}",
    "Final Answer = {v}",
    "Result: {v}",
    "\\boxed{{{v}}}",
    "$\\boxed{{{v}}}$",
    "\\(\\boxed{{{v}}}\\)",
    "\\[\\boxed{{{v}}}\\]",
    "Final answer: $\\boxed{{{v}}}$",
    "The final answer is $\\boxed{{{v}}}$.",
    "<answer>\\boxed{{{v}}}</answer>",
]
signed_values = st.one_of(values, values.map(lambda v: "-" + v))


@PROPERTY
@given(v=signed_values, wrapper=st.sampled_from(WRAPPERS), mode=MODES, tol=TOLERANCES)
def test_a_wrapped_right_value_is_accepted_wherever_the_published_grader_accepts_it(
    v, wrapper, mode, tol
) -> None:
    default, strict_reward = _grades(v, wrapper.format(v=v), mode, tol)
    assert strict_reward == default, (v, wrapper, mode, tol)


@PROPERTY
@given(
    g=values,
    w=values,
    wrapper=st.sampled_from(WRAPPERS),
    mode=MODES,
    tol=TOLERANCES,
)
def test_a_wrapped_wrong_value_is_refused(g, w, wrapper, mode, tol) -> None:
    assume(abs(float(g) - float(w)) > 0.1 * max(abs(float(g)), 1.0))
    assume(all(abs(float(g) - float(w) * k) > 0.1 * abs(float(g)) for k in (100, 0.01)))
    _refused(g, wrapper.format(v=w), mode, tol)


@PROPERTY
@given(
    items=st.lists(st.integers(min_value=1, max_value=999).map(str), min_size=2, max_size=5),
    reverse=st.booleans(),
    wrap=st.sampled_from(["{l}", "<answer>{l}</answer>", "Answer: {l}"]),
    mode=st.sampled_from(["", "list", "list_csv"]),
)
def test_a_pipe_joined_list_is_accepted_wherever_the_published_grader_accepts_it(
    items, reverse, wrap, mode
) -> None:
    gold = ", ".join(items)
    listed = " | ".join(reversed(items) if reverse else items)
    default, strict_reward = _grades(gold, wrap.format(l=listed), mode, (0.0, 0.0))
    assert strict_reward == default, (gold, listed, mode)


APPROXIMATIONS = ["about", "approximately", "around", "roughly", "circa", "~", "\u2248"]


@PROPERTY
@given(
    word=st.sampled_from([*APPROXIMATIONS, "\\approx", "\\sim"]),
    kind=st.sampled_from(["number", "money", "unit", "year", "date", "percent"]),
    v=values,
    d=dates,
    mode=st.sampled_from(["", "numeric"]),
)
def test_approximation_is_filler_for_every_kind_of_value(word, kind, v, d, mode) -> None:
    y, m, day = d
    gold = {
        "number": v,
        "money": f"${v}",
        "unit": f"{v} km",
        "year": str(y),
        "date": f"{y}-{m:02d}-{day:02d}",
        "percent": f"{v}%",
    }[kind]
    candidate = f"{word} {gold}"
    if word.startswith("\\"):
        candidate = f"${candidate}$".replace("$$", "$\\$")
    default, strict_reward = _grades(gold, candidate, mode, (0.0, 0.0))
    # One rule: strict follows the published grader on an approximated right value.
    assert strict_reward == default, (gold, candidate, mode)
