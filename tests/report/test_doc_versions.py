"""Version strings the documentation shows are the code's (issue 27: docs/reporting.md showed
grader `1.0.0` long after the grader was `1.1.0+default`).

What a reader copies or compares against output is checked: a grader version with its profile
(`1.2.0+default`, the way every verdict and report prints it), a `grader_version` field, the
version called current ("now `1.2.0`"), and the submission and leaderboard formats. Versions
named as history (a changelog's "Grader 1.1.0: ...", "verdicts from before profiles (`1.0.0`)")
are not claims about the code and are left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smoldataenvs_tasks.results.publish.leaderboard import LEADERBOARD_FORMAT
from smoldataenvs_tasks.results.publish.submission import SUBMISSION_FORMAT
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES, GRADER_VERSION

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted(
    path
    for path in [
        REPO / "README.md",
        REPO / "CONTRIBUTING.md",
        *(REPO / "docs").glob("*.md"),
        REPO / "smoldataenvs_tasks" / "lm_eval" / "tasks" / "smoldataenvs" / "README.md",
    ]
    if path.exists()
)
VERSION = r"\d+\.\d+\.\d+"
CLAIMS = [
    # (what, pattern with one group, the code's value)
    (
        "grader version with its profile",
        rf"\b({VERSION}\+(?:{'|'.join(GRADER_PROFILES)}))\b",
        {f"{GRADER_VERSION}+{profile}" for profile in GRADER_PROFILES},
    ),
    (
        "grader_version field",
        rf"grader_version[\"']?\s*[:=]\s*[\"']?({VERSION})\b",
        {GRADER_VERSION},
    ),
    ("the current grader version", rf"\bnow `({VERSION})`", {GRADER_VERSION}),
    ("submission format", r"(smoldataenvs-submission/\d+)", {SUBMISSION_FORMAT}),
    ("leaderboard format", r"(smoldataenvs-leaderboard/\d+)", {LEADERBOARD_FORMAT}),
]


def claims_in(text: str) -> list[tuple[str, int, str, set[str]]]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern, expected in CLAIMS:
            for match in re.finditer(pattern, line):
                found.append((what, number, match.group(1), expected))
    return found


def test_the_docs_show_the_codes_versions():
    stale = [
        f"{path.relative_to(REPO)}:{line}: {what} {value!r}, the code's is {sorted(expected)}"
        for path in DOCS
        for what, line, value, expected in claims_in(path.read_text(encoding="utf-8"))
        if value not in expected
    ]
    assert not stale, "\n".join(stale)


def test_the_docs_show_versions_at_all():
    """The check above has something to check: reporting.md shows the grader and the format."""
    shown = {
        value
        for what, _, value, _ in claims_in((REPO / "docs" / "reporting.md").read_text("utf-8"))
    }
    assert f"{GRADER_VERSION}+default" in shown and SUBMISSION_FORMAT in shown


@pytest.mark.parametrize(
    "line",
    [
        "## split sample · revision sample-1 · grader 1.0.0+default · program",
        'grader_version: "1.1.0"',
        "`GRADER_VERSION` (`scorers/verdict.py`, now `0.9.0`) is the version of the rules",
        "| `format` | `smoldataenvs-submission/2` |",
    ],
)
def test_a_stale_version_is_caught(line):
    assert any(value not in expected for _, _, value, expected in claims_in(line))


def test_history_is_not_a_claim():
    assert not claims_in("- Grader 1.1.0: parity with the published grader (`1.0.0` before)")
