"""The strict profile, round 3 (issue 46): answers as they look at the end of a data-analysis
session, each class a generator grown from how models write (docs/scoring.md, "Round 3").

    python -m pytest tests/scorers/test_strict_round3.py -q

Accepted (strict 1.3.1 refused a right answer): explanations whose comparison words belong to
another clause or name the statistic ("Over the whole period, the maximum value is 42."),
markup and chat tokens (`<b>42</b>`, `42<|im_end|>`), a Python or IPython session printed whole,
a one-cell markdown table, a fraction for a percentage (`1/8` for `12.5%`), basis points for a
percentage of the same value (`50 bps` for `0.5%`), one date written twice, and a number whose
thousands are grouped by a space before its decimals (`1 234.56`).

Refused (strict 1.3.1 accepted a wrong one): magnitude words outside its table (`12 crore`,
`7 MM`), powers of ten strict did not value (`4.2×10³` for 4.2), functions of the gold
(`sqrt(42)`, `42!`, `42²`, `12½`), numbers glued to a name (`CO2`, `uint8`, `dtype: int64`),
decades (`1990s`), per mille for per cent, another unit of area (`sq m` for `sq ft`).

Every pair also holds strict to never accepting what the default profile rejects.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smoldataenvs_tasks import grade

pytestmark = pytest.mark.unit

PROPERTY = settings(deadline=None, max_examples=50, suppress_health_check=[HealthCheck.too_slow])
MODES = st.sampled_from(["", "numeric", "flexible", "exact_short"])
TOLERANCES = st.sampled_from([(0.0, 0.0), (1e-3, 1e-3), (0.05, 0.01)])

integers = st.integers(min_value=2, max_value=999_999).map(str)
decimals = st.builds(
    lambda n, places: f"{n / 10**places:.{places}f}",
    st.integers(min_value=1_000, max_value=9_999_999),
    st.integers(min_value=1, max_value=2),
)
values = st.one_of(integers, decimals)
MONTHS = "January February March April May June July August September October November December"


def _grades(gold: str, candidate: str, mode: str, tol: tuple[float, float]) -> tuple[float, float]:
    atol, rtol = tol
    default = grade(gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol).reward
    strict = grade(
        gold, candidate, reward_mode=mode, abs_tol=atol, rel_tol=rtol, profile="strict"
    ).reward
    assert strict <= default, ("strict accepted what default rejects", gold, candidate, mode)
    return default, strict


def _refused(gold: str, candidate: str, mode: str = "", tol=(0.0, 0.0)) -> None:
    assert _grades(gold, candidate, mode, tol)[1] == 0.0, (gold, candidate, mode, tol)


def _kept(gold: str, candidate: str, mode: str = "", tol=(0.0, 0.0)) -> None:
    assert _grades(gold, candidate, mode, tol) == (1.0, 1.0), (gold, candidate, mode, tol)


def _follows_default(gold: str, candidate: str, mode: str = "", tol=(0.0, 0.0)) -> None:
    default, strict = _grades(gold, candidate, mode, tol)
    assert strict == default, (gold, candidate, mode, tol)


# --- regression: the issue's cases ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("42", "The maximum value is 42."), ("42", "<b>42</b>"), ("42", "42<|im_end|>"),
     ("42", ">>> df['sales'].max()\n42"), ("42", "| max |\n|---|\n| 42 |"),
     ("12.5%", "1/8"), ("0.5%", "50 bps"), ("2019-05-01", "May 1, 2019 (2019-05-01)"),
     ("1234.56", "1 234.56"), ("42", "Over the whole period, the total is 42."),
     ("42", "Stores below target are excluded; the count is 42."),
     # a script written without spaces: the number follows a word and is no part of it
     ("42", "\u7b54\u6848\u662f42")],
)  # fmt: skip
def test_issue_46_right_answers_are_kept(gold: str, candidate: str) -> None:
    _kept(gold, candidate)


@pytest.mark.parametrize(
    ("gold", "candidate"),
    [("12", "12 crore"), ("7", "7 MM"), ("4", "4 lakh"), ("5", "5 bln"), ("3", "3 Mrd."),
     ("3", "3 Tsd."), ("4.2", "4.2×10³"), ("1.5", "1.5·10^6"), ("42", "sqrt(42)"),
     ("42", "log(42)"), ("42", "42!"), ("42", "42²"), ("12", "12½"),
     ("64", "Name: count, dtype: int64"), ("8", "uint8"), ("2", "CO2"), ("12.5%", "12.5‰"),
     ("1990", "1990s"), ("1200 sq ft", "1200 sq m"), ("42", "42()"), ("42", "42×")],
)  # fmt: skip
def test_issue_46_wrong_answers_are_refused(gold: str, candidate: str) -> None:
    _refused(gold, candidate)


# --- explanations: a comparison word qualifies only its own number ---------------------------

# Clauses a model writes before or after its result, holding comparison words that are about
# something else (a filter, a period, the statistic's name).
NARRATION = st.sampled_from(
    ["Over the whole period", "After dropping rows below the threshold",
     "Not counting missing values", "Across stores with sales over budget",
     "Excluding customers under 18", "Looking at values above the median",
     "Since the data does not include returns", "Among products that never sold out",
     "Ignoring the outliers more than 3 sd away", "For regions with at least a single store"]
)  # fmt: skip
STATISTICS = st.sampled_from(
    ["maximum value", "maximum", "minimum", "max", "min value", "highest total", "total",
     "number of rows", "median", "count"]
)  # fmt: skip
CLAUSE_ENDS = st.sampled_from([", ", "; ", ". ", ": ", "\n"])
COPULAS = st.sampled_from(["is", "was", "comes to", "equals", "="])
# What comes after a right value without qualifying it.
AFTERWORDS = st.sampled_from(
    ["", ".", " rows that are not null.", " stores in total.", ", which is the answer.",
     ". Values below that were dropped.", " (the maximum)."]
)  # fmt: skip


@PROPERTY
@given(
    g=values,
    narration=NARRATION,
    end=CLAUSE_ENDS,
    statistic=STATISTICS,
    copula=COPULAS,
    after=AFTERWORDS,
    mode=MODES,
)
def test_explanation_a_comparison_word_of_another_clause_or_a_statistic_name_is_kept(
    g, narration, end, statistic, copula, after, mode
) -> None:
    if "3" in narration or "18" in narration:
        assume(g not in ("3", "18"))
    statement = f"the {statistic} {copula} {g}"
    if end in (". ", "\n"):
        statement = statement[0].upper() + statement[1:]
    candidate = f"{narration}{end}{statement}{after}"
    default, strict = _grades(g, candidate, mode, (0.0, 0.0))
    # Narration numbers ("3 sd", "18") make a hedge: the published reading accepts on the
    # first number only where it is the gold's.
    if any(ch.isdigit() for ch in narration):
        return
    assert (default, strict) == (1.0, 1.0), (g, candidate, mode)


BOUNDS_BEFORE = st.sampled_from(
    ["not", "at least", "at most", "more than", "over", "below", "under", "no more than",
     "a maximum of", "a minimum of", "max", "not exactly", "never", "\u2265", "<",
     "isn't", "is not", "is over", "is below", "is at least about"]
)  # fmt: skip
BOUNDS_AFTER = st.sampled_from(
    [" or more", " or less", " at most", " at least", " max", "+", " and above", " or fewer",
     " years or more", " kg max", ", or more", " is not right"]
)  # fmt: skip


@PROPERTY
@given(
    g=values,
    narration=NARRATION,
    end=CLAUSE_ENDS,
    statistic=STATISTICS,
    bound=st.one_of(BOUNDS_BEFORE.map(lambda b: (b, "")), BOUNDS_AFTER.map(lambda b: ("", b))),
    mode=MODES,
    tol=TOLERANCES,
)
def test_explanation_a_comparison_next_to_the_number_in_its_clause_is_refused(
    g, narration, end, statistic, bound, mode, tol
) -> None:
    before, after = bound
    body = f"the {statistic}: {before} {g}{after}" if before else f"the {statistic}: {g}{after}"
    _refused(g, f"{narration}{end}{body}", mode, tol)


# --- markup, chat tokens, sessions, tables: what wraps a printed answer --------------------------

TAGS = st.sampled_from(
    [("<b>", "</b>"), ("<strong>", "</strong>"), ("<em>", "</em>"), ("<code>", "</code>"),
     ('<span class="answer">', "</span>"), ("<p>", "</p>"), ("<mark>", "</mark>"), ("", "")]
)  # fmt: skip
CHAT_TOKENS = st.sampled_from(
    ["", "<|im_end|>", "<|eot_id|>", "<|endoftext|>", "</s>", "<end_of_turn>", "<|end|>"]
)
EXPRESSIONS = st.sampled_from(
    ["df['sales'].max()", "len(df)", "round(df.price.mean(), 2)", "result", "answer",
     "df.groupby('store')['qty'].sum().max()", "np.median(x)"]
)  # fmt: skip


@st.composite
def printouts(draw, v: str) -> str:
    """`v` as a model prints it: in a tag, before a chat token, after a session's prompt, or in
    a one-cell markdown table."""
    kind = draw(st.sampled_from(["tag", "repl", "ipython", "table"]))
    if kind == "tag":
        open_, close = draw(TAGS)
        return f"{open_}{v}{close}{draw(CHAT_TOKENS)}"
    if kind == "repl":
        lines = [f">>> {draw(EXPRESSIONS)}"]
        if draw(st.booleans()):
            lines = [">>> import pandas as pd", "... ", *lines]
        return "\n".join([*lines, v]) + draw(CHAT_TOKENS)
    if kind == "ipython":
        n = draw(st.integers(min_value=1, max_value=99))
        return f"In [{n}]: {draw(EXPRESSIONS)}\nOut[{n}]: {v}"
    header = draw(st.sampled_from(["value", "max", "total", "result", "answer", "count"]))
    rule = draw(st.sampled_from(["---", ":---", "---:", ":---:", "------"]))
    edge = draw(st.sampled_from(["|", ""]))
    return f"{edge} {header} {edge}\n{edge}{rule}{edge}\n{edge} {v} {edge}".replace("  ", " ")


@PROPERTY
@given(data=st.data(), g=values, mode=MODES, tol=TOLERANCES)
def test_wrappers_a_printed_right_value_is_kept(data, g, mode, tol) -> None:
    _follows_default(g, data.draw(printouts(g)), mode, tol)


@PROPERTY
@given(data=st.data(), g=values, w=values, mode=MODES)
def test_wrappers_a_printed_hedge_is_refused(data, g, w, mode) -> None:
    assume(abs(float(g) - float(w)) > 0.1 * float(g))
    _refused(g, data.draw(printouts(f"{g} or {w}")), mode)


# --- glued numbers: a name, a decade, a function of the gold ------------------------------------

NAMES = st.sampled_from(["CO", "H", "uint", "int", "float", "v", "x", "A", "S", "Q", "py"])
DTYPES = st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "float32", "float64"])
SUPERSCRIPTS = st.sampled_from(["\u00b2", "\u00b3", "\u2074", "\u00b9\u2070"])
FRACTIONS = st.sampled_from(["\u00bd", "\u00bc", "\u00be", "\u2153", "\u215b"])


@st.composite
def functions_of(draw, g: str) -> str:
    """`g` under a function, as code, LaTeX or words write it."""
    return draw(
        st.sampled_from(
            [f"sqrt({g})", f"log({g})", f"ln({g})", f"np.log({g})", f"math.sqrt({g})",
             f"exp({g})", f"\\sqrt{{{g}}}", f"\u221a{g}", f"{g}!", f"{g}()", f"{g}\u00d7",
             f"the square root of {g}", f"{g} squared", f"twice {g}", f"log of {g}",
             f"{g}{draw(SUPERSCRIPTS)}", f"{g}{draw(FRACTIONS)}"]
        )
    )  # fmt: skip


@PROPERTY
@given(data=st.data(), g=integers, lead=st.sampled_from(["", "The answer is ", "Result: "]))
def test_glued_a_function_of_the_gold_is_refused(data, g, lead) -> None:
    _refused(g, lead + data.draw(functions_of(g)))


@PROPERTY
@given(name=NAMES, n=st.integers(min_value=2, max_value=999), mode=MODES)
def test_glued_a_number_glued_to_a_name_is_refused_for_the_plain_number(name, n, mode) -> None:
    _refused(str(n), f"{name}{n}", mode)


@PROPERTY
@given(
    dtype=DTYPES,
    name=st.sampled_from(["count", "sales", "price", "None"]),
    length=st.integers(min_value=1, max_value=9),
)
def test_glued_a_pandas_dtype_is_refused_for_its_bit_width(dtype, name, length) -> None:
    bits = "".join(ch for ch in dtype if ch.isdigit())
    assume(str(length) != bits)  # "Length: 8, dtype: int8" does say 8
    for printout in (f"Name: {name}, dtype: {dtype}", f"Length: {length}, dtype: {dtype}"):
        _refused(bits, printout)


@PROPERTY
@given(
    year=st.integers(min_value=1900, max_value=2029).map(lambda y: str(y - y % 10)),
    suffix=st.sampled_from(["s", "'s", "\u2019s"]),
    lead=st.sampled_from(["", "the ", "In the ", "It peaked in the "]),
)
def test_glued_a_decade_is_not_its_first_year(year, suffix, lead) -> None:
    _refused(year, f"{lead}{year}{suffix}")


# --- magnitude words: the table is closed and complete ------------------------------------------

# Each word with how models write it (case matters only for `MM`: `mm` is millimetres).
MAGNITUDE_WORDS = st.sampled_from(
    ["lakh", "lakhs", "Lakh", "lac", "crore", "crores", "Cr", "MM", "mn", "Mn", "mln", "Mio",
     "mil", "bln", "bil", "Mrd", "Mrd.", "Tsd", "Tsd.", "thou", "grand", "k", "K", "thousand",
     "million", "billion", "trillion", "bn", "tn", "trn", "milliard", "M", "B", "T"]
)  # fmt: skip


@PROPERTY
@given(
    g=values,
    word=MAGNITUDE_WORDS,
    gap=st.sampled_from(["", " "]),
    lead=st.sampled_from(["", "$", "\u20b9", "INR ", "about "]),
    mode=MODES,
    tol=TOLERANCES,
)
def test_magnitude_no_magnitude_word_passes_for_the_bare_number(
    g, word, gap, lead, mode, tol
) -> None:
    gap = " " if len(word) > 3 and word[0].islower() else gap
    _refused(g, f"{lead}{g}{gap}{word}", mode, tol)


# --- powers of ten: valued in every spelling -----------------------------------------------------

_TO_SUPERSCRIPT = str.maketrans(
    "0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b"
)


@st.composite
def powers_of_ten(draw, mantissa: str, exponent: int) -> str:
    spelling = draw(
        st.sampled_from(
            ["{m}\u00d710^{e}", "{m} \u00d7 10^{e}", "{m}\u00b710^{e}", "{m} \\times 10^{{{e}}}",
             "${m} \\times 10^{{{e}}}$", "{m}*10**{e}", "{m} x 10^{e}", "{m}\u00d710{sup}",
             "{m} \\cdot 10^{{{e}}}"]
        )
    )  # fmt: skip
    return spelling.format(m=mantissa, e=exponent, sup=str(exponent).translate(_TO_SUPERSCRIPT))


@PROPERTY
@given(
    data=st.data(),
    m=st.sampled_from(["4.2", "1.5", "2", "7.25", "9.9", "3"]),
    e=st.integers(min_value=-6, max_value=9).filter(lambda e: e not in (0,)),
    mode=MODES,
)
def test_powers_of_ten_a_power_of_ten_is_not_its_mantissa(data, m, e, mode) -> None:
    _refused(m, data.draw(powers_of_ten(m, e)), mode)


@PROPERTY
@given(
    data=st.data(),
    m=st.sampled_from(["4.2", "1.5", "2", "7.25", "3"]),
    e=st.integers(min_value=-4, max_value=7).filter(lambda e: e not in (0, 1)),
    mode=st.sampled_from(["", "numeric"]),
)
def test_powers_of_ten_strict_follows_default_on_the_right_value(data, m, e, mode) -> None:
    gold = f"{float(m) * 10.0**e:.10g}"
    _follows_default(gold, data.draw(powers_of_ten(m, e)), mode)


@PROPERTY
@given(e=st.integers(min_value=1, max_value=9), minus=st.booleans())
def test_powers_of_ten_a_bare_superscript_power_is_not_its_exponent_or_ten(e, minus) -> None:
    power = "10" + (f"-{e}" if minus else str(e)).translate(_TO_SUPERSCRIPT)
    _refused(str(e), power)
    if minus or e > 1:  # 10¹ is 10
        _refused("10", power)


# --- percentages, dates and units written another way -------------------------------------------


@PROPERTY
@given(
    d=st.sampled_from([2, 4, 5, 8, 10, 16, 20, 25, 40, 50]),
    k=st.integers(min_value=1, max_value=49),
    latex=st.booleans(),
)
def test_percent_a_fraction_for_a_percentage_follows_default(d, k, latex) -> None:
    assume(k < d)
    percent = f"{100 * k / d:g}%"
    fraction = f"\\frac{{{k}}}{{{d}}}" if latex else f"{k}/{d}"
    _follows_default(percent, fraction)


@PROPERTY
@given(
    bps=st.integers(min_value=1, max_value=999),
    word=st.sampled_from(["bps", "bp", "basis points", "bps."]),
    mode=st.sampled_from(["", "numeric"]),
)
def test_percent_basis_points_for_the_same_percentage_follow_default(bps, word, mode) -> None:
    _follows_default(f"{bps / 100:g}%", f"{bps} {word}", mode)


@PROPERTY
@given(p=values, mode=MODES)
def test_percent_per_mille_is_not_per_cent(p, mode) -> None:
    _refused(f"{p}%", f"{p}\u2030", mode)


@PROPERTY
@given(
    y=st.integers(min_value=1990, max_value=2030),
    m=st.integers(min_value=1, max_value=12),
    day=st.integers(min_value=1, max_value=28),
    form=st.sampled_from(["{M} {d}, {y} ({iso})", "{d} {M} {y} ({iso})", "{iso} ({M} {d}, {y})",
                          "{M} {d}, {y} [{iso}]", "{iso} (i.e. {M} {d}, {y})"]),
    shift=st.sampled_from([0, 0, 1]),
)  # fmt: skip
def test_dates_one_date_written_twice_is_that_date(y, m, day, form, shift) -> None:
    iso = f"{y}-{m:02d}-{day:02d}"
    written = form.format(M=MONTHS.split()[m - 1], d=day + shift, y=y, iso=iso)
    if shift:
        _refused(iso, written)
    else:
        _follows_default(iso, written)


AREAS = {
    "sq ft": ["sq ft", "square feet", "sq. ft.", "ft\u00b2", "sqft", "ft2"],
    "sq m": ["sq m", "square meters", "square metres", "m\u00b2", "sqm", "m2"],
    "sq km": ["sq km", "square kilometers", "km\u00b2"],
}


@PROPERTY
@given(
    n=st.integers(min_value=2, max_value=99_999),
    gold_unit=st.sampled_from(sorted(AREAS)),
    data=st.data(),
)
def test_units_one_unit_of_area_in_any_spelling_and_never_another(n, gold_unit, data) -> None:
    gold = f"{n} {gold_unit}"
    same = data.draw(st.sampled_from(AREAS[gold_unit]))
    _follows_default(gold, f"{n} {same}")
    other_unit = data.draw(st.sampled_from(sorted(set(AREAS) - {gold_unit})))
    _refused(gold, f"{n} {data.draw(st.sampled_from(AREAS[other_unit]))}")


@PROPERTY
@given(
    whole=st.integers(min_value=1, max_value=999),
    group=st.integers(min_value=0, max_value=999),
    places=st.integers(min_value=1, max_value=3),
    space=st.sampled_from([" ", "\u00a0", "\u202f"]),
    lead=st.sampled_from(["", "The total is ", "about "]),
)
def test_space_grouped_decimals_are_one_number(whole, group, places, space, lead) -> None:
    fraction = "7" * places
    gold = f"{whole}{group:03d}.{fraction}"
    _follows_default(gold, f"{lead}{whole}{space}{group:03d}.{fraction}")
