"""A seeded corpus of answer pairs in the shapes real SmolDataEnvs answers take.

Used by the differential test against the published grader (`test_parity.py`), by the strict
profile's corpus tests (`test_strict_corpus.py`) and by `bench/strict_rates.py`, which prints what
`strict` newly rejects, class by class.

    python -c "from tests.scorers.fuzz_corpus import corpus; print(len(corpus()))"

Every pair carries its gold's `shape` (integer, decimal, percent, currency, thousands, scientific,
label, yes_no, date, list, free_text, latex, unicode, blank), the `relation` of the candidate to
the gold (how the generator made it: `same_value`, `hedge_or`, `x100_no_percent`, ...) and `same`,
the generator's judgement of whether the candidate states the gold's answer: True (a careful
maintainer accepts it), False (a wrong answer, whatever a lenient rung says) or None (it depends
on the question or the row's tolerance, e.g. a bare percentage for a fraction gold). Each pair is emitted
under a few reward modes and tolerances, as the rows that hold such golds have them.

The value pools are small on purpose: many pairs share their strings, so the symbolic rung (the
slow one) sees a bounded number of distinct pairs however large the corpus.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from tests.scorers.published_grader import published_grade


@dataclass(frozen=True)
class Pair:
    gold: str
    candidate: str
    reward_mode: str
    atol: float
    rtol: float
    shape: str
    relation: str
    same: bool | None


ZERO = (0.0, 0.0)
DECIMAL_TOL = (0.05, 0.01)
FINE_TOL = (1e-3, 0.005)
DEFAULT_TOL = (1e-3, 1e-3)

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
UNICODE_MINUS = "\u2212"

LABELS = [
    "East", "West", "North", "South", "Kettle", "Blender", "Toaster", "Female", "Male",
    "Premium", "Basic", "Not Applicable", "Group A", "Group B", "Electronics", "Sedan",
]  # fmt: skip
NUMBERED_LABELS = [
    ("Class {n}", "Type {n}"),
    ("iPhone {n}", "Galaxy S{n}"),
    ("Q{n}", "Week {n}"),
    ("Model {n}", "Version {n}"),
    ("Cluster {n}", "Segment {n}"),
]
UNITS = ["respondents", "years", "days", "orders", "units", "passengers"]
OTHER_UNITS = {
    "respondents": "households",
    "years": "months",
    "days": "weeks",
    "orders": "returns",
    "units": "boxes",
    "passengers": "flights",
}
YES_NO = [("yes", "Yes", "no"), ("no", "No", "yes"), ("True", "true", "False")]
FRACTIONS = [(1, 2), (1, 4), (3, 4), (1, 5), (2, 5), (1, 8), (3, 8), (1, 10), (7, 20), (9, 25)]


def _fmt(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _thousands(value: int) -> str:
    return f"{value:,}"


class _Draw:
    """Seeded draws. Pooled: from small pools, so strings repeat and the symbolic rung sees a
    bounded set of pairs. Fresh: a new value every time (for pairs settled before that rung)."""

    def __init__(self, seed: int, *, pooled: bool) -> None:
        self.rng = random.Random(seed)
        self.pooled = pooled
        self._pools: dict[str, list] = {}

    def _pick(self, name: str, make: Callable[[], object], size: int):
        if not self.pooled:
            return make()
        pool = self._pools.get(name)
        if pool is None:
            pool = self._pools[name] = [make() for _ in range(size)]
        return self.rng.choice(pool)

    def _rival(self, name: str, item, make: Callable[[], object]):
        """A different value; pooled, a fixed one per item (each gold meets one rival, not all)."""
        pool = self._pools.get(name)
        if self.pooled and pool is not None and item in pool:
            return pool[(pool.index(item) + 7) % len(pool)]
        other = make()
        while other == item:
            other = make()
        return other

    def choice(self, items):
        return self.rng.choice(items)

    def _make_small(self) -> int:
        return self.rng.randint(2, 99)

    def _make_integer(self) -> int:
        high = self.rng.choice([99, 99, 99_999, 99_999, 50_000_000])
        return self.rng.randint(2, high)

    def _make_decimal(self) -> tuple[float, int]:
        places = self.rng.choice([1, 2, 2, 3, 4])
        return round(self.rng.uniform(1, 20_000), places), places

    def small(self) -> int:
        return self._pick("small", self._make_small, 24)

    def integer(self) -> int:
        return self._pick("integer", self._make_integer, 40)

    def rival(self, value: int) -> int:
        return self._rival("integer", value, self._make_integer)

    def decimal(self) -> tuple[float, int]:
        return self._pick("decimal", self._make_decimal, 24)

    def rival_decimal(self, item: tuple[float, int]) -> tuple[float, int]:
        return self._rival("decimal", item, self._make_decimal)

    def fraction(self) -> tuple[float, int]:
        def make() -> tuple[float, int]:
            places = self.rng.choice([2, 3, 4])
            return round(self.rng.uniform(0.01, 0.99), places), places

        return self._pick("fraction", make, 16)

    def percent(self) -> float | int:
        def make() -> float | int:
            if self.rng.random() < 0.6:
                return self.rng.randint(1, 99)
            return round(self.rng.uniform(0.5, 99.5), 1)

        return self._pick("percent", make, 20)

    def date(self) -> tuple[int, int, int]:
        def make() -> tuple[int, int, int]:
            return self.rng.randint(1995, 2024), self.rng.randint(1, 12), self.rng.randint(1, 28)

        return self._pick("date", make, 24)

    def number_list(self) -> list[str]:
        def make() -> list[str]:
            return [str(self._make_small()) for _ in range(self.rng.randint(2, 4))]

        return self._pick("number_list", make, 20)

    def label_list(self) -> list[str]:
        return self._pick("label_list", lambda: self.rng.sample(LABELS, self.rng.randint(2, 3)), 20)

    def scientific(self) -> tuple[float, int]:
        def make() -> tuple[float, int]:
            return round(self.rng.uniform(1, 9.9), 1), self.rng.choice([-6, -4, -3, 3, 5, 6])

        return self._pick("scientific", make, 16)

    def year(self) -> int:
        return self._pick("year", lambda: self.rng.randint(1995, 2024), 8)

    def cents(self) -> int:
        return self._pick("cents", lambda: self.rng.randint(0, 99), 4)


# --- families: each yields (gold, candidate, relation, same) for one drawn value ---------------


def _integer(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = d.integer()
    w = d.rival(v)
    g = str(v)
    yield g, g, "same_text", True
    yield g, f"{v}.0", "same_value", True
    yield g, f" {v} ", "same_value", True
    if v >= 1000:
        yield g, _thousands(v), "same_value_thousands", True
        yield _thousands(v), g, "same_value_thousands", True
    yield g, f"{v} {d.choice(UNITS)}", "same_value_with_unit", True
    yield g, f"The answer is {v}", "same_value_in_sentence", True
    yield g, f"\\boxed{{{v}}}", "same_value_latex", True
    yield g, f"${v}$", "same_value_latex", True
    yield g, g.translate(ARABIC_INDIC), "same_value_unicode_digits", True
    yield g, g.translate(FULLWIDTH), "same_value_unicode_digits", True
    yield g, str(w), "wrong_value", False
    yield g, str(v + 1), "off_by_one", None
    yield g, f"-{v}", "sign_flip", False
    yield g, f"{UNICODE_MINUS}{v}", "unicode_minus_sign_flip", False
    yield g, f"- {v}", "spaced_minus_sign_flip", False
    yield g, f"{v} or maybe {w}", "hedge_or", False
    yield g, f"{w} or maybe {v}", "hedge_or", False
    yield g, f"{w} {v}", "hedge_sequence", False
    yield g, " ".join(str(v - k) for k in range(4, 0, -1)) + f" {v}", "hedge_sequence", False
    yield g, f"{w}, {v}", "hedge_comma", False
    yield g, f"{v}, {w}", "hedge_comma", False
    yield g, f"between {w} and {v}", "hedge_range", False
    yield g, f"{min(v, w)}-{max(v, w)}", "hedge_range", False
    if 10 <= v < 1000:
        s = str(v)
        yield g, f"{s[0]},{s[1:]}", "comma_merge", False
    yield g, _fmt(v / 100, 4).rstrip("0").rstrip("."), "x100_no_percent", False
    yield g, f"{v}%", "same_value_percent_sign", True
    yield g, f"Class {v}", "same_value_labelled", True
    if 1990 <= v <= 2030:
        yield g, f"{v}-05-01", "date_for_year", False


def _decimal(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v, places = d.decimal()
    w, _ = d.rival_decimal((v, places))
    if abs(w - v) <= 0.02 * abs(v):  # a wrong value, whatever the row's tolerance
        w = round(v * 1.5 + 1, places)
    g = _fmt(v, places)
    yield g, g, "same_text", True
    yield g, _fmt(v, places + 2), "same_value", True
    yield g, _fmt(v, max(0, places - 1)), "same_value_rounded", True
    yield g, str(round(v)), "same_value_rounded", True
    yield g, f"{v:.4e}", "same_value_scientific", True
    yield g, f"{g} {d.choice(UNITS)}", "same_value_with_unit", True
    yield g, f"approximately {g}", "same_value_in_sentence", True
    yield g, f"\\boxed{{{g}}}", "same_value_latex", True
    yield g, _fmt(w, places), "wrong_value", False
    yield g, _fmt(v * 1.2, places), "wrong_value", False
    yield g, f"{g} or maybe {_fmt(w, places)}", "hedge_or", False
    yield g, f"{_fmt(w, places)} or maybe {g}", "hedge_or", False
    yield g, f"{_fmt(w, places)} {g}", "hedge_sequence", False
    yield g, f"{g} (sd {_fmt(w / 10, 2)})", "value_with_extra_number", None
    yield g, _fmt(v / 100, places + 2), "x100_no_percent", False
    yield g, _fmt(v * 100, max(0, places - 2)), "x100_no_percent", False
    yield g, f"{UNICODE_MINUS}{g}", "unicode_minus_sign_flip", False
    yield f"-{g}", f"-{g}", "same_text", True
    yield f"-{g}", g, "sign_flip", False
    yield f"-{g}", f"{UNICODE_MINUS}{g}", "same_value_unicode_minus", True
    yield f"-{g}", f"- {g}", "same_value_spaced_minus", True


def _fraction(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v, places = d.fraction()
    g = _fmt(v, places)
    pct = _fmt(v * 100, max(0, places - 2))
    yield g, g, "same_text", True
    yield g, f"{pct}%", "same_value_as_percent", True
    yield g, f"{pct} %", "same_value_as_percent", True
    yield g, pct, "x100_no_percent", None
    yield g, _fmt(v + 0.1, places), "wrong_value", False
    yield g, _fmt(v / 100, places + 2), "x100_no_percent", False
    yield g, f"{g} or maybe {_fmt(1 - v, places)}", "hedge_or", False
    yield g, f"{_fmt(1 - v, places)} or maybe {g}", "hedge_or", False
    a, b = d.choice(FRACTIONS)
    frac = _fmt(a / b, 4).rstrip("0")
    yield frac, f"{a}/{b}", "same_value_fraction", True
    yield frac, f"\\frac{{{a}}}{{{b}}}", "same_value_fraction", True
    yield f"{a}/{b}", frac, "same_value_fraction", True
    yield f"\\frac{{{a}}}{{{b}}}", frac, "same_value_fraction", True
    yield f"\\frac{{{a}}}{{{b}}}", f"{a + 1}/{b}", "wrong_value", False
    yield f"{a}/{b}", _fmt(a / b + 0.05, 3), "wrong_value", False


def _percent(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = d.percent()
    s = str(v)
    sign = d.choice(["", "", "-"])
    for g in (f"{sign}{s}%", f"{sign}{s} %"):
        yield g, g, "same_text", True
        yield g, f"{sign}{s}", "same_value", True
        yield g, f"{sign}{float(v):.2f}", "same_value", True
        yield g, f"{sign}{s}%", "same_value_percent_sign", True
        yield g, f"{sign}{s} percent", "same_value_in_sentence", True
        yield g, f"{sign}{v / 100:.4f}".rstrip("0"), "same_value_as_fraction", True
        yield g, f"{sign}{v + 1}", "wrong_value", False
        yield g, f"{sign}{v / 10:g}", "wrong_value", False
        yield g, f"{sign}{s} or maybe {sign}{v + 3}", "hedge_or", False
        if not sign:
            yield g, f"-{s}", "sign_flip", False


def _currency(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = d.integer()
    cents = f"{v}.{d.cents():02d}"
    for g, plain in (
        (f"${v}", str(v)),
        (f"$ {v}", str(v)),
        (f"{cents} $", cents),
        (f"${_thousands(v)}", str(v)),
        (f"-${v}", f"-{v}"),
        (f"$-{v}", f"-{v}"),
    ):
        yield g, g, "same_text", True
        yield g, plain, "same_value", True
        yield g, f"{plain} dollars", "same_value_with_unit", True
        if plain.startswith("-"):
            yield g, plain[1:], "sign_flip", False
        else:
            yield g, f"{float(plain) * 2 + 5:g}", "wrong_value", False
            yield g, f"{plain} or maybe {float(plain) + 5:g}", "hedge_or", False


def _thousands_family(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = max(d.integer(), 1000)
    g = _thousands(v)
    yield g, str(v), "same_value", True
    yield g, g, "same_text", True
    yield g, f"{g}.0", "same_value", True
    yield g, str(v).replace(",", " "), "same_value", True
    yield g, f"{v:_}".replace("_", " "), "same_value_space_thousands", True
    yield g, _thousands(v + 1000), "wrong_value", False
    yield g, f"{g} or maybe {_thousands(v * 2)}", "hedge_or", False
    yield f"{g}.5", f"{v}.5", "same_value", True


def _scientific(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    mantissa, exponent = d.scientific()
    value = mantissa * 10**exponent
    for g in (f"{mantissa}e{exponent}", f"{mantissa}E{exponent:+03d}"):
        yield g, g, "same_text", True
        plain = f"{value:.10f}".rstrip("0").rstrip(".") if exponent < 0 else f"{value:.0f}"
        yield g, plain, "same_value", True
        yield g, f"{mantissa} x 10^{exponent}", "same_value_in_sentence", None
        yield g, f"{mantissa}e{exponent + 1}", "wrong_value", False
        yield g, f"{mantissa * 2:.1f}e{exponent}", "wrong_value", False


def _label(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    g = d.choice(LABELS)
    other = d.choice([x for x in LABELS if x != g])
    yield g, g, "same_text", True
    yield g, f"  {g.upper()} ", "same_label_case", True
    yield g, f"{g}.", "label_punctuation", False
    yield g, other, "wrong_label", False
    n = d.small()
    pattern, rival = d.choice(NUMBERED_LABELS)
    labelled = pattern.format(n=n)
    yield labelled, labelled.lower(), "same_label_case", True
    yield labelled, rival.format(n=n), "label_same_number", False
    yield labelled, pattern.format(n=n + 1), "wrong_label", False
    yield labelled, str(n), "label_number_only", False
    k = d.choice([50, 40, 30, 100])
    yield f">{k}K", f"<={k}K", "label_comparison", False
    yield f"<={k}K", f">{k}K", "label_comparison", False
    yield f">{k}K", f"{k}K", "label_comparison", False
    yield f">{k}K", f"> {k}K", "same_label_spacing", True
    yield f">{k}K", f">{k}k", "same_label_case", True
    yield f"{k}-{k + 10} years", f"{k + 10}-{k + 20} years", "label_range", False
    yield f"{k}-{k + 10} years", f"{k}", "label_range", False


def _yes_no(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    g, same, other = d.choice(YES_NO)
    yield g, same, "same_label_case", True
    yield g, other, "wrong_label", False
    yield g, f"{g}.", "label_punctuation", False
    yield g, "1" if g in ("yes", "True") else "0", "boolean_as_number", None


def _date(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    y, m, day = d.date()
    iso = f"{y}-{m:02d}-{day:02d}"
    yield iso, iso, "same_text", True
    yield iso, f"{y}-{m}-{day}", "same_date_other_format", True
    yield iso, f"{y}/{m:02d}/{day:02d}", "same_date_other_format", True
    yield iso, f"{iso} 00:00:00", "same_date_with_midnight", True
    yield iso, str(y), "date_year_only", False
    yield iso, f"{y}-{m:02d}-{day % 28 + 1:02d}", "date_wrong_day", False
    yield iso, f"{y}-{m % 12 + 1:02d}-{day:02d}", "date_wrong_month", False
    yield iso, f"{y + 1}-{m:02d}-{day:02d}", "date_wrong_year", False
    yield f"{y}-{m:02d}", str(y), "date_year_only", False
    yield f"{y}-{m:02d}", f"{y}-{m % 12 + 1:02d}", "date_wrong_month", False
    yield f"{m:02d}/{day:02d}/{y}", f"{m:02d}/{day:02d}/{y}", "same_text", True
    yield f"{m:02d}/{day:02d}/{y}", str(m), "date_month_only", False
    yield f"{iso} 14:30:00", iso, "date_without_time", False


def _list(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    for items in (d.number_list(), d.label_list()):
        g = ", ".join(items)
        yield g, g, "same_text", True
        yield g, ",".join(items), "same_list_spacing", True
        yield g, ", ".join(reversed(items)), "same_list_reordered", True
        yield g, "[" + ", ".join(items) + "]", "same_list_brackets", True
        yield g, items[-1], "list_last_item_only", False
        yield g, items[0], "list_first_item_only", False
        yield g, ", ".join(items[:-1]), "list_missing_item", False
        yield g, ", ".join([*items, items[0]]), "list_extra_item", False
        yield g, " ".join(items), "same_list_spaces", None
    a = d.small()
    b = a + d.choice([1, 5, 11])
    fruit_a, fruit_b = d.rng.sample(["apples", "pears", "plums", "cars", "trucks"], 2)
    g = f"{a} {fruit_a}, {b} {fruit_b}"
    yield g, f"{a} {fruit_b}, {b} {fruit_a}", "list_items_relabelled", False
    yield g, f"{b} {fruit_b}, {a} {fruit_a}", "same_list_reordered", True
    yield g, f"{a}, {b}", "same_list_numbers_only", None
    x, places = d.fraction()
    y, _ = d.fraction()
    g = f"{_fmt(x, places)}, {_fmt(y, places)}"
    yield g, f"{_fmt(x, places + 1)}, {_fmt(y, places + 1)}", "same_list_values", True
    yield g, f"{_fmt(x * 100, 1)}, {_fmt(y * 100, 1)}", "x100_no_percent", None
    yield g, f"{_fmt(x + 0.2, places)}, {_fmt(y, places)}", "wrong_value", False
    ys = [f"{d.year()}-0{k}-01" for k in (1, 2)]
    zs = [f"{s[:4]}-0{k + 3}-1{k}" for k, s in enumerate(ys)]
    yield ", ".join(ys), ", ".join(zs), "list_of_dates_wrong_days", False


def _free_text(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = d.integer()
    unit = UNITS[v % len(UNITS)]
    g = f"{v} {unit}"
    yield g, str(v), "same_value", True
    yield g, g, "same_text", True
    yield g, f"{v} {unit.upper()}", "same_label_case", True
    yield g, f"about {v} {unit}", "same_value_in_sentence", True
    yield g, f"{v} {OTHER_UNITS[unit]}", "wrong_unit", False
    yield g, f"{v + 1} {unit}", "wrong_value", False
    yield g, f"{v} or {v + 4} {unit}", "hedge_or", False
    yield g, f"{v} {unit} in {d.year()}", "value_with_extra_number", None


def _latex(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    a, b = d.choice(FRACTIONS)
    v = d.small()
    yield f"${a}/{b}$", f"{a / b:.4f}".rstrip("0"), "same_value_fraction", True
    yield f"$\\frac{{{a}}}{{{b}}}$", f"$\\frac{{{2 * a}}}{{{2 * b}}}$", "same_value_fraction", True
    yield f"\\sqrt{{{v * v}}}", str(v), "same_value", True
    yield f"\\sqrt{{{v * v}}}", str(v + 1), "wrong_value", False
    yield f"2^{{{v % 12 + 1}}}", str(2 ** (v % 12 + 1)), "same_value", True
    yield f"2^{{{v % 12 + 1}}}", str(2 ** (v % 12)), "wrong_value", False
    yield f"\\boxed{{{v}}}", str(v), "same_value", True
    yield str(v), f"\\text{{{v} units}}", "same_value_latex", True
    yield str(v), f"x = {v}", "same_value_in_sentence", True
    yield str(v), f"$x = {v + 2}$", "wrong_value", False


def _unicode(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = d.small()
    g = str(v)
    yield g, g.translate(ARABIC_INDIC), "same_value_unicode_digits", True
    yield g.translate(FULLWIDTH), g, "same_value_unicode_digits", True
    yield g, f"{UNICODE_MINUS}{v}", "unicode_minus_sign_flip", False
    yield g, f"- {v}", "spaced_minus_sign_flip", False
    yield g, f"\u2013{v}", "dash_before_value", None
    yield f"-{v}", f"{UNICODE_MINUS}{v}", "same_value_unicode_minus", True
    yield f"{UNICODE_MINUS}{v}", f"-{v}", "same_value_unicode_minus", True
    yield f"{UNICODE_MINUS}{v}", str(v), "unicode_minus_sign_flip", False
    yield f"-{v}", f"- {v}", "same_value_spaced_minus", True
    yield f"-{v}", f"-\u00a0{v}", "same_value_spaced_minus", True
    yield f"{v}\u00a0%", f"{v}", "same_value", True


def _blank(d: _Draw) -> Iterator[tuple[str, str, str, bool | None]]:
    v = str(d.small())
    for blank in ("", " ", "\n\t ", "\u00a0"):
        yield blank, v, "blank_gold", None
        yield blank, blank, "blank_both", None
        yield blank, "", "blank_both", None
        yield v, blank, "blank_candidate", False
        yield "East", blank, "blank_candidate", False


# (family, its gold shape, draws, reward modes and tolerances its rows carry)
Family = tuple[
    Callable[[_Draw], Iterator[tuple[str, str, str, bool | None]]],
    str,
    int,
    list[tuple[str, tuple[float, float]]],
]
FAMILIES: list[Family] = [
    (_integer, "integer", 600, [("numeric", ZERO), ("", ZERO), ("exact_short", DEFAULT_TOL)]),
    (_decimal, "decimal", 600, [("numeric", DECIMAL_TOL), ("numeric", FINE_TOL), ("", ZERO)]),
    (_fraction, "decimal", 500, [("numeric", FINE_TOL), ("", DEFAULT_TOL), ("flexible", ZERO)]),
    (_percent, "percent", 400, [("numeric", ZERO), ("", DECIMAL_TOL), ("exact_short", ZERO)]),
    (_currency, "currency", 300, [("numeric", ZERO), ("", ZERO), ("flexible", DECIMAL_TOL)]),
    (_thousands_family, "thousands", 300, [("numeric", ZERO), ("", ZERO)]),
    (_scientific, "scientific", 300, [("numeric", (0.0, 0.005)), ("", ZERO)]),
    (_label, "label", 500, [("exact_short", ZERO), ("numeric", ZERO), ("flexible", ZERO)]),
    (_yes_no, "yes_no", 200, [("exact_bool", ZERO), ("exact_short", ZERO), ("", DEFAULT_TOL)]),
    (_date, "date", 400, [("exact_short", ZERO), ("", ZERO), ("numeric", ZERO)]),
    (_list, "list", 400, [("list", ZERO), ("list_csv", DECIMAL_TOL), ("", ZERO)]),
    (_free_text, "free_text", 300, [("numeric", ZERO), ("flexible", ZERO), ("", ZERO)]),
    (_latex, "latex", 250, [("", DEFAULT_TOL), ("numeric", FINE_TOL)]),
    (_unicode, "unicode", 250, [("numeric", ZERO), ("", ZERO), ("exact_short", ZERO)]),
    (_blank, "blank", 40, [("", DEFAULT_TOL), ("numeric", ZERO), ("list", ZERO)]),
]


class _Symbolic(Exception):
    pass


def _reaches_symbolic(gold: str, candidate: str) -> bool:
    raise _Symbolic


def _settled_before_symbolic(gold: str, candidate: str, mode: str, atol: float, rtol: float):
    try:
        published_grade(
            gold,
            candidate,
            reward_mode=mode,
            abs_tol=atol,
            rel_tol=rtol,
            symbolic=_reaches_symbolic,
        )
    except _Symbolic:
        return False
    return True


@lru_cache(maxsize=4)
def corpus(seed: int = 12) -> tuple[Pair, ...]:
    """The corpus for `seed`: about 130,000 distinct (gold, candidate, mode, tolerances).

    Pooled draws give every relation on a bounded set of strings; fresh draws add new values,
    kept only where the published ladder settles the pair before its symbolic rung (so the
    differential test's math-verify work stays bounded).
    """
    pairs: dict[tuple[str, str, str, float, float], Pair] = {}
    for pooled in (True, False):
        draw = _Draw(seed if pooled else seed + 1, pooled=pooled)
        for family, shape, draws, settings in FAMILIES:
            for _ in range(draws):
                for gold, candidate, relation, same in family(draw):
                    for mode, (atol, rtol) in settings:
                        key = (gold, candidate, mode, atol, rtol)
                        if key in pairs or not (
                            pooled or _settled_before_symbolic(gold, candidate, mode, atol, rtol)
                        ):
                            continue
                        pairs[key] = Pair(*key, shape=shape, relation=relation, same=same)
    return tuple(pairs.values())
