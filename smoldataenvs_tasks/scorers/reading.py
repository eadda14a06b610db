"""What one side of a pair says, as the strict profile reads it (docs/scoring.md "The strict
profile").

The published ladder reads a side as its first number (the numeric rung) or hands it to
math-verify, which reads its last. Both readings let a hedge, a negation or a magnitude word
through. The strict profile reads the whole side instead, once, into a `Reading`:

* `Value`: one number, with what qualifies it: its sign (a Unicode minus or a spaced minus
  included), a magnitude word (`12k`, `3.14M`, `7 bn`, `12 thousand`), a percent sign, a
  comparison or negation (`> 12`, `at least 12`, `not 12`, `12+`, `more than 50K`), the word
  naming it (`Class 2`) and the unit after it (`12 yrs` is `12 years`);
* `Range`: two values joined by a range word or dash (`30-40`, `30–40`, `30 to 40`);
* `Date` (`2019-05-01`, `May 1, 2019`, `1 May 2019`, `12/13/1994`), `Period` (`Q3 2021`,
  `2021-Q3`, `3rd quarter`), `Ratio` (`3:1`, `14:30`);
* `Expr`: one math expression (`1/2`, `\\frac{1}{2}`, `2^{10}`, `\\sqrt{49}`); strict values
  the simple ones (a/b, a^b, roots, a×10^b) itself and leaves the rest to math-verify;
* `Items`: a list, in commas, semicolons, lines or a final "and" (`12, 7 and 3`);
* `Multi`: several numbers that are none of the above (`12 or seventeen`, `17 | 12`, `12 (17)`,
  `48 ≈ 42`, two code fences): a hedge;
* `Text`: no number at all;
* `Crowd`: more numbers than any answer holds (over `MAX_NUMBERS`: a table, a log, a dump).
  Found by counting digit runs, before any quick path or the token pattern runs, so a side of
  up to 1 MiB is read in linear time and a few milliseconds per 100 KB (issue 33).

Numbers are found by kind before they are counted: a date, a quarter or a thousands-separated
number is one token, and spelled-out numbers (`seventeen`) count as numbers. Pure; readings are
remembered per string, because a gold is read once per sample and a candidate often repeats.

Most sides take a quick path that never runs the token pattern: a plain number, a number with
words, a sign, a currency or a percent sign around it, a hedge of plain numbers, a comma list,
a range, a bare date, and (`read_words`) any side of plain words and numbers. Each quick path
must give exactly what the full reading gives; tests/scorers/test_reading.py checks that by
property and on every corpus side. That is why this stays one long module: the quick paths
and the full reading share their private tables (special words, units, fillers, the token
pattern), and a quick path split from the reading it must equal would read those tables through
another module's public names, where a change to one side need not reach the other. The module
grows by a rung's words or a new shape, each beside the quick path that must agree with it.

    python -c "from smoldataenvs_tasks.scorers.reading import read; print(read('at least 12k'))"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

__all__ = [
    "MAX_NUMBERS",
    "Crowd",
    "Date",
    "Expr",
    "Items",
    "Multi",
    "Period",
    "Range",
    "Ratio",
    "Reading",
    "Text",
    "Value",
    "clear_cache",
    "read",
    "read_item",
    "read_words",
    "remember",
    "remembered",
]


class Value(NamedTuple):
    number: float  # signed, magnitude applied: what the side means
    digits: float  # the number as written, unsigned, without its magnitude
    negative: bool
    magnitude: float
    percent: bool
    comparison: frozenset[str]
    label: str | None  # the word right before the number ("class" in "Class 2")
    unit: str | None  # the unit after it, canonical ("year" for "yrs")
    scientific: bool
    plain: bool  # nothing but the number (and a sign): what the numeric rung already judged


class Range(NamedTuple):
    low: Value
    high: Value


class Date(NamedTuple):
    key: tuple  # (year, month, day, hour, minute, second); day None for a month; or ambiguous


class Period(NamedTuple):
    quarter: int
    year: int | None


class Ratio(NamedTuple):
    parts: tuple[int, ...]


class Expr(NamedTuple):
    value: float | None  # what a simple expression (a/b, a^b, a root, a×10^b) comes to


class Items(NamedTuple):
    items: tuple[Reading, ...]
    # Each item's text lowercased, whitespace collapsed: items with equal texts say the same
    # (strict compares them per pair of items, so they are normalised once, here).
    texts: tuple[str, ...]
    comma_joined: bool  # digits joined by a bare comma ("1,5"): what the published reading merges


class Multi(NamedTuple):
    values: tuple[float, ...]  # every number found, to tell a hedge of the gold from a miss
    has_date: bool


class Text(NamedTuple):
    pass


class Crowd(NamedTuple):
    # How many numbers were counted (more than MAX_NUMBERS): its digit runs, or the tokens read
    # until there were too many (numbers in words: "one. one. one. ...").
    numbers: int


Reading = Value | Range | Date | Period | Ratio | Expr | Items | Multi | Text | Crowd

# No answer holds more numbers than this (a gold list has a few dozen items at most); a side
# that does is not one answer, and its numbers are not read one by one (issue 33: a 1 MiB
# "1,1,1,..." took minutes, a 180 KB table tens of seconds).
MAX_NUMBERS = 1_000
# A side with more digit runs than MAX_NUMBERS has at least this many characters: shorter
# sides skip the count.
_CROWD_MIN_CHARS = 2 * MAX_NUMBERS + 1
_DIGIT_RUN = re.compile(r"\d+")

_EXPR = Expr(None)
_TEXT = Text()
# tuple.__new__ directly: a NamedTuple's own __new__ is a Python function, a third of the cost
# of reading a plain number.
_new = tuple.__new__

# --- cleaning: markup that wraps an answer without changing it ------------------------------

_FENCE = re.compile(r"```[\w+-]*")
# `**` between digits is Python's power ("4.2*10**3"), not bold.
_MARKUP = re.compile(r"(?<!\d)\*\*|\*\*(?![-\d])|__|`")
_LATEX_WRAPPER = re.compile(
    r"\\(?:boxed|text|textbf|textrm|mathrm|mathbf|operatorname|displaystyle|left|right)\b"
)
_LATEX_SPACE = re.compile(r"\\[,;:! ]|\\quad|\\qquad|~")
_LATEX_DELIMITER = re.compile(r"\\[()\[\]]")
_MATH_DOLLARS = re.compile(r"^\$\$?(.+?)\$?\$$", re.DOTALL)
# A `$` pair that delimits LaTeX math inside a sentence ("The final answer is $\\boxed{12}$."),
# by the rule Markdown renderers follow (pandoc's tex_math_dollars): `$$...$$`, or a `$` with
# no space after it closed by a `$` with no space before it and no digit after it. A currency
# sign fails it: "$45", "US$ 45", "$5 and $10", "$5-$10" (issue 33: the delimiter was read as
# dollars, so "12 kg" refused "$\boxed{12}$" as another unit). A `$` right after a digit is a
# currency sign written after its amount ("10$-20$"), never an opening delimiter.
_MATH_SPAN = re.compile(r"\$\$([^$]+)\$\$|(?<![\d$])\$(?=[^\s$])([^$]*?[^\s$])\$(?![\d$])")
_QUOTES = "\"'“”‘’«»"
# Wrappers models print around an answer (issue 33): answer tags anywhere, and a leading
# "Answer", "Final answer", "Final" or "Result" with a colon, `=`, or an arrow, which would
# otherwise read as a comparison (`->`, `=>`) or a sign (`-> -17`).
_ANSWER_TAG = re.compile(r"(?i:<\s*/?\s*(?:final[_ ]?)?answer\s*>)")
_ANSWER_LEAD = re.compile(
    r"(?i:(?:(?:the\s+)?final\s+answer|answer|final|result)\s*(?:is\s*)?(?:->|=>|→|⇒|:|=)\s*)"
)


# Markup that only formats an answer (issue 46): HTML formatting tags and the chat templates'
# special tokens a model may print ("<b>42</b>", "42<|im_end|>", "42</s>"). A tag that could
# change the number (`<sup>`, `<sub>`) is not one of them.
_FORMAT_TAG = re.compile(
    r"<\|[\w.-]{1,40}\|>|(?i:</?(?:b|i|u|s|em|strong|code|pre|span|p|div|br|hr|mark|tt|kbd"
    r"|samp|small|big|font|eos|bos|end_of_turn|start_of_turn|end_of_text|eot)(?![\w-])[^<>]{0,200}>)"
)
# A Python or IPython session printed whole (issue 46): the input lines are the code, the answer
# is what it printed ("Out[3]: 42" is 42).
_REPL_INPUT = re.compile(r"^[ \t]*(?:>>>|\.\.\.)(?:[ \t].*)?$|^[ \t]*In \[\d+\]:.*$", re.M)
_REPL_OUTPUT = re.compile(r"^[ \t]*Out\[\d+\]:[ \t]*", re.M)


def _table_rules(text: str) -> str:
    """A markdown table without its rule lines (`|---|:---:|`): their dashes are no minus sign
    (issue 46: a one-cell table read as -42). Line by line, in linear time."""
    lines = text.split("\n")
    kept = [line for line in lines if "---" not in line or line.strip(" \t|:-")]
    return "\n".join(kept) if len(kept) != len(lines) else text


def _repl(text: str) -> str:
    without = _REPL_OUTPUT.sub("", _REPL_INPUT.sub("", text))
    return without if without.strip() else text


def _clean(text: str) -> str:
    if "<" in text:
        text = _FORMAT_TAG.sub(" ", text)
    if ">>>" in text or "In [" in text or "Out[" in text:
        text = _repl(text)
    if "---" in text:
        text = _table_rules(text)
    if "`" in text:
        text = _FENCE.sub("\n", text)
    if "*" in text or "_" in text or "`" in text:
        text = _MARKUP.sub("", text)
    if "<" in text:
        text = _ANSWER_TAG.sub(" ", text)
    if "\\" in text:
        text = text.replace("\\%", "%").replace("\\$", "\x00")
    if "$" in text:
        # Before the LaTeX commands go: "$\displaystyle 12$" has no space after its `$`.
        text = _MATH_SPAN.sub(_math_inside, text)
    if "\\" in text:
        text = _LATEX_WRAPPER.sub("", text)
        text = _LATEX_SPACE.sub(" ", text)
        text = _LATEX_DELIMITER.sub(" ", text)
    text = text.strip().strip(_QUOTES).strip()
    lead = _ANSWER_LEAD.match(text)
    if lead is not None:
        text = text[lead.end() :]
    if text.startswith("$") and text.endswith("$") and len(text) > 2:
        inner = _MATH_DOLLARS.match(text)
        if inner is not None and "$" not in inner.group(1):
            text = inner.group(1).strip()
    if text.startswith("{") and text.endswith("}") and text.count("{") == 1 == text.count("}"):
        text = text[1:-1].strip()  # what \boxed{...} or \text{...} leave
    return text.replace("\x00", "$")


def _math_inside(span: re.Match[str]) -> str:
    return f" {span.group(1) if span.group(1) is not None else span.group(2)} "


# --- tokens: every number-like thing in a side, each counted once ------------------------------

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_MONTH_NUMBER = r"(?:0?[1-9]|1[0-2])"
_DAY_NUMBER = r"(?:0?[1-9]|[12]\d|3[01])"
_TIME = r"(?:[ T](?P<{p}H>[01]?\d|2[0-3]):(?P<{p}M>[0-5]\d)(?::(?P<{p}S>[0-5]\d))?)?"
_ORDINAL_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_NUMBER_WORDS = (
    r"zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    r"|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fourty|fifty|sixty"
    r"|seventy|eighty|ninety|hundred|thousand|million|billion|trillion|dozen"
)
# The magnitude table is closed (docs/scoring.md "Magnitude words"): the English words and the
# suffixes models print, finance's (`MM`, `bln`), the Indian system's (`lakh`, `crore`) and the
# German abbreviations (`Tsd.`, `Mio.`, `Mrd.`). A word outside it is a unit.
_MAGNITUDES = {
    "k": 1e3,
    "thousand": 1e3,
    "thou": 1e3,
    "grand": 1e3,
    "tsd": 1e3,
    "hundred": 1e2,
    "lakh": 1e5,
    "lac": 1e5,
    "crore": 1e7,
    "cr": 1e7,
    "m": 1e6,
    "mm": 1e6,  # only `MM` reads as one (finance); `mm` is millimetres
    "mn": 1e6,
    "mln": 1e6,
    "mio": 1e6,
    "mil": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "bln": 1e9,
    "bil": 1e9,
    "mrd": 1e9,
    "milliard": 1e9,
    "billion": 1e9,
    "t": 1e12,
    "tn": 1e12,
    "trn": 1e12,
    "tln": 1e12,
    "trillion": 1e12,
}


def _trie(words: list[str]) -> str:
    """One pattern for `words` as a trie (`j(?:an(?:uary)?|u(?:ly?|ne?))|...`): a position
    where no word starts fails on one character, not once per word."""
    tree: dict = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return emit(tree)


# A number in words, as a trie: the alternation tried every word at every step of a worded
# number ("six hundred and fifty-nine": 5 us a match). Each word must end where its letters
# end (`\b` or a `[\s-]` follows), so at most one word can match at a position and the
# order of the alternatives does not change what matches.
_NUMBER_WORD = _trie(_NUMBER_WORDS.split("|"))
_ISO_DATE = (
    r"(?P<ISO>(?<![\d.])(?P<iy>\d{4})(?P<isep>[-/])(?P<im>" + _MONTH_NUMBER + r")"
    r"(?:(?P=isep)(?P<id>" + _DAY_NUMBER + r"))?" + _TIME.format(p="i") + r"(?![\d]|[.,]\d))"
)
_NUMERIC_DATE = (
    r"(?P<NUMERIC>(?<![\d.])(?P<na>\d{1,2})(?P<nsep>[-/.])(?P<nb>\d{1,2})(?P=nsep)(?P<ny>\d{4})"
    + _TIME.format(p="n")
    + r"(?![\d]|[.,]\d))"
)
# The alternatives are tried in this order at a position, so a date or a quarter is taken
# whole before its digits could be read as numbers. Each is one named group: `lastgroup` names
# the one that matched.
_TOKEN = re.compile(
    # year first: 2019-05-01, 2019/5/1, 2019-05 (a month), 2019.05.01, with a time
    _ISO_DATE
    + r"|(?P<DOTTED>(?<![\d.])(?P<dy>\d{4})\.(?P<dm>"
    + _MONTH_NUMBER
    + r")\.(?P<dd>"
    + _DAY_NUMBER
    + r")(?![\d]|\.\d))"
    # day or month first: 12/13/1994, 01.05.2019
    + "|"
    + _NUMERIC_DATE
    # month names: May 1, 2019 / 1 May 2019 / 1st of May 2019 / May 2019
    + r"|(?P<NAMED>(?i:(?<![\w])(?:(?P<wd1>"
    + _DAY_NUMBER
    + r")(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    r"(?P<wm>" + _MONTH + r")\.?(?:\s+(?P<wd2>" + _DAY_NUMBER + r")(?:st|nd|rd|th)?)?,?\s+"
    r"(?P<wy>\d{4})(?!\d)))"
    # quarters: Q3, Q3 2021, 2021 Q3, 2021-Q3, 3rd quarter, third quarter, quarter 3
    r"|(?P<QUARTER>(?i:(?:(?<![\w.])(?P<qy1>\d{4})\s*[-/ ]\s*)?(?<![A-Za-z])Q(?P<q>[1-4])(?![\w])"
    r"(?:\s*[-/ ]\s*(?P<qy2>\d{4})(?!\d))?))"
    r"|(?P<NTH_QUARTER>(?i:(?<![\w])(?:(?P<qo>[1-4])(?:st|nd|rd|th)|(?P<qw>first|second|third|fourth))"
    r"\s+(?:quarter|qtr)\b(?:\s+(?:of\s+)?(?P<qy3>\d{4})(?!\d))?))"
    r"|(?P<QUARTER_N>(?i:\b(?:quarter|qtr)\s+(?P<qn>[1-4])(?!\d)"
    r"(?:\s+(?:of\s+)?(?P<qy4>\d{4})(?!\d))?))"
    # ratios and clock times: 3:1, 14:30
    r"|(?P<RATIO>(?<![\d.])\d+(?::\d+)+(?![\d]|\.\d))"
    # numbers: 1,234,567.8 / 1 234 567 / 12.5 / .5 / 8.3e-4, then a magnitude and a percent
    r"|(?P<NUMBER>(?P<num>\d{1,3}(?:,\d{3})+(?!\d)(?:\.\d+)?"
    r"|\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?P<exp>[eE][-+]?\d+)?"
    r"(?:\s?(?P<mag>(?i:k|thousands?|thou|grand|tsd|hundreds?|lakhs?|lacs?|crores?|cr|millions?|mn"
    r"|mln|mio|mil|billions?|bn|bln|bil|mrd|milliards?|trillions?|tn|trn|tln)|MM|M|B|T)(?![\w]))?"
    r"(?:\s?(?P<pct>%|(?i:percent|per\s?cent|pct)\b))?)"
    # numbers in words: count as numbers (a hedge "12 or seventeen" holds two)
    r"|(?P<WORD>(?i:\b" + _NUMBER_WORD + r"(?:[\s-]+(?:and\s+)?" + _NUMBER_WORD + r")*\b))"
)
# After a number's digits, what could make it more than a plain number.
_COMPLEX_AFTER = re.compile(
    r"[-/.:%\w]|,\d|[ \u00a0\u202f]\d{3}(?!\d)|\s+(?:[-/%]|[MBT]\b|MM\b|(?i:jan|feb|mar|apr|may|jun"
    r"|jul|aug|sep|oct|nov|dec|q[1-4]\b|of\b|k\b|thousand|thou\b|grand|tsd\b|hundred|lakh|lacs?\b"
    r"|crore|cr\b|million|mn\b|mln\b|mio\b|mil\b|billion|bn\b|bln\b|bil\b|mrd\b|milliard|trillion"
    r"|tn\b|trn\b|tln\b|percent|per\s?cent|pct\b|quarter|qtr))"
)
_TOKEN_WORDS = frozenset(
    [
        *_MONTHS,
        *"january february march april june july august sept september october november".split(),
        "december",
        *_NUMBER_WORDS.split("|"),
        *"q first second third fourth quarter qtr".split(),
    ]
)


# Where a token can start: a digit run, a decimal point before digits, or a whole word that
# starts one (a month, a number word, Q, an ordinal, "quarter"). Trying the token pattern only
# there is what keeps reading a side cheap. Other words are not matched at all: a loop over
# every word of a long side cost a second per MiB (issue 33). The look-ahead (the characters
# that IGNORECASE matches to a letter: ASCII, İ, ı, ſ and the Kelvin sign) lets every other
# position fail at once. IGNORECASE matches a little more than `word.lower() in
# _TOKEN_WORDS`, which `_tokens` still checks.
_STARTS = re.compile(
    r"(?=[\d.A-Za-z\u0130\u0131\u017f\u212a])(?:\.?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"|(?i:(?<![^\W\d_])" + _trie(sorted(_TOKEN_WORDS)) + r"(?![^\W\d_])))"
)
_LETTER = re.compile(r"[^\W\d_]")


def _letter_before(text: str, start: int) -> bool:
    r"""Whether a letter ends `text[:start]` (as `re.search(r"[^\W\d_]$", text, 0, start)`,
    whose `$` also matches before a final newline), looking at two characters: the search
    scanned the whole prefix, once per number, which made reading quadratic (issue 33)."""
    before = start - 1
    if text[before] == "\n" and before > 0:
        before -= 1
    return _LETTER.match(text, before) is not None


@dataclass(slots=True)
class _Token:
    kind: str  # value, date, period, ratio, word
    start: int
    end: int
    reading: Reading | None
    value: float | None = None
    exponent: bool = False
    magnitude: float = 1.0
    percent: bool = False


def _tokens(text: str, *, quick: bool = True) -> list[_Token]:
    """The number-like tokens of `text`, in order. `quick=False` tries the full token pattern
    at every start (tests prove the quick path gives the same tokens)."""
    tokens: list[_Token] = []
    end = 0
    for found in _STARTS.finditer(text):
        start = found.start()
        if start < end:
            continue
        if len(tokens) > MAX_NUMBERS:
            break  # a Crowd: the rest is not read (issue 33)
        piece = found.group()
        if piece[-1].isdecimal():
            if quick and piece[0] != "." and not _COMPLEX_AFTER.match(text, found.end()):
                # A number nothing around could turn into a date, a quarter, a ratio, a
                # thousands group, a magnitude or a percentage: the token is the digits.
                if tokens and start > 0 and _letter_before(text, start):
                    end = found.end()
                    continue
                end = found.end()
                scientific = "e" in piece or "E" in piece
                tokens.append(_Token("value", start, end, None, float(piece), scientific))
                continue
        elif piece.lower() not in _TOKEN_WORDS:
            continue
        match = _TOKEN.match(text, start)
        if match is None:
            continue
        kind = match.lastgroup
        end = match.end()
        if kind == "NUMBER":
            # A digit run glued to a word after an earlier number is part of a unit ("m2",
            # "CO2"), not a second number; glued to the first one it is a label's ("S12").
            if tokens and start > 0 and _letter_before(text, start):
                continue
            raw = match.group("num")
            if not raw.isdecimal():
                raw = raw.replace(",", "").replace(" ", "").replace("\u00a0", "")
                raw = raw.replace("\u202f", "")
            exponent = match.group("exp")
            try:
                value = float(raw + exponent) if exponent else float(raw)
            except ValueError:
                value = float("nan")
            magnitude = 1.0
            mag = match.group("mag")
            if mag is not None:
                word = mag.lower()
                word = word[:-1] if word.endswith("s") and len(word) > 2 else word
                magnitude = _MAGNITUDES.get(word, 1.0)
            tokens.append(
                _Token(
                    "value",
                    start,
                    end,
                    None,
                    value,
                    exponent is not None,
                    magnitude,
                    match.group("pct") is not None,
                )
            )
        elif kind == "WORD":
            tokens.append(_Token("word", start, end, None))
        elif kind == "ISO" or kind == "DOTTED":
            tokens.append(_Token("date", start, end, _iso_date(match)))
        elif kind == "NUMERIC":
            tokens.append(_Token("date", start, end, _numeric_date(match)))
        elif kind == "NAMED":
            tokens.append(_Token("date", start, end, _named_date(match)))
        elif kind == "RATIO":
            parts = tuple(int(p) for p in match.group().split(":"))
            tokens.append(_Token("ratio", start, end, Ratio(parts)))
        else:
            tokens.append(_Token("period", start, end, _period(match)))
    return tokens


def _time(found: re.Match[str], prefix: str) -> tuple[int, int, int]:
    hour = found.group(prefix + "H")
    if hour is None:
        return (0, 0, 0)
    return (int(hour), int(found.group(prefix + "M")), int(found.group(prefix + "S") or 0))


def _iso_date(found: re.Match[str]) -> Date:
    if found.group("iy") is not None:
        day = found.group("id")
        return Date(
            (int(found.group("iy")), int(found.group("im")), None if day is None else int(day))
            + (_time(found, "i") if day is not None else (0, 0, 0))
        )
    return Date((int(found.group("dy")), int(found.group("dm")), int(found.group("dd")), 0, 0, 0))


def _numeric_date(found: re.Match[str]) -> Date:
    first, second, year = int(found.group("na")), int(found.group("nb")), int(found.group("ny"))
    time = _time(found, "n")
    if first > 12 >= second:
        return Date((year, second, first, *time))
    if second > 12 >= first or first == second:
        return Date((year, first, second, *time))
    # 05/01/2019: May 1st or 5 January; it agrees only with itself written the same way.
    return Date(("ambiguous", first, second, year, *time))


def _named_date(found: re.Match[str]) -> Date:
    month = _MONTHS[found.group("wm")[:3].lower()]
    day = found.group("wd1") or found.group("wd2")
    year = int(found.group("wy"))
    if day is None:
        return Date((year, month, None, 0, 0, 0))
    return Date((year, month, int(day), 0, 0, 0))


def _period(found: re.Match[str]) -> Period:
    if found.group("q") is not None:
        quarter = int(found.group("q"))
    elif found.group("qo") is not None:
        quarter = int(found.group("qo"))
    elif found.group("qw") is not None:
        quarter = _ORDINAL_WORDS[found.group("qw").lower()]
    else:
        quarter = int(found.group("qn"))
    year = found.group("qy1") or found.group("qy2") or found.group("qy3") or found.group("qy4")
    return Period(quarter, None if year is None else int(year))


# --- the text around a number ---------------------------------------------------------------

# The heavy minus emoji and the superscript minus too (issue 33: "➖42" read as 42).
_MINUSES = "-\u2212\u2010\u2011\u2012\u2013\u2014\u2015\ufe63\uff0d\u2796\u207b"
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "₹": "inr"}
# Read on the reversed text: a pattern anchored at the end (`[^\w]+$`) retries from every
# position of a long run that does not reach the end, which is quadratic (issue 33).
_NON_WORD_RUN = re.compile(r"[^\w]*")
_LETTER_RUN = re.compile(r"[^\W\d_]+")
_CURRENCY_AFTER = re.compile(r"\s*([$€£¥₹])")
_MINUS_WORD = re.compile(r"(?i:\b(?:minus|negative))\s*$")
_BOUND_AFTER = re.compile(r"^\s*\+(?!\s*\d)")
_MIN_BEFORE = re.compile(r"(?i:\bmin\b)[\s:.]*$")
# Words that put a value or a date before or after the one written (issue 33: "before
# 2019-03-01"), when they come right before it: elsewhere in a sentence they are narration
# ("after rounding, 42").
_TEMPORAL = re.compile(
    r"(?i:\b(?:(?P<lt>before|prior\s+to|earlier\s+than|until|till)|(?P<gt>after|later\s+than|since))"
    r"\s*)$"
)
# The first word of every worded comparison below.
_COMPARISON_FIRST_WORDS = (
    "at no not minimum upward upwards plus or and up maximum max never other except anything"
    " everything all more greater higher larger over above exceed exceeds exceeding beyond in"
    " less fewer lower smaller under below"
).split()
# Longest first: at one position the first alternative that matches wins. The look-ahead
# says how every alternative starts (a symbol, or one of the first words as a whole word, as
# a trie): elsewhere the pattern fails at once instead of once per alternative (issue 33: a
# MiB of "!" or of prose took 1-2 s).
_COMPARISON = re.compile(
    r"(?=[≥≤≠±<>⩾⩽≳≲≫≪∓]|=[<>/]|!=|\+/-|\\(?:[glmn]|pm|lesssim)|(?i:\b(?:"
    + _trie(_COMPARISON_FIRST_WORDS)
    + r")(?!\w)|n't\b))"
    # The symbols first (one character tells them apart), in the order of their groups.
    # LaTeX and Unicode relations too (issue 33): `\geq`, `⩾`, `≳`, `\gtrsim`, `≫`, `\neq`,
    # `\pm`. Approximations (`≈`, `~`, `\approx`, `\sim`) are not comparisons: docs/scoring.md
    # "Approximation words".
    r"(?:(?P<ge>≥|>=|=>|⩾|≳|\\ge(?:q(?:slant)?)?(?![A-Za-z])|\\gtrsim)"
    r"|(?P<le>≤|<=|=<|⩽|≲|\\le(?:q(?:slant)?)?(?![A-Za-z])|\\lesssim)"
    r"|(?P<ne>≠|!=|=/=|<>|\\neq?(?![A-Za-z]))"
    r"|(?P<gt>>|≫|\\g[gt](?![A-Za-z]))|(?P<lt><|≪|\\l[lt](?![A-Za-z]))"
    r"|(?P<pm>±|\+/-|∓|\\[mp][pm](?![A-Za-z]))"
    r"|(?P<ge_words>(?i:\bat\s+(?:the\s+(?:very\s+)?)?least\b|\bno\s+(?:less|fewer)\s+than\b"
    r"|\bnot\s+(?:less|fewer|under|below)(?:\s+than)?\b|\b(?:at\s+)?minimum(?:\s+of)?\b"
    r"|\bupwards?\s+of\b|\bplus\b"
    r"|\bor\s+(?:more|above|higher|greater|over|up)\b|\band\s+(?:above|up|over|more|higher)\b))"
    r"|(?P<le_words>(?i:\bat\s+(?:the\s+(?:very\s+)?)?most\b|\bno\s+(?:more|greater)\s+than\b"
    r"|\bnot\s+(?:more|greater|over|above)(?:\s+than)?\b|\bup\s+to\b"
    r"|\b(?:at\s+)?maximum(?:\s+of)?\b|\bmax\b"
    r"|\bor\s+(?:less|fewer|below|lower|under)\b|\band\s+(?:below|under|less|lower)\b))"
    r"|(?P<ne_words>(?i:\bnot\b|\bnever\b|n't\b|\bother\s+than\b|\bexcept\b"
    r"|\b(?:anything|everything|all)\s+but\b))"
    r"|(?P<gt_words>(?i:\bmore\s+than\b|\bgreater\s+than\b|\bhigher\s+than\b|\blarger\s+than\b"
    r"|\bover\b|\babove\b|\bexceed(?:s|ing)?\b|\bbeyond\b|\bin\s+excess\s+of\b))"
    r"|(?P<lt_words>(?i:\bless\s+than\b|\bfewer\s+than\b|\blower\s+than\b|\bsmaller\s+than\b"
    r"|\bunder\b|\bbelow\b)))"
)
_COMPARISON_OPS = {"ge": ">=", "le": "<=", "ne": "!=", "gt": ">", "lt": "<", "pm": "±"}
# The op of each group, by position (a group of words is named after its symbol's: "ge_words").
_COMPARISON_GROUP_OPS = tuple(
    _COMPARISON_OPS[name.split("_")[0]]
    for name, _ in sorted(_COMPARISON.groupindex.items(), key=lambda item: item[1])
)
# What any comparison needs: one of these symbols, or one of these words.
_COMPARISON_SYMBOL = re.compile(r"[<>≤≥≠±=!'⩾⩽≳≲≫≪∓\\]")
_WORD = re.compile(r"[^\W\d_]+")
_COMPARISON_WORDS = frozenset(
    "least most less fewer more greater higher larger lower smaller over above under below not"
    " never other except minimum maximum exceed exceeds exceeding beyond excess up min max"
    " upward upwards plus but".split()
)
_FIRST_WORD = re.compile(r"^[^\w]*([^\W\d_]+)")
_FILLER = frozenset(
    {
        "about",
        "approx",
        "approximately",
        "around",
        "roughly",
        "nearly",
        "almost",
        "exactly",
        "just",
        "only",
        "some",
        "circa",
        "ca",
        "is",
        "are",
        "was",
        "were",
        "be",
        "of",
        "the",
        "a",
        "an",
        "in",
        "on",
        "at",
        "for",
        "to",
        "by",
        "total",
        "overall",
        "each",
        "per",
        "or",
        "and",
        "so",
        "its",
        "it",
        "answer",
        "maybe",
        "possibly",
        "perhaps",
        "probably",
        "likely",
    }
)
# Unit words that name the same unit (plural "s" is dropped before the look-up).
_UNIT_SYNONYMS = {
    "yr": "year",
    "yrs": "year",
    "y": "year",
    "yo": "year",
    "month": "month",
    "mo": "month",
    "mth": "month",
    "wk": "week",
    "w": "week",
    "d": "day",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "min": "minute",
    "mins": "minute",
    "sec": "second",
    "secs": "second",
    "s": "second",
    "kilometer": "km",
    "kilometre": "km",
    "kms": "km",
    "meter": "m",
    "metre": "m",
    "centimeter": "cm",
    "centimetre": "cm",
    "millimeter": "mm",
    "millimetre": "mm",
    "mile": "mi",
    "feet": "ft",
    "foot": "ft",
    "sqft": "sq ft",
    "sqm": "sq m",
    "sqkm": "sq km",
    "kilogram": "kg",
    "kilo": "kg",
    "kgs": "kg",
    "gram": "g",
    "gr": "g",
    "pound": "lb",
    "lbs": "lb",
    "liter": "l",
    "litre": "l",
    "milliliter": "ml",
    "millilitre": "ml",
    "dollar": "usd",
    "buck": "usd",
    "euro": "eur",
    "rupee": "inr",
    "yen": "jpy",
    "people": "person",
    "persons": "person",
    "pax": "person",
    "pct": "percent",
}


def _canonical_unit(word: str) -> str:
    word = word.lower()
    unit = _UNIT_SYNONYMS.get(word)
    if unit is not None:
        return unit
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
        return _UNIT_SYNONYMS.get(word, word)
    return word


# Where a number's own clause ends (issue 46): a comparison word in another clause is narration
# ("Over the whole period, the total is 42.", "below average; the value is 42"). After the number
# a comma does not end it: "42, or more" is a bound.
_CLAUSE_ENDS_BEFORE = (". ", "; ", ", ", ": ", "! ", "? ", "\n", ".\t", ",\t")
_CLAUSE_ENDS_AFTER = (". ", "; ", "! ", "? ", "\n", ".\t")
# How far from its number a comparison may stand: fillers between are short, and the search
# stays linear on a side of any length.
_REACH = 120
# Words that may stand between a comparison and the number after it without making it narration:
# a copula, an article, an approximation, an adverb of degree, a verb of opinion ("is not
# exactly 42", "I do not think it is 42", "no more than about $42"). Any other word means the
# comparison is about something else ("the number of stores over budget is 42").
_BETWEEN_WORDS = frozenset(
    (
        "is are was were be been being it its s the a an of to than equal equals exactly precisely"
        " just only quite really actually necessarily even about approximately approx around"
        " roughly nearly almost circa ca some so that this which value answer result number"
        " total i we you do does did can could would will should think believe sure say guess"
        " expect certainly definitely simply"
    ).split()
)
_COPULAS = frozenset("is are was were be been it s".split())


def _comparisons(before: str, after: str) -> tuple[frozenset[str], str, str]:
    """The comparisons and negations that qualify the number between `before` and `after`, and
    the two texts with them removed (docs/scoring.md "Comparison words"). A comparison counts
    only in the number's own clause and next to it: before it with nothing but the words of
    `_BETWEEN_WORDS` between ("is not 42", "at least about 42"), after it with nothing but a unit
    for a bound ("42 years or more", "42 kg max") or a copula for a negation ("42 is not"). The
    statistics `maximum`/`minimum`/`max` name a value unless right beside it: "The maximum value
    is 42" names it, "a maximum of 42" and "42 max" bound it."""
    found: set[str] = set()
    # The clause first (a few `rfind` in C); only the clause is searched, never the whole side
    # (the pattern's look-ahead fails at once where no comparison starts).
    cut = len(before) - _REACH if len(before) > _REACH else 0
    if before:
        for end in _CLAUSE_ENDS_BEFORE:
            at = before.rfind(end, cut)
            if at >= 0:
                cut = at + len(end)
    clause = before[cut:]
    if clause:
        pieces = []
        kept = 0
        for match in _comparison_matches(clause):
            words = _WORD.findall(clause[match.end() :].lower())
            if _is_statistic(match):
                # "maximum 42", "a maximum of $42": right beside it; "the maximum = 42" names it
                near = not clause[match.end() :].strip(" \t$\u20ac\u00a3\u00a5\u20b9")
            else:
                near = all(word in _BETWEEN_WORDS for word in words)
            if near:
                found.add(_COMPARISON_OPS[match.lastgroup.split("_")[0]])  # type: ignore[union-attr]
                pieces.append(clause[kept : match.start()])
                pieces.append(" ")
                kept = match.end()
        if pieces:
            before = before[:cut] + "".join(pieces) + clause[kept:]
    cut = min(len(after), _REACH)
    if after:
        for end in _CLAUSE_ENDS_AFTER:
            at = after.find(end, 0, cut)
            if at >= 0:
                cut = at
    clause = after[:cut]
    if clause:
        pieces = []
        kept = 0
        for match in _comparison_matches(clause):
            words = _WORD.findall(clause[: match.start()].lower())
            group = match.lastgroup or ""
            if not group.endswith("_words"):
                near = not words
            elif group.startswith(("ge", "le")):
                # A bound after a unit ("42 years or more"), never after a sentence ("42 is the
                # maximum").
                near = len(words) <= 1 and not (words and words[0] in _FILLER)
            else:
                near = all(word in _COPULAS for word in words)
            if near:
                found.add(_COMPARISON_OPS[group.split("_")[0]])
                pieces.append(clause[kept : match.start()])
                pieces.append(" ")
                kept = match.end()
        if pieces:
            after = "".join(pieces) + clause[kept:] + after[cut:]
    return frozenset(found), before, after


# Where a comparison can start in a lowercased ASCII clause: one of its ASCII symbols, one of
# its first words, "n't". `_COMPARISON` is tried only there: searched on its own it costs about
# 0.3 us a character (its look-ahead at every position), the gate a tenth of that.
_COMPARISON_GATE = re.compile(r"[<>=!+\\]|\b(?:" + _trie(_COMPARISON_FIRST_WORDS) + r")\b|n't")


def _comparison_matches(clause: str) -> list[re.Match[str]]:
    """`list(_COMPARISON.finditer(clause))`, trying the pattern only where the gate says a
    comparison could start (every match starts at a gate hit: tests/scorers/test_reading.py)."""
    if not clause.isascii():
        return list(_COMPARISON.finditer(clause))
    found = []
    end = 0
    for hit in _COMPARISON_GATE.finditer(clause.lower()):
        start = hit.start()
        if start < end:
            continue
        match = _COMPARISON.match(clause, start)
        if match is not None:
            found.append(match)
            end = match.end()
    return found


def _is_statistic(match: re.Match[str]) -> bool:
    word = match.group().lower()
    return "max" in word or "min" in word


_NO_COMPARISON: frozenset[str] = frozenset()
_PLAIN_REST = (_NO_COMPARISON, None, None, False, True)


_BASIS_POINTS = frozenset(["bp", "bps", "bip", "bips"])
_BASIS_POINT = re.compile(r"[^\w]*(?i:basis)[\s-]+(?i:points?)\b")


def _temporal(rest: str) -> str | None:
    """The comparison a word like "before" or "since" right at the end of `rest` makes."""
    # Only the last 40 characters: the pattern is anchored at the end, and the words are short.
    found = _TEMPORAL.search(rest[-40:])
    if found is None:
        return None
    return "<" if found.group("lt") is not None else ">"


def _trailing_symbols(text: str) -> str:
    r"""What `re.search(r"[^\w]+$", text)` matches ("" for none): the run of non-word
    characters that ends the text."""
    if not text or _WORD_CHAR.match(text, len(text) - 1):
        return ""
    return text[len(text) - _non_word_run(text[::-1]) :]


def _last_word(text: str) -> str | None:
    r"""What group 1 of `re.search(r"([^\W\d_]+)[^\w]*$", text)` holds: the letters that end
    the text but for non-word characters (None when a digit or `_` comes after them)."""
    backwards = text[::-1]
    letters = _LETTER_RUN.match(backwards, _non_word_run(backwards))
    return None if letters is None else letters.group()[::-1]


def _non_word_run(text: str) -> int:
    """How many non-word characters start `text`."""
    found = _NON_WORD_RUN.match(text)
    return 0 if found is None else found.end()  # `[^\w]*` always matches


_WORD_CHAR = re.compile(r"\w")


# Markers a Value's `comparison` holds for what is glued to its number (issue 46): like a
# comparison, a side that has one and a side that does not say different things.
NAME_MARK = "name"
DECADE_MARK = "decade"
FUNCTION_MARK = "function of"
_NAME = frozenset([NAME_MARK])
_DECADE = frozenset([DECADE_MARK])
_FUNCTION_OF = frozenset([FUNCTION_MARK])
_APOSTROPHE_S = ("'s", "\u2019s")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Right after the digits: a call, a factorial, a superscript, a vulgar fraction, a product sign.
_GLUED_AFTER = frozenset(
    "(!\u00d7\u00b2\u00b3\u00b9\u2070\u2074\u2075\u2076\u2077\u2078\u2079"
    "\u207a\u207b\u00bc\u00bd\u00be\u2150\u2151\u2152\u2153\u2154\u2155"
    "\u2156\u2157\u2158\u2159\u215a\u215b\u215c\u215d\u215e"
)
_FUNCTION_NAMES = r"sqrt|cbrt|log(?:2|10|1p)?|ln|exp|factorial|gamma|sin|cos|tan"
_FUNCTION_BEFORE = re.compile(r"(?i:\b(?:" + _FUNCTION_NAMES + r")\s*\()$")
_FUNCTION_WORDS_BEFORE = re.compile(
    r"(?i:\b(?:(?:square|cube)\s+root|sqrt|log(?:arithm)?|ln|exp|factorial|twice|double|triple"
    r"|half|inverse|reciprocal)(?:\s+of)?(?:\s+the)?\s*)$"
)
_FUNCTION_WORDS_AFTER = re.compile(r"(?i:\s*(?:squared|cubed|factorial)\b)")
# Units of area: "1200 sq ft", "1200 square feet", "1200 ft²", "1200 m2" (issue 46: "sq" was
# the unit of both "sq m" and "sq ft").
_AREA_WORDS = frozenset(["sq", "square", "cu", "cubic"])
_AREA = re.compile(r"\s*(?i:(sq|square|cu|cubic))\.?\s+([^\W\d_]+)")


def _area_unit(word: str) -> str:
    return "sq " + _canonical_unit(word.rstrip("."))


def _is_year(token: _Token) -> bool:
    value = token.value
    return (
        value is not None and 1000 <= value <= 2999 and value == int(value) and not token.exponent
    )


def _value(token: _Token, before: str, after: str) -> Value:
    assert token.value is not None
    comparison, rest, after = _comparisons(before, after)
    if after and _BOUND_AFTER.match(after):
        comparison = comparison | {">="}
    # Both patterns are anchored at the end: only its last words are searched.
    minimum = _MIN_BEFORE.search(rest, max(0, len(rest) - 40)) if rest else None
    if minimum is not None:
        # "min 12" is a minimum; "12 min" is twelve minutes.
        comparison = comparison | {">="}
        rest = rest[: minimum.start()]
    # The symbols between the last word and the number: a sign, a currency.
    symbols = _trailing_symbols(rest)
    rest = rest[: len(rest) - len(symbols)]
    # A dash glued to a word ("x-5", "COVID-19") is a hyphen, not a sign.
    negative = any(ch in _MINUSES for ch in symbols) and not (rest and symbols[0] in _MINUSES)
    minus_word = _MINUS_WORD.search(rest, max(0, len(rest) - 40)) if rest else None
    if minus_word is not None:
        negative = True
        rest = rest[: minus_word.start()]
    if symbols.startswith("|") and after.lstrip().startswith("|"):
        negative = False  # |-17| is 17 (issue 33)
    temporal = _temporal(rest) if rest else None
    if temporal is not None:
        comparison = comparison | {temporal}
    unit = None
    for ch in symbols:
        if ch in _CURRENCY:
            unit = _CURRENCY[ch]
            break
    label = None
    if rest:
        word = _last_word(rest)
        if word is not None:
            word = word.lower()
            if word not in _FILLER:
                label = word
    percent = token.percent
    magnitude = token.magnitude
    digits = token.value
    # What is glued to the number makes it part of something else (issue 46): a name ("CO2",
    # "uint8", "dtype: int64"), a decade ("1990s"), or a function of it ("42!", "42()", "42×",
    # "sqrt(42)", "the square root of 42", "42 squared"). docs/scoring.md "Glued numbers".
    # Latin letters only: in a script written without spaces ("答案是42") a number follows a
    # word directly and is no part of it.
    glued = before[-1:] in _ASCII_LETTERS
    if glued or (before[-1:] == "(" and _FUNCTION_BEFORE.search(before)):
        comparison = comparison | (_NAME if glued else _FUNCTION_OF)
    elif rest and _FUNCTION_WORDS_BEFORE.search(rest[-40:]):
        comparison = comparison | _FUNCTION_OF
    if after:
        first = after[0]
        if first in _GLUED_AFTER or after.lstrip()[:1] == "\u00d7":
            comparison = comparison | _FUNCTION_OF
        elif (
            (first == "s" or after[:2] in _APOSTROPHE_S)
            and _is_year(token)
            and (not _LETTER.match(after, 1 if first == "s" else 2))
        ):
            comparison = comparison | _DECADE
            after = after[1 if first == "s" else 2 :]
        elif _FUNCTION_WORDS_AFTER.match(after):
            comparison = comparison | _FUNCTION_OF
        if after.lstrip()[:1] == "\u2030":
            percent = True  # per mille: 12.5‰ is 1.25%
            magnitude = magnitude * 0.1
    if after and unit is None:
        currency_after = _CURRENCY_AFTER.match(after)
        if currency_after is not None:
            unit = _CURRENCY[currency_after.group(1)]
    if after:
        found = _FIRST_WORD.match(after)
        if found is not None:
            word = found.group(1).lower()
            if word in _AREA_WORDS:
                area = _AREA.match(after)
                if area is not None:
                    unit = _area_unit(area.group(2))
                    found = None
        if found is not None:
            word = found.group(1).lower()
            if word in ("percent", "pct") or (word == "per" and "cent" in after.lower()):
                percent = True
            elif word in _BASIS_POINTS or (word == "basis" and _BASIS_POINT.match(after)):
                # 12.5 bps is 0.125% (issue 33: it passed for 12.5%, a 100x error).
                percent = True
                magnitude = magnitude * 0.01
            elif word not in _FILLER:
                unit = _canonical_unit(word)
                if word[-1:] in ("2", "\u00b2") or after[found.end() : found.end() + 1] == "2":
                    unit = _area_unit(word.rstrip("2\u00b2"))
    return _new(
        Value,
        (
            (-digits if negative else digits) * magnitude,
            digits,
            negative,
            magnitude,
            percent,
            comparison,
            label,
            unit,
            token.exponent,
            False,
        ),
    )


# --- the whole side ---------------------------------------------------------------------------

_PLAIN = re.compile(r"\s*(-?)(\d+(?:\.\d+)?)\s*")
# Between two numbers: a list separator, a range word or dash, or a math operator.
# `|` too (issue 33): "12 | 7 | 3" is a list; a list never answers one value, so "17 | 12" is
# still refused for 12.
_LIST_GAP = re.compile(r"[,;\n|]|(?i:\band\b)|&")
# `\s*(?:[$€£¥₹]\s*)?`, not `\s*[$€£¥₹]?\s*`: the two `\s*` could share a long run of spaces
# in every way, which is quadratic when the match fails after it.
_RANGE_GAP = re.compile(
    r"\s*(?:[" + _MINUSES + r"]|(?i:to|through|thru|until|till))\s*(?:[$€£¥₹]\s*)?"
)
_BETWEEN = re.compile(r"(?i:\b(?:between|from)\s*(?:[$€£¥₹]\s*)?)$")
_AND_GAP = re.compile(r"\s*(?i:and|to|&)\s*(?:[$€£¥₹]\s*)?")
# A negative exponent or divisor is still one expression ("10^{-3}", "12/-3").
_OPERATOR_GAP = re.compile(
    r"[\s)\]]*(?:\*\*|[/^*×÷·+]|\\(?:cdot|times|div|over))[\s(\[{]*-?|\s*}\s*{\s*|\s+[xX]\s+"
)
# A power written with superscripts or `**` (issue 46: "4.2×10³", "10⁻⁴", "42²" were not read
# as expressions), a named function called on a number. A vulgar fraction after digits ("12½")
# is a mixed number, marked in `_value` and not valued: math-verify reads it as the integer.
_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b\u207a"
_MATH_MARK = re.compile(
    r"\\(?:frac|dfrac|tfrac|sqrt|pi|cdot|times|div|log|ln|exp|binom)|[√π^]|\*\*"
    # A superscript after a digit, matched from the superscript: every alternative starts with
    # a character of a short set, which the pattern engine skips to (a look-behind or a
    # category first made a search ten times dearer).
    r"|[" + _SUPERSCRIPTS + r"](?<=\d[" + _SUPERSCRIPTS + r"])"
)
# Tried only on a side holding a "(".
_FUNCTION_CALL = re.compile(r"(?i:\b(?=[sclegt])(?:" + _FUNCTION_NAMES + r")\s*\()")


def _math_mark(text: str) -> bool:
    return _MATH_MARK.search(text) is not None or (
        "(" in text and _FUNCTION_CALL.search(text) is not None
    )


_SUPERSCRIPT_RUN = re.compile("[" + _SUPERSCRIPTS + "]+")
_FROM_SUPERSCRIPT = str.maketrans(_SUPERSCRIPTS, "0123456789-+")
_BULLET = re.compile(r"(?m)^[ \t]*[-*•][ \t]+")
_NUMBERED = re.compile(r"(?m)^[ \t]*(\d+)[.)][ \t]+")


def _unbullet(text: str) -> str:
    """A list one item per line loses its bullets, and its numbers when every line is numbered
    1, 2, 3, ... ("1. 12" is the item 12)."""
    text = _BULLET.sub("", text)
    lines = [line for line in text.split("\n") if line.strip()]
    numbers = [_NUMBERED.match(line) for line in lines]
    if len(lines) > 1 and all(
        found is not None and int(found.group(1)) == index
        for index, found in enumerate(numbers, start=1)
    ):
        return _NUMBERED.sub("", text)
    return text


def read(text: str) -> Reading:
    """The strict reading of one whole side (lists included)."""
    cached = _cache.get(text)
    if cached is not None:
        return cached
    reading = _read(text, whole=True)
    remember(text, reading)
    return reading


def remember(text: str, reading: Reading) -> None:
    """Keep `reading` as `read(text)`'s (for a reading made another way, e.g. `read_words`)."""
    if len(text) > _CACHE_MAX_CHARS:
        return  # up to 65,536 entries of up to 1 MiB each would be 64 GiB
    if len(_cache) >= _CACHE_MAX:
        _cache.clear()
    _cache[text] = reading


def read_item(text: str) -> Reading:
    """The strict reading of one list item the list rung split off on its commas."""
    cached = _item_cache.get(text)
    if cached is not None:
        return cached
    reading = _read(text, whole=False)
    if len(text) > _CACHE_MAX_CHARS:
        return reading
    if len(_item_cache) >= _CACHE_MAX:
        _item_cache.clear()
    _item_cache[text] = reading
    return reading


_CACHE_MAX = 65_536
# As the grade memo (grader._MEMO_MAX_KEY_CHARS): longer sides are read afresh each time.
_CACHE_MAX_CHARS = 4_096
# The readings of whole sides by text, filled by `read`: callers on a hot path look here first
# and call `read` only on a miss (a function call costs as much as the look-up).
remembered: dict[str, Reading] = {}
_cache = remembered
_item_cache: dict[str, Reading] = {}


def clear_cache() -> None:
    _cache.clear()
    _item_cache.clear()
    _simple_words.clear()


def _crowd(text: str) -> Crowd | None:
    """A `Crowd` for a side of more than MAX_NUMBERS digit runs, else None (one C-speed pass)."""
    count = len(_DIGIT_RUN.findall(text))
    return Crowd(count) if count > MAX_NUMBERS else None


def _read(text: str, *, whole: bool) -> Reading:
    plain = _PLAIN.fullmatch(text)
    if plain is not None:
        digits = float(plain.group(2))
        negative = plain.group(1) == "-"
        return _new(
            Value, (-digits if negative else digits, digits, negative, 1.0, False, *_PLAIN_REST)
        )
    if len(text) >= _CROWD_MIN_CHARS:
        crowd = _crowd(text)
        if crowd is not None:
            return crowd
    quick = _shapes(text, whole)
    if quick is not None:
        return quick
    cleaned = _clean(text)
    if cleaned != text:
        # "\\boxed{12}", "$12$", "**12 years**": often a quick shape once unwrapped.
        plain = _PLAIN.fullmatch(cleaned)
        if plain is not None:
            digits = float(plain.group(2))
            negative = plain.group(1) == "-"
            return _bare_value(-digits if negative else digits, digits, negative)
        quick = _shapes(cleaned, whole)
        if quick is not None:
            return quick
    text = cleaned
    if whole and "\n" in text:
        text = _unbullet(text)
    tokens = _tokens(text)
    if len(tokens) > MAX_NUMBERS:
        return Crowd(len(tokens))
    if not tokens:
        return _expression(text) if _math_mark(text) or "$" in text else _TEXT
    if len(tokens) == 1:
        return _single(text, tokens[0], text[: tokens[0].start], text[tokens[0].end :])
    gaps = [text[a.end : b.start] for a, b in pairwise(tokens)]
    if len(tokens) == 2 and tokens[0].kind == tokens[1].kind == "value":
        before = text[: tokens[0].start]
        between = _BETWEEN.search(before)
        if (between is not None and _AND_GAP.fullmatch(gaps[0])) or (
            between is None and _RANGE_GAP.fullmatch(gaps[0])
        ):
            if between is not None:
                before = before[: between.start()]
            low = _value(tokens[0], before, "")
            high = _value(tokens[1], "", text[tokens[1].end :])
            return Range(low, high)
    if (
        len(tokens) == 2
        and tokens[0].kind == tokens[1].kind == "date"
        and tokens[0].reading == tokens[1].reading
        and _SAME_DATE_GAP.fullmatch(gaps[0])
        and _SAME_DATE_END.match(text, tokens[1].end)
    ):
        # One date written twice, the second in brackets: "May 1, 2019 (2019-05-01)" (issue 46).
        return _single(text, tokens[0], text[: tokens[0].start], text[tokens[1].end :])
    if whole:
        separators = [_LIST_GAP.search(gap) for gap in gaps]
        if any(separators):
            listed = _items(text, tokens, gaps, separators)
            if listed is not None:
                return listed
    if all(_OPERATOR_GAP.fullmatch(gap) for gap in gaps):
        return _expression(text)
    return Multi(
        tuple(t.value * t.magnitude for t in tokens if t.value is not None),
        any(t.kind == "date" for t in tokens),
    )


_SAME_DATE_GAP = re.compile(r"\s*[(\[]\s*(?:(?i:i\.e\.|ie|that is|aka),?\s*)?")
_SAME_DATE_END = re.compile(r"\s*[)\]]")
# What `_clean` unwraps to one plain number: "\\boxed{12}", "$-12$" (a bare value, as there).
_WRAPPED_PLAIN = re.compile(r"\s*(?:\\boxed\{(-?)(\d+(?:\.\d+)?)\}|\$(-?)(\d+(?:\.\d+)?)\$)\s*")
# A day written year first, as `_BARE_DATE` reads it ("2019-05-01", "2019/5/1 14:30").
_ISO_DAY = re.compile(
    r"\s*(\d{4})([-/])(" + _MONTH_NUMBER + r")\2(" + _DAY_NUMBER + r")"
    r"(?:[ T]([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?)?\s*"
)
# A number with nothing but a sign, a thousands separator, an exponent or a percent sign: the
# `_SIMPLE` shape without words or currency ("−12", "- 12", "1,234.5", "8.3e-4", "45 %").
_SIGNED_NUMBER = re.compile(
    # The sign on the number's line: across a line break the full reading decides (`- ` then a
    # line break is a list bullet there, "- \n 12" is 12).
    r"\s*([" + _MINUSES + r"][^\S\n]*)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)([eE][-+]?\d+)?"
    r"(\s?%)?\s*"
)


def _shapes(text: str, whole: bool) -> Reading | None:
    """The reading of the shapes most sides take, without tokenising, or None. Each gives
    what the full reading gives (tests/scorers/test_reading.py)."""
    # The commonest shapes first, each a pattern that fails within a few characters on other
    # sides: a side is read once, so what it costs to reach its shape is most of its reading.
    if "\\" in text or "$" in text:
        wrapped = _WRAPPED_PLAIN.fullmatch(text)
        if wrapped is not None:
            sign, digits = wrapped.group(1, 2)
            if digits is None:
                sign, digits = wrapped.group(3, 4)
            number = float(digits)
            return _bare_value(-number if sign else number, number, bool(sign))
    elif "-" in text or "/" in text:
        iso = _ISO_DAY.fullmatch(text)
        if iso is not None:
            year, _, month, day, hour, minute, second = iso.groups()
            if hour is None:
                return _new(Date, ((int(year), int(month), int(day), 0, 0, 0),))
            time = (int(hour), int(minute), int(second or 0))
            return _new(Date, ((int(year), int(month), int(day), *time),))
    quick = _quick_shape(text, whole)
    if quick is not None:
        return quick
    if ", " in text:
        # A comma before a space is no thousands separator: neither pattern below can match.
        return None if "\n" in text else _plain_shape(text, whole)
    signed = _SIGNED_NUMBER.fullmatch(text)
    if signed is not None:
        sign, raw, exponent, percent = signed.groups()
        return _number_value(sign, raw, exponent, percent, None, None)
    simple = _SIMPLE.fullmatch(text)
    if simple is not None:
        return _simple_value(simple)
    if "\n" not in text:
        return _plain_shape(text, whole)
    return None


# Issue 33's strict speed: shapes of the realistic answers that the cascade below reaches only
# after several failed patterns (or not at all, and then tokenises). Each is one pattern that
# gives what the full reading gives (tests/scorers/test_reading.py holds them to it).
#
# A plain number inside one of the wrappers models print (issue 33): a bare value there too.
_WRAPPER_PAIRS = frozenset(
    [
        ("<answer>", "</answer>"),
        ("<ANSWER>", "</ANSWER>"),
        ("<final_answer>", "</final_answer>"),
        ("<answer>\\boxed{", "}</answer>"),
        ("Answer -> ", ""),
        ("Answer => ", ""),
        ("Answer \u2192 ", ""),
        ("answer: ", ""),
        ("Final: ", ""),
        ("Final answer: ", ""),
        ("**Final answer:** ", ""),
        ("Final Answer = ", ""),
        ("Result: ", ""),
        ("$\\boxed{", "}$"),
        ("\\(\\boxed{", "}\\)"),
        ("\\[\\boxed{", "}\\]"),
        ("Final answer: $\\boxed{", "}$"),
        ("The final answer is $\\boxed{", "}$."),
        ("The final answer is $\\boxed{", "}$"),
    ]
)
_WRAPPED_NUMBER = re.compile(
    r"(?P<open>"
    + "|".join(re.escape(o) for o in sorted({o for o, _ in _WRAPPER_PAIRS}, key=len, reverse=True))
    + r") ?(-?)(\d+(?:\.\d+)?) ?(?P<close>"
    + "|".join(re.escape(c) for c in sorted({c for _, c in _WRAPPER_PAIRS}, key=len, reverse=True))
    + r")"
)
_WRAPPER_FIRST = frozenset(o[0] for o, _ in _WRAPPER_PAIRS)
# Dates written year first with dashes, listed after ", " (whole sides only: a list item is
# never a list).
_DASHED_DAY = re.compile(r"(\d{4})-(" + _MONTH_NUMBER + r")-(" + _DAY_NUMBER + r")")
_DASHED_DAY_DOT = re.compile(r"(\d{4})-(" + _MONTH_NUMBER + r")-(" + _DAY_NUMBER + r")\.")
# Two of them as a hedge: "2019-05-01 or 2019-05-02", "2019-05-01 (or 2019-05-02)".
_DASHED = r"\d{4}-" + _MONTH_NUMBER + "-" + _DAY_NUMBER
_DATE_HEDGE = re.compile(
    _DASHED + r" (?:or(?: maybe| possibly)?|[-\u2013]|to|\((?:or|maybe)) " + _DASHED + r"\)?"
)
_DATES_HEDGED = Multi((), True)
# A number hedged with another in words, either way round: "12 or seventeen", "354 (maybe six
# hundred and eighteen)", "four hundred and eighteen, or possibly 75". Only the numeral is a
# value; listed after ", " a whole side is the list of its parts (the words split on "and").
_WORDED = r"(?:" + _NUMBER_WORD + r")(?:[ -](?:and )?(?:" + _NUMBER_WORD + r"))*"
_NUMBER_THEN_WORDED = re.compile(
    r"(\d+(?:\.\d+)?) (?:or(?: maybe| possibly)?|\((?:or|maybe)) " + _WORDED + r"\)?"
)
_WORDED_THEN_NUMBER = re.compile(_WORDED + r", or possibly (\d+(?:\.\d+)?)")
# A number and a magnitude word or suffix: "12k", "86178 billion", "3.5 Mn". A lowercase m, b
# or t alone is a unit (metres, bytes, tonnes).
_MAGNIFIED = re.compile(
    r"(\d+(?:\.\d+)?) ?((?i:thousand|thou|grand|tsd|hundred|lakh|lac|crore|cr|million|billion"
    r"|milliard|trillion|mln|mio|mil|mn|bn|bln|bil|mrd|tn|trn|tln|k)|MM|[MBT])"
)


def _quick_shape(text: str, whole: bool) -> Reading | None:
    if not text:
        return None
    first = text[0]
    if first in _WRAPPER_FIRST:
        wrapped = _WRAPPED_NUMBER.fullmatch(text)
        if wrapped is not None and (wrapped.group("open"), wrapped.group("close")) in (
            _WRAPPER_PAIRS
        ):
            digits = float(wrapped.group(3))
            negative = wrapped.group(2) == "-"
            return _bare_value(-digits if negative else digits, digits, negative)
        return None
    if not first.isdigit():
        if first.islower():
            worded = _WORDED_THEN_NUMBER.fullmatch(text)
            if worded is not None:
                digits = float(worded.group(1))
                if not whole:
                    return _new(Multi, ((digits,), False))
                words, last = text.rsplit(", ", 1)
                parts = words.split(" and ")
                items = (*(_TEXT for _ in parts), _bare_value(digits, digits))
                return _new(Items, (items, (*parts, last), False))
        return None
    if text[4:5] == "-" and _DATE_HEDGE.fullmatch(text) is not None:
        return _DATES_HEDGED
    hedged = _NUMBER_THEN_WORDED.fullmatch(text)
    if hedged is not None:
        return _new(Multi, ((float(hedged.group(1)),), False))
    last = text[-1]
    if last.isdigit():
        if whole and ", " in text and len(text) <= _QUICK_LIST_MAX_CHARS:
            parts = text.split(", ")
            dates = []
            for part in parts:
                found = _DASHED_DAY.fullmatch(part)
                if found is None:
                    return None
                year, month, day = found.groups()
                dates.append(_new(Date, ((int(year), int(month), int(day), 0, 0, 0),)))
            return _new(Items, (tuple(dates), tuple(parts), False))
        return None
    if last == ".":
        found = _DASHED_DAY_DOT.fullmatch(text)
        if found is not None:
            year, month, day = found.groups()
            return _new(Date, ((int(year), int(month), int(day), 0, 0, 0),))
        return None
    magnified = _MAGNIFIED.fullmatch(text)
    if magnified is not None:
        raw, word = magnified.groups()
        digits = float(raw)
        magnitude = _MAGNITUDES[word.lower()]
        return _new(
            Value,
            (
                digits * magnitude,
                digits,
                False,
                magnitude,
                False,
                _NO_COMPARISON,
                None,
                None,
                False,
                False,
            ),
        )
    return None


# Far below MAX_NUMBERS dates: a longer list takes the full reading.
_QUICK_LIST_MAX_CHARS = 2_000


# Most answers that are not a plain number are words, a currency or sign, one number, and a
# percent sign or a unit: "12 years", "The answer is 5", "$5768.04", "45%", "Class 2". When no
# word is one the full reading treats apart, this gives the same Value without tokenising.
_SIMPLE = re.compile(
    # A sign or currency and its number on one line, as in _SIGNED_NUMBER ("- \n 00" is 0 in the
    # full reading; a property run found it read as -0 here).
    r"\s*(?P<pre>(?:[A-Za-z]+\s+)*?)[(\[]?\s*(?P<neg>[" + _MINUSES + r"][^\S\n]*)?"
    r"(?P<cur>[$€£][^\S\n]*)?(?P<neg2>[" + _MINUSES + r"][^\S\n]*)?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<exp>[eE][-+]?\d+)?(?![\d,])"
    r"(?:\s?(?P<pct>%|(?i:percent|per\s?cent|pct)\b)|\s*(?P<cur2>[$€£])"
    r"|\s+(?P<unit>[A-Za-z]+))?[)\]]?(?:[.?]|(?<!\d)!)?\s*"
)
_SPECIAL_WORDS = (
    _TOKEN_WORDS
    | _COMPARISON_WORDS
    | frozenset(_MAGNITUDES)
    | frozenset(
        "minus negative percent pct per cent thousands hundreds millions billions trillions"
        " bp bps bip bips basis before after since prior earlier later"
        " between from to and or through thru until till no lakhs lacs crores milliards"
        # a unit of area or volume, and the words that make a number a function of it
        " sq square cu cubic cube root sqrt log logarithm ln exp factorial twice double triple"
        " half inverse reciprocal squared cubed".split()
    )
)


def _simple_value(found: re.Match[str]) -> Value | None:
    pre, currency, sign, unit_word, percent = found.group("pre", "cur", "neg", "unit", "pct")
    if sign is None:
        sign = found.group("neg2")
    if found.group("cur2") is not None:
        if currency is not None:
            return None  # "$12$" is LaTeX: cleaned first
        currency = found.group("cur2")
    key = (pre, currency, sign is not None, unit_word)
    words = _simple_words.get(key)
    if words is None:
        words = _simple_words[key] = _simple_label_unit(pre, currency, unit_word)
        if len(_simple_words) > _CACHE_MAX:
            _simple_words.clear()
    if words is _NOT_SIMPLE:
        return None
    raw, exponent = found.group("num", "exp")
    return _number_value(sign, raw, exponent, percent, words[0], words[1])


def _number_value(
    sign: str | None,
    raw: str,
    exponent: str | None,
    percent: str | None,
    label: str | None,
    unit: str | None,
) -> Value:
    """The Value of a number matched in parts (`_SIMPLE`, `_SIGNED_NUMBER`): its sign, its digits
    with any thousands separators, its exponent and percent sign, and the words around it."""
    if "," in raw:
        raw = raw.replace(",", "")
    digits = float(raw + exponent) if exponent else float(raw)
    negative = sign is not None
    return _new(
        Value,
        (
            -digits if negative else digits,
            digits,
            negative,
            1.0,
            percent is not None,
            _NO_COMPARISON,
            label,
            unit,
            exponent is not None,
            False,
        ),
    )


_NOT_SIMPLE = (None, None)
# What the words around the number say, per distinct set of words: answers repeat their shape
# ("... years", "The answer is ...") with another number each time.
_simple_words: dict[tuple, tuple[str | None, str | None]] = {}


def _simple_label_unit(
    pre: str, currency: str | None, unit_word: str | None
) -> tuple[str | None, str | None]:
    """(label, unit) of a simple side; `_NOT_SIMPLE` when a word needs the full reading."""
    words = pre.split() if pre else []
    if unit_word is not None:
        if unit_word.lower() in _SPECIAL_WORDS or unit_word in ("M", "B", "T"):
            return _NOT_SIMPLE
        words.append(unit_word)
    for word in words:
        if word.lower() in _SPECIAL_WORDS:
            return _NOT_SIMPLE
    label = None
    if pre:
        word = words[-1 if unit_word is None else -2].lower()
        if word not in _FILLER:
            label = word
    unit = _CURRENCY[currency[0]] if currency else None
    if unit_word is not None:
        word = unit_word.lower()
        if word not in _FILLER:
            unit = _canonical_unit(word)
    return (label, unit)


_PLAIN_PART = re.compile(r"-?\d+(?:\.\d+)?")
# A thousands group with decimals after a number: "234.56" in "1 234.56" (issue 46: the quick
# paths read two numbers where the token pattern reads one).
_GROUP_DECIMAL = re.compile(r"\d{3}\.\d").match
_GLUED_CALL = re.compile(r"\d[(!]")
# Brackets and question marks around a word or number change no reading ("12 (17)", "12? 17?").
_AROUND = "()[]?!"
# Words that could make two numbers a range, a list, a date, a quarter or one number.
_STRUCTURE_WORDS = (
    _TOKEN_WORDS
    | frozenset(_MAGNITUDES)
    | frozenset(
        "thousands hundreds millions billions trillions lakhs lacs crores milliards percent pct"
        " per cent"
        " to through thru until till and between from of"
        # "0.5 x 12" is a product in the full reading, not two numbers (a property run).
        " x".split()
    )
)


def read_words(text: str, words: list[str]) -> Value | Multi | None:
    """`read(text.strip())` for a side of plain numbers and ordinary words only, from its
    lowercased `words` and without tokenising ("The answer is 12 years", "12 or maybe 17",
    "5134.7 (sd 919.1)"); None for any other side (tests/scorers/test_reading.py)."""
    if len(text) >= _CROWD_MIN_CHARS:
        return None  # perhaps a Crowd: the full reading counts its numbers first
    numbers: list[str] = []
    label = unit = None
    special = False
    after_number = False
    for word in words:
        if not (word.isalpha() or word.isdecimal()):
            if ("!" in word or "(" in word) and _GLUED_CALL.search(word):
                return None  # "42!", "42()": a function of the number (the full reading)
            word = word.strip(_AROUND)  # neither a word nor digits holds one of these
            if not word:
                continue
        if word.isalpha():
            if not word.isascii() or word in _STRUCTURE_WORDS:
                return None
            special = special or word in _SPECIAL_WORDS
            if not numbers:
                label = word  # the last word before the number
            elif after_number and len(numbers) == 1:
                unit = word  # the first word after it
            after_number = False
        # str.isdecimal is \d+ (both are Unicode category Nd): the pattern only for the rest.
        elif word.isdecimal() or _PLAIN_PART.fullmatch(word):
            # "5 -3" is a range, "1 000" and "1 234.56" one number in the full reading.
            if after_number and (word[0] == "-" or len(word) == 3 or _GROUP_DECIMAL(word)):
                return None
            numbers.append(word)
            after_number = True
        else:
            return None
    if len(numbers) > 1:
        if "\n" in text:
            return None
        return _new(Multi, (tuple([abs(float(number)) for number in numbers]), False))
    if not numbers or special:
        # No number, or a comparison, a sign or magnitude word: the full reading decides.
        return None
    number = numbers[0]
    digits = float(number)
    negative = number[0] == "-"
    if negative:
        digits = -digits
    if label in _FILLER:
        label = None
    if unit is not None:
        unit = None if unit in _FILLER else _canonical_unit(unit)
    plain = len(words) == 1 and _PLAIN_PART.fullmatch(words[0]) is not None
    return _new(
        Value,
        (
            -digits if negative else digits,
            digits,
            negative,
            1.0,
            False,
            _NO_COMPARISON,
            label,
            unit,
            False,
            plain,
        ),
    )


def _plain_hedge(text: str) -> Multi | None:
    """Plain numbers and ordinary words only, two numbers or more ("12 or maybe 17", "1 2 3"):
    the same Multi the full reading gives, without tokenising."""
    values = []
    after_number = False
    for part in text.split():
        part = part.strip(_AROUND)
        if not part:
            continue
        if part.isalpha():
            if not part.isascii() or part.lower() in _STRUCTURE_WORDS:
                return None
            after_number = False
        elif _PLAIN_PART.fullmatch(part):
            # "5 -3" is a range, "1 000" and "1 234.56" one number in the full reading.
            if after_number and (part[0] == "-" or len(part) == 3 or _GROUP_DECIMAL(part)):
                return None
            values.append(abs(float(part)))
            after_number = True
        else:
            return None
    if len(values) < 2:
        return None
    return Multi(tuple(values), False)


# A side that is one date and nothing else, as the token pattern reads it.
_BARE_DATE = re.compile(r"\s*(?:" + _ISO_DATE + "|" + _NUMERIC_DATE + r")\s*")
_PLAIN_RANGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*[" + _MINUSES + r"]\s*(\d+(?:\.\d+)?)\s*")


def _plain_shape(text: str, whole: bool) -> Reading | None:
    """A side made of plain numbers alone (a hedge in words, a comma list, a range) or of one
    bare date; None for any other side."""
    if "," in text:
        if not whole:
            return None
        return _plain_list(text) or _comma_list(text)
    if "-" in text or "/" in text or "." in text:
        found = _BARE_DATE.fullmatch(text)
        if found is not None:
            return _iso_date(found) if found.group("ISO") else _numeric_date(found)
    found = _PLAIN_RANGE.fullmatch(text)
    if found is not None:
        low, high = found.group(1), found.group(2)
        if len(low) == 4 and low.isdecimal():
            return None  # "2019-05" is a month
        low_value, high_value = float(low), float(high)
        return Range(_bare_value(low_value, low_value), _bare_value(high_value, high_value))
    return _plain_hedge(text)


def _bare_value(number: float, digits: float, negative: bool = False) -> Value:
    """A number with nothing around it but, perhaps, a sign (plain=False: not the raw side)."""
    return _new(
        Value, (number, digits, negative, 1.0, False, _NO_COMPARISON, None, None, False, False)
    )


def _plain_list(text: str) -> Items | None:
    parts = text.split(",")
    items = []
    texts = []
    comma_joined = False
    previous = ""
    for part in parts:
        stripped = part.strip()
        if not _PLAIN_PART.fullmatch(stripped):
            return None
        if previous and previous[-1].isdecimal() and part[0].isdecimal():
            if len(part) >= 3 and part[:3].isdecimal() and not part[3:4].isdecimal():
                return None  # "1,234" and "1,234.5" are one number
            comma_joined = True
        previous = part
        texts.append(stripped)  # a plain number: already lowercased, without whitespace
        # What `read_item(stripped)` gives (`_PLAIN` reads it), without its round trip.
        negative = stripped[0] == "-"
        digits = float(stripped[1:] if negative else stripped)
        items.append(
            _new(
                Value, (-digits if negative else digits, digits, negative, 1.0, False, *_PLAIN_REST)
            )
        )
    return _new(Items, (tuple(items), tuple(texts), comma_joined))


# A comma inside a token (a thousands separator, a month's date: "May 1, 2019") or glued to
# both neighbours (the full reading then records a merge: "4,9"). Left to the full reading too,
# as reading each item alone differs from reading it in its side (property runs found both):
# markup (`<b>`, `|---|`, `>>>`), which it strips from an item's text ("12 , 12 <b>" kept
# "12 <b>"), and a letter glued to a digit ("1e3, lakh1 234.56", "Q3"), which joins a word and
# a number into a token no item holds.
_NOT_A_COMMA_LIST = re.compile(
    r"[;\n&`*_\\$\"'“”‘’«»<>|]|\S,\S|[^\W\d_]\d"
    # The look-ahead lets the alternatives be tried only where a word starts with a letter one
    # of them starts with (case-insensitively, as they are): a third of the cost.
    # Not after a letter, rather than at a word boundary: "12and" and "5may" are the words too.
    r"|(?i:(?<![^\W\d_])(?=[ajfmsond])(?:and\b|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))"
)
# A digit that starts a token: not glued to a word or a decimal point.
_FREE_DIGIT = re.compile(r"(?<![\w.])\d")


def _comma_list(text: str) -> Items | None:
    """A list whose only separator is a comma between items that each hold a number:
    "10 apples, 20 pears", "2019-05-01, 2019-06-01"."""
    if _NOT_A_COMMA_LIST.search(text):
        return None
    texts = []
    for piece in text.split(","):
        stripped = piece.strip()
        if not _FREE_DIGIT.search(stripped):
            return None
        texts.append(stripped)
    return _new(
        Items,
        (
            tuple([read_item(t) for t in texts]),
            tuple([" ".join(t.lower().split()) for t in texts]),
            False,
        ),
    )


_NUM = r"(\d+(?:\.\d+)?)"
_SIGNED = r"(-?\d+(?:\.\d+)?)"
# The expressions strict can value itself, so that a match math-verify finds by reading some
# other number of the side ("6387 / 4271?" read as 4271) does not stand.
_EXPRESSIONS = (
    (re.compile(r"\(?" + _SIGNED + r"\)?/\(?" + _SIGNED + r"\)?"), "divide"),
    (re.compile(r"(-?)\\[dt]?frac\{" + _SIGNED + r"\}\{" + _SIGNED + r"\}"), "frac"),
    (re.compile(_SIGNED + r"\^\{?" + _SIGNED + r"\}?"), "power"),
    (re.compile(r"(?:\\sqrt|√|(?i:sqrt))[{(]?" + _NUM + r"[})]?"), "root"),
    (
        re.compile(_SIGNED + r"(?:\\times|\\cdot|×|\*|x|X|·)10\^\{?([-+]?\d+)\}?"),
        "scientific",
    ),
    # a product (issue 33: "2 \\times 42" and "-1 \\times 42" passed for 42); after the
    # scientific form, which it would not match anyway (the `^` is left over).
    (re.compile(_SIGNED + r"(?:\\times|\\cdot|×|\*|·)" + _SIGNED), "product"),
)
_EXPRESSION_NOISE = re.compile(r"[\s$]")


def _compact(text: str) -> str:
    r"""`re.sub(r"[\s$]|[.?!]+$", "", text)` in linear time: the end-anchored alternative
    retried from every `.` of a long run of dots that does not end the text (issue 33)."""
    end = len(text) - 1 if text.endswith("\n") else len(text)
    return _EXPRESSION_NOISE.sub("", text[:end].rstrip(".?!"))


def _expression(text: str) -> Expr:
    compact = _compact(text)
    if "**" in compact:
        compact = compact.replace("**", "^")
    if _SUPERSCRIPT_RUN.search(compact):
        compact = _SUPERSCRIPT_RUN.sub(_superscript_power, compact)
    for pattern, kind in _EXPRESSIONS:
        found = pattern.fullmatch(compact)
        if found is None:
            continue
        try:
            if kind == "divide":
                return Expr(float(found.group(1)) / float(found.group(2)))
            if kind == "frac":
                value = float(found.group(2)) / float(found.group(3))
                return Expr(-value if found.group(1) else value)
            if kind == "power":
                base, exponent = float(found.group(1)), float(found.group(2))
                if abs(exponent) > 64 or abs(base) > 1e6:
                    return _EXPR  # too large to be worth computing here
                return Expr(float(base**exponent))
            if kind == "root":
                return Expr(float(found.group(1)) ** 0.5)
            if kind == "product":
                return Expr(float(found.group(1)) * float(found.group(2)))
            return Expr(float(found.group(1)) * 10.0 ** int(found.group(2)))
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return _EXPR
    # "The answer is 2²", "Result: sqrt(49)": the expression after the words (issue 46).
    lead = _WORDS_LEAD.match(text)
    if lead is not None and 0 < lead.end() < len(text):
        return _expression(text[lead.end() :])
    return _EXPR


_WORDS_LEAD = re.compile(r"\s*(?:[A-Za-z]+[:,]?[ \t]+)+")


def _superscript_power(run: re.Match[str]) -> str:
    return "^{" + run.group().translate(_FROM_SUPERSCRIPT) + "}"


def _single(text: str, token: _Token, before: str, after: str) -> Reading:
    if token.kind == "value":
        if _math_mark(text):
            return _expression(text)
        return _value(token, before, after)
    if token.kind == "word":
        # A number in words alone: the published ladder finds no number in it either.
        return _TEXT
    assert token.reading is not None
    if token.kind == "date" and (before or after):
        # "not 2019-03-01", "before 2019-03-01": a date is compared as numbers are (issue 33).
        comparison, rest, _ = _comparisons(before, after)
        temporal = _temporal(rest) if rest else None
        if temporal is not None:
            comparison = comparison | {temporal}
        if comparison:
            assert type(token.reading) is Date
            return Date((*token.reading.key, comparison))
    return token.reading


def _items(
    text: str, tokens: list[_Token], gaps: list[str], separators: list[re.Match[str] | None]
) -> Reading | None:
    """The side as a list: split where a gap between two numbers holds a list separator."""
    pieces = []
    start = 0
    comma_joined = False
    for token, gap, separator in zip(tokens, gaps, separators, strict=False):
        if separator is None:
            continue
        if gap == "," and token.kind == "value":
            comma_joined = True
        cut = token.end + separator.start()
        pieces.append(text[start:cut])
        start = token.end + separator.end()
    pieces.append(text[start:])
    items = []
    texts = []
    for piece in pieces:
        # "12, 7 and 3": the last comma's item still holds an "and"
        for part in _split_and(piece):
            stripped = part.strip()
            if stripped:
                texts.append(stripped)
                items.append(read_item(stripped))
    if len(items) < 2:
        return None
    return Items(tuple(items), tuple([" ".join(t.lower().split()) for t in texts]), comma_joined)


_AND = re.compile(r"\s(?i:and|&)\s")


def _split_and(piece: str) -> list[str]:
    if " " not in piece or _AND.search(piece) is None:
        return [piece]
    parts = _AND.split(piece)
    if any(not _TOKEN.search(part) for part in parts):
        return [piece]
    return parts
