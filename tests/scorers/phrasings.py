"""Generated pairs for the strict profile's promises (issue 25, docs/scoring.md):

* `correct_phrasings()`: right answers written the ways answers are written, in every answer
  mode, each a pair the published grader accepts; strict may reject at most 0.5% of them
  (`tests/scorers/test_false_rejections.py`).
* `loophole_variants()`: wrong answers in each loophole class of the issue, as generated
  variants (not the issue's strings): a wrong value w combined with the gold g by a hedge
  template, negations and comparisons, magnitude words, date hedges and date lists where only
  the first date is right, comparison labels without letters. Strict accepts none of them
  (`tests/scorers/test_strict_classes.py`).

    python -c "from tests.scorers.phrasings import correct_phrasings; print(len(correct_phrasings()))"

Seeded and deterministic. `bench/grader_corpus.py` prints the counts per class and profile.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Phrasing:
    gold: str
    candidate: str
    reward_mode: str
    atol: float
    rtol: float
    mode: str  # the answer mode it stands for (numeric, percent, label, date, list, ...)
    template: str  # how the candidate was written


@dataclass(frozen=True)
class Variant:
    gold: str
    candidate: str
    reward_mode: str
    atol: float
    rtol: float
    loophole: str  # the class
    template: str


ZERO = (0.0, 0.0)
DECIMAL = (0.05, 0.01)
DEFAULT = (1e-3, 1e-3)

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen".split()
_ONES += "fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
MONTHS = "January February March April May June July August September October November December"
MONTH_NAMES = MONTHS.split()


def in_words(n: int) -> str:
    """An integer below one million in English words ("seventeen", "two hundred and five")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + ("" if ones == 0 else "-" + _ONES[ones])
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return _ONES[hundreds] + " hundred" + ("" if rest == 0 else " and " + in_words(rest))
    thousands, rest = divmod(n, 1000)
    return in_words(thousands) + " thousand" + ("" if rest == 0 else " " + in_words(rest))


def _fmt(value: float, places: int) -> str:
    return f"{value:.{places}f}"


# --- correct phrasings ---------------------------------------------------------------------------

# (template, modes and tolerances): "{v}" is the gold value as written.
NUMBER_TEMPLATES = [
    "{v}",
    " {v} ",
    "{v}.",
    "{v} {unit}",
    "The answer is {v}",
    "The answer is {v}.",
    "about {v}",
    "approximately {v} {unit}",
    "Answer: {v}",
    "x = {v}",
    "**{v}**",
    "`{v}`",
    "\\boxed{{{v}}}",
    "${v}$",
    "{v} in total",
    "Total: {v}",
]
UNIT_SYNONYMS = [
    ("years", ["yrs", "yr", "year", "Years"]),
    ("km", ["kilometers", "kilometres", "km"]),
    ("USD", ["dollars", "usd", "$"]),
    ("kg", ["kilograms", "kilos", "kgs"]),
    ("hours", ["h", "hrs", "hr", "hour"]),
    ("minutes", ["min", "mins", "minute"]),
    ("respondents", ["respondents", "Respondents"]),
    ("days", ["day", "d"]),
]


def _numbers(rng: random.Random) -> list[Phrasing]:
    out = []
    units = ["respondents", "orders", "passengers", "units", "years"]
    for _ in range(30):
        integer = rng.randint(2, 99_999)
        places = rng.choice([1, 2, 3])
        decimal = round(rng.uniform(1, 20_000), places)
        for text, (mode, tol) in (
            (str(integer), ("numeric", ZERO)),
            (str(integer), ("", ZERO)),
            (_fmt(decimal, places), ("numeric", DECIMAL)),
            (_fmt(decimal, places), ("flexible", DEFAULT)),
        ):
            template = rng.choice(NUMBER_TEMPLATES)
            cand = template.format(v=text, unit=rng.choice(units))
            out.append(Phrasing(text, cand, mode, *tol, "number", template))
        # other writings of the same value
        out.append(Phrasing(str(integer), f"{integer:,}", "numeric", *ZERO, "number", "{v:,}"))
        out.append(Phrasing(f"{integer:,}", str(integer), "", *ZERO, "number", "no commas"))
        out.append(Phrasing(str(integer), f"{integer}.0", "", *ZERO, "number", "{v}.0"))
        out.append(
            Phrasing(
                _fmt(decimal, places),
                str(round(decimal)),
                "numeric",
                0.5,
                0.01,
                "number",
                "rounded within tolerance",
            )
        )
        out.append(
            Phrasing(
                _fmt(decimal, places), f"{decimal:.4e}", "numeric", *DECIMAL, "number", "scientific"
            )
        )
        out.append(Phrasing(f"-{integer}", f"-{integer}.0", "numeric", *ZERO, "number", "-{v}.0"))
        out.append(
            Phrasing(f"${integer}", f"{integer} dollars", "numeric", *ZERO, "currency", "dollars")
        )
        out.append(Phrasing(f"${integer}", f"${integer:,}", "", *ZERO, "currency", "$1,234"))
        out.append(
            Phrasing(
                str(integer),
                f"{integer:_}".replace("_", " "),
                "",
                *ZERO,
                "number",
                "space thousands",
            )
        )
    return out


def _percents(rng: random.Random) -> list[Phrasing]:
    out = []
    for _ in range(25):
        pct = rng.choice([rng.randint(1, 99), round(rng.uniform(0.5, 99.5), 1)])
        fraction = f"{pct / 100:.4f}".rstrip("0")
        for gold, cand, template in (
            (f"{pct}%", str(pct), "{p}"),
            (f"{pct}%", f"{pct} %", "{p} %"),
            (f"{pct}%", f"{pct} percent", "{p} percent"),
            (f"{pct}%", fraction, "fraction"),
            (fraction, f"{pct}%", "percentage of a fraction"),
            (fraction, f"{pct} percent", "percent word of a fraction"),
            (f"{pct}%", f"The rate is {pct}%.", "sentence"),
        ):
            out.append(
                Phrasing(gold, cand, rng.choice(["", "numeric"]), *DEFAULT, "percent", template)
            )
    return out


def _labels(rng: random.Random) -> list[Phrasing]:
    out = []
    labels = ["East", "Premium", "Not Applicable", "Group A", "Electronics", "yes", "no", "True"]
    for label in labels:
        for cand, template in ((label.upper(), "upper"), (f"  {label.lower()} ", "spaced lower")):
            out.append(Phrasing(label, cand, "exact_short", *ZERO, "label", template))
            out.append(Phrasing(label, cand, "exact_bool", *ZERO, "yes_no", template))
    for _ in range(15):
        n = rng.randint(2, 99)
        for gold, cand, template in (
            (f"Class {n}", f"class {n}", "lower"),
            (f"Class {n}", f"The class is Class {n}", "sentence"),
            (f"Model {n}", f"model {n}", "lower"),
        ):
            out.append(
                Phrasing(gold, cand, rng.choice(["numeric", "flexible"]), *ZERO, "label", template)
            )
        k = rng.choice([30, 40, 50, 100])
        for gold, cand, template in (
            (f">{k}K", f"> {k}K", "spaced sign"),
            (f">{k}K", f"more than {k}K", "more than"),
            (f">{k}K", f"greater than {k}K", "greater than"),
            (f"<={k}K", f"at most {k}K", "at most"),
            (f"<={k}K", f"<= {k}k", "spaced, lower k"),
            (f">{k}K", f"over {k}K", "over"),
            (f"{k}-{k + 10}", f"{k}\u2013{k + 10}", "en dash"),
            (f"{k}-{k + 10}", f"{k} to {k + 10}", "to"),
            (f"{k}-{k + 10} years", f"{k} to {k + 10} years", "to, unit"),
            (f"{k}-{k + 10}", f"between {k} and {k + 10}", "between"),
        ):
            out.append(
                Phrasing(gold, cand, rng.choice(["numeric", "flexible"]), *ZERO, "label", template)
            )
    for _ in range(10):
        q = rng.randint(1, 4)
        year = rng.randint(2000, 2024)
        ordinal = ["1st", "2nd", "3rd", "4th"][q - 1]
        for gold, cand, template, mode in (
            (f"Q{q} {year}", f"{year} Q{q}", "year first", ""),
            (f"Q{q} {year}", f"{year}-Q{q}", "year-Qn", "numeric"),
            (f"Q{q} {year}", f"q{q} {year}", "lower", "exact_short"),
            (f"Q{q}", f"{ordinal} quarter", "ordinal", "numeric"),
            (f"Q{q}", f"Quarter {q}", "quarter n", "numeric"),
        ):
            out.append(Phrasing(gold, cand, mode, *ZERO, "period", template))
    return out


def _units(rng: random.Random) -> list[Phrasing]:
    out = []
    for _ in range(12):
        n = rng.choice([rng.randint(2, 500), round(rng.uniform(1, 99), 1)])
        for unit, synonyms in UNIT_SYNONYMS:
            synonym = rng.choice(synonyms)
            cand = f"${n}" if synonym == "$" else f"{n} {synonym}"
            mode = rng.choice(["", "numeric", "flexible"])
            out.append(Phrasing(f"{n} {unit}", cand, mode, *ZERO, "unit", "synonym"))
    return out


def _dates(rng: random.Random) -> list[Phrasing]:
    out = []
    for _ in range(25):
        y, m, d = rng.randint(1995, 2024), rng.randint(1, 12), rng.randint(1, 28)
        iso = f"{y}-{m:02d}-{d:02d}"
        month = MONTH_NAMES[m - 1]
        for cand, template in (
            (f"{iso}.", "trailing period"),
            (f"The peak was on {iso}.", "sentence"),
            (f"{y}-{m}-{d}", "unpadded"),
            (f"{y}/{m:02d}/{d:02d}", "slashes"),
            (f"{iso} 00:00:00", "midnight"),
            (f"{month} {d}, {y}", "Month d, yyyy"),
            (f"{d} {month} {y}", "d Month yyyy"),
            (f"{month[:3]} {d}, {y}", "Mon d, yyyy"),
        ):
            # The published grader accepts a date in numeric mode by its year, and in the
            # other modes when math-verify happens to.
            mode = rng.choice(["numeric", "numeric", "", "exact_short"])
            out.append(Phrasing(iso, cand, mode, *ZERO, "date", template))
        for gold, cand, template in (
            (f"{y}-{m:02d}", f"{month} {y}", "month name"),
            (f"{month} {y}", f"{y}-{m:02d}", "year-month"),
            (f"{month} {y}", f"{month[:3]} {y}", "abbreviated month"),
        ):
            out.append(Phrasing(gold, cand, rng.choice(["", "numeric"]), *ZERO, "date", template))
        if d > 12:
            mdy = f"{m:02d}/{d:02d}/{y}"
            out.append(Phrasing(mdy, f"{mdy}.", "", *ZERO, "date", "m/d/yyyy."))
            out.append(Phrasing(mdy, iso, "", *ZERO, "date", "m/d/yyyy as iso"))
    return out


def _lists(rng: random.Random) -> list[Phrasing]:
    out = []
    labels = ["East", "West", "North", "South", "Kettle", "Blender", "Toaster"]
    for _ in range(20):
        numbers = [str(rng.randint(1, 999)) for _ in range(rng.randint(2, 4))]
        gold = ", ".join(numbers)
        last = f"{', '.join(numbers[:-1])} and {numbers[-1]}"
        for cand, template in (
            (",".join(numbers), "no spaces"),
            (", ".join(reversed(numbers)), "reordered"),
            ("[" + gold + "]", "brackets"),
            ("; ".join(numbers), "semicolons"),
            (last, "and"),
            ("\n".join(numbers), "lines"),
            ("\n".join(f"{i}. {n}" for i, n in enumerate(numbers, start=1)), "numbered lines"),
        ):
            out.append(
                Phrasing(gold, cand, rng.choice(["list", "list_csv", ""]), *ZERO, "list", template)
            )
        words = rng.sample(labels, 3)
        out.append(
            Phrasing(
                ", ".join(words),
                ", ".join(reversed(words)),
                "list",
                *ZERO,
                "list",
                "reordered labels",
            )
        )
        a, b = rng.randint(2, 90), rng.randint(2, 90)
        out.append(
            Phrasing(
                f"{a} apples, {b} pears",
                f"{b} pears, {a} apples",
                "list",
                *ZERO,
                "list",
                "reordered items",
            )
        )
        ys = [f"{rng.randint(1995, 2024)}-0{k}-15" for k in (1, 2)]
        out.append(
            Phrasing(
                ", ".join(ys), ", ".join(reversed(ys)), "list", *ZERO, "list", "reordered dates"
            )
        )
    return out


def _expressions(rng: random.Random) -> list[Phrasing]:
    out = []
    for a, b in [(1, 2), (1, 4), (3, 4), (1, 5), (2, 5), (1, 8), (3, 8), (7, 20)]:
        value = f"{a / b:.4f}".rstrip("0")
        for gold, cand, template in (
            (value, f"{a}/{b}", "a/b"),
            (value, f"\\frac{{{a}}}{{{b}}}", "frac"),
            (f"{a}/{b}", value, "decimal of a/b"),
            (f"$\\frac{{{a}}}{{{b}}}$", f"$\\frac{{{2 * a}}}{{{2 * b}}}$", "frac equivalent"),
        ):
            out.append(Phrasing(gold, cand, "", *DEFAULT, "expression", template))
    for n in range(2, 12):
        out.append(Phrasing(f"$\\sqrt{{{n * n}}}$", str(n), "", *DEFAULT, "expression", "sqrt"))
        out.append(Phrasing(str(2**n), f"$2^{{{n}}}$", "", *DEFAULT, "expression", "power"))
    return out


@lru_cache(maxsize=2)
def correct_phrasings(seed: int = 25) -> tuple[Phrasing, ...]:
    """Right answers in every answer mode, each accepted by the published grader."""
    rng = random.Random(seed)
    out: dict[tuple, Phrasing] = {}
    for family in (_numbers, _percents, _labels, _units, _dates, _lists, _expressions):
        for phrasing in family(rng):
            key = (
                phrasing.gold,
                phrasing.candidate,
                phrasing.reward_mode,
                phrasing.atol,
                phrasing.rtol,
            )
            out.setdefault(key, phrasing)
    return tuple(out.values())


# --- loophole variants ---------------------------------------------------------------------------

SYMBOL_HEDGES = [
    "{a} | {b}",
    "{a} -> {b}",
    "{a} \u2192 {b}",
    "{a} = {b}",
    "{a} & {b}",
    "{a} \u2248 {b}",
    "{a} ({b})",
    "{a} [{b}]",
    "```\n{a}\n```\n```\n{b}\n```",
    "**{a}**\n**{b}**",
    "{a}\u2013{b}",
    "{a} \u00b1 {b}",
    "{a}? {b}?",
    "{a} / {b}?",
    "{a} vs {b}",
    "{a}; {b}",
    "{a} or {b}",
    "{a}, maybe {b}",
    "{a} (or {b})",
]
WORD_HEDGES = ["{a} or {words}", "{words}, or possibly {a}", "{a} (maybe {words})"]
NEGATIONS = [
    "not {g}",
    "Not {g}",
    "at least {g}",
    "at most {g}",
    "\u2260 {g}",
    "!= {g}",
    "{g}+",
    "< {g}",
    "> {g}",
    "<= {g}",
    ">={g}",
    "minus {g}",
    "{g} or more",
    "{g} or less",
    "more than {g}",
    "fewer than {g}",
    "no more than {g}",
    "up to {g}",
    "over {g}",
    "under {g}",
    "isn't {g}",
    "{g} plus",
    "upwards of {g}",
    "anything but {g}",
    "{g} max",
    "min {g}",
    "at the very least {g}",
    "other than {g}",
    "{g} and above",
]
MAGNITUDES = ["{g}k", "{g}K", "{g} thousand", "{g}M", "{g} million", "{g} bn", "{g} billion"]
DATE_HEDGES = [
    "{d} or {e}",
    "{d} to {e}",
    "{d}\n{e}",
    "{d}, {e}",
    "{d} - {e}",
    "between {d} and {e}",
    "{d} (or {e})",
    "{d} and {e}",
]
COMPARISON_LABELS = [(">", "<"), (">", "<="), ("<", ">"), ("<=", ">"), (">=", "<"), (">", "")]
MODES = [("", ZERO), ("numeric", ZERO), ("flexible", DECIMAL), ("exact_short", DEFAULT)]


def _pair(rng: random.Random) -> tuple[str, str]:
    """A gold and a wrong value, integers or decimals, far apart under any row tolerance."""
    if rng.random() < 0.5:
        g = rng.randint(2, 99_999)
        w = g + rng.choice([-1, 1]) * rng.randint(max(2, g // 10), max(3, g))
        return str(g), str(abs(w) if w != g else g + 7)
    places = rng.choice([1, 2])
    g = round(rng.uniform(1, 50_000), places)
    return _fmt(g, places), _fmt(g * rng.choice([0.5, 1.5, 2.5]) + 1, places)


@lru_cache(maxsize=2)
def loophole_variants(seed: int = 12, per_class: int = 60) -> tuple[Variant, ...]:
    """Wrong answers in each loophole class of issue 25, every one under several modes."""
    rng = random.Random(seed)
    out: dict[tuple, Variant] = {}

    def add(gold: str, cand: str, loophole: str, template: str) -> None:
        for mode, tol in MODES:
            key = (gold, cand, mode, *tol)
            out.setdefault(key, Variant(gold, cand, mode, *tol, loophole, template))

    for _ in range(per_class):
        g, w = _pair(rng)
        template = rng.choice(SYMBOL_HEDGES)
        a, b = (g, w) if rng.random() < 0.5 else (w, g)
        add(g, template.format(a=a, b=b), "hedge joined by a symbol or brackets", template)

        n, m = rng.randint(2, 999), rng.randint(2, 999)
        if n != m:
            template = rng.choice(WORD_HEDGES)
            add(str(n), template.format(a=n, words=in_words(m)), "spelled-out hedge", template)

        template = rng.choice(NEGATIONS)
        add(g, template.format(g=g), "negation or comparison", template)

        template = rng.choice(MAGNITUDES)
        add(g, template.format(g=g), "magnitude word on a plain gold", template)

        y, mo, d = rng.randint(1995, 2024), rng.randint(1, 12), rng.randint(1, 27)
        iso = f"{y}-{mo:02d}-{d:02d}"
        other = rng.choice(
            [
                f"{y}-{mo:02d}-{d + 1:02d}",
                f"{y}-{mo % 12 + 1:02d}-{d:02d}",
                f"{y + 1}-{mo:02d}-{d:02d}",
            ]
        )
        template = rng.choice(DATE_HEDGES)
        add(iso, template.format(d=iso, e=other), "date hedge with the gold first", template)

        first, second = iso, f"{y}-{mo % 12 + 1:02d}-01"
        gold_list = f"{first}, {second}"
        kind = rng.choice(["rest wrong", "superset", "subset"])
        if kind == "rest wrong":
            cand = f"{first}, {y}-{mo % 12 + 1:02d}-1{rng.randint(1, 9)}"
        elif kind == "superset":
            cand = f"{gold_list}, {y + 1}-01-01"
        else:
            cand = first
        add(gold_list, cand, "date list right only in its first date", kind)

        k = rng.choice([12, 30, 50, 250, 1000])
        right, wrong = rng.choice(COMPARISON_LABELS)
        spacing = rng.choice(["", " "])
        add(
            f"{right}{spacing}{k}",
            f"{wrong}{spacing}{k}",
            "comparison label without letters",
            f"{right} vs {wrong or 'none'}",
        )
    return tuple(out.values())
