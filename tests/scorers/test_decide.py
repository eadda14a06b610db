"""Verdicts: the answer rules and the ladder together, on the whileai fixture outcomes and more.

python -m pytest tests/scorers/test_decide.py -q
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.scorers import grader, symbolic
from smoldataenvs_tasks.scorers.answers import extract_program
from smoldataenvs_tasks.scorers.decide import (
    regrade_verdict,
    verdict_before_running,
    verdict_for_answer,
    verdict_for_answer_file,
    verdict_for_program_outcome,
)
from smoldataenvs_tasks.scorers.verdict import (
    GRADER_VERSION,
    Category,
    ProgramOutcome,
    UngradedReason,
    Verdict,
)

pytestmark = pytest.mark.unit

KETTLE = {"gold": "5768.04", "reward_mode": "numeric", "atol": 0.05, "rtol": 0.01}
REGION = {"gold": "East", "reward_mode": "exact_short", "atol": 0.0, "rtol": 0.0}


def _ok(stdout: str) -> ProgramOutcome:
    return ProgramOutcome(stdout=stdout, stderr="", exit_code=0)


def _real_crash(tmp_path: Path, source: str, stdout_first: str = "") -> ProgramOutcome:
    """Run a real program and describe it the way the sandbox runner does."""
    from smoldataenvs_tasks.scorers.answers import exception_name_from_stderr, is_syntax_error

    path = tmp_path / "solve.py"
    path.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True)
    if is_syntax_error(done.stderr, program_path=str(path)):
        failure, detail = Category.SYNTAX_ERROR, None
    else:
        failure, detail = Category.CRASH, exception_name_from_stderr(done.stderr)
    return ProgramOutcome(done.stdout, done.stderr, done.returncode, failure, detail)


# --- the whileai fixture rollouts --------------------------------------------------------------


def test_whileai_kettle_r0_rounded_to_two_decimals() -> None:
    verdict = verdict_for_program_outcome(_ok("5768.04\n"), **KETTLE)
    assert (verdict.reward, verdict.category, verdict.method) == (1.0, Category.CORRECT, "exact")
    assert verdict.prediction == "5768.04"
    assert verdict.grader_version == f"{GRADER_VERSION}+default"
    assert verdict.profile == "default"


def test_whileai_kettle_r1_integer_within_tolerance() -> None:
    verdict = verdict_for_program_outcome(_ok("5768\n"), **KETTLE)
    assert (verdict.reward, verdict.category, verdict.method) == (1.0, Category.CORRECT, "numeric")


def test_whileai_kettle_r2_forgets_units_is_a_wrong_value() -> None:
    verdict = verdict_for_program_outcome(_ok("623.97\n"), **KETTLE)
    assert (verdict.reward, verdict.category, verdict.method) == (0.0, Category.WRONG_VALUE, "miss")
    assert verdict.reason == "printed '623.97': miss"
    assert verdict.prediction == "623.97"


def test_whileai_kettle_r3_guessed_column_is_a_crash(tmp_path: Path) -> None:
    outcome = _real_crash(tmp_path, "rows = [{'units': 2}]\nprint(sum(r['price'] for r in rows))\n")
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert (verdict.reward, verdict.category) == (0.0, Category.CRASH)
    assert verdict.detail == "KeyError"
    assert verdict.reason == "KeyError: 'price'"
    assert verdict.prediction is None


def test_whileai_region_r1_prints_the_table_first_last_line_wins() -> None:
    verdict = verdict_for_program_outcome(
        _ok("region  units\nEast  94\nWest  85\nEast\n"), **REGION
    )
    assert verdict.category is Category.CORRECT


def test_whileai_region_r2_counts_orders_is_a_wrong_value() -> None:
    verdict = verdict_for_program_outcome(_ok("West\n"), **REGION)
    assert (verdict.reward, verdict.category) == (0.0, Category.WRONG_VALUE)


def test_whileai_region_r3_answers_in_shell() -> None:
    verdict = verdict_before_running(extract_program('Easy:\n```bash\necho "East"\n```'))
    assert verdict is not None
    assert (verdict.reward, verdict.category, verdict.method) == (
        0.0,
        Category.SHELL_ANSWER,
        "shell_answer",
    )


# --- before running ----------------------------------------------------------------------------


@pytest.mark.parametrize("completion", ["", "   \n", "```python\n\n```", "```text\nEast\n```"])
def test_no_program_is_no_answer(completion: str) -> None:
    verdict = verdict_before_running(extract_program(completion))
    assert verdict is not None
    assert (verdict.reward, verdict.category) == (0.0, Category.NO_ANSWER)


def test_a_program_must_run() -> None:
    assert verdict_before_running(extract_program("```python\nprint(1)\n```")) is None


# --- failures and answers ----------------------------------------------------------------------


def test_crash_after_printing_the_right_answer_is_correct(tmp_path: Path) -> None:
    outcome = _real_crash(tmp_path, "print('5768.04')\nraise ValueError('late')\n")
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert verdict.category is Category.CORRECT


def test_crash_after_printing_a_wrong_answer_keeps_the_crash_category(tmp_path: Path) -> None:
    outcome = _real_crash(tmp_path, "print('1')\n{}['x']\n")
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert (verdict.reward, verdict.category, verdict.detail) == (0.0, Category.CRASH, "KeyError")
    assert verdict.method == "miss"
    assert "KeyError" in verdict.reason


def test_syntax_error_reported_by_python_is_syntax_error(tmp_path: Path) -> None:
    outcome = _real_crash(tmp_path, "x = = 1\n")
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert (verdict.reward, verdict.category) == (0.0, Category.SYNTAX_ERROR)
    assert verdict.reason == "SyntaxError: invalid syntax"


def test_timeout_without_output() -> None:
    outcome = ProgramOutcome("", "", None, Category.TIMEOUT, None, duration_s=90.0)
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert (verdict.category, verdict.method) == (Category.TIMEOUT, "timeout")
    assert verdict.reason == "program timed out after 90s"


def test_resource_limit_without_output() -> None:
    outcome = ProgramOutcome("", "MemoryError\n", 1, Category.RESOURCE_LIMIT, "memory")
    verdict = verdict_for_program_outcome(outcome, **KETTLE)
    assert (verdict.category, verdict.detail) == (Category.RESOURCE_LIMIT, "memory")
    assert verdict.reason == "program hit the memory limit"


def test_nothing_printed_is_no_answer() -> None:
    verdict = verdict_for_program_outcome(_ok("\n\n"), **KETTLE)
    assert (verdict.category, verdict.method, verdict.reason) == (
        Category.NO_ANSWER,
        "no_answer",
        "program printed nothing",
    )


@pytest.mark.parametrize("answer", ['echo -n "5768.04" > /workdir/answer.txt', "echo 5768.04"])
def test_command_answer_earns_nothing_even_when_it_contains_the_gold(answer: str) -> None:
    verdict = verdict_for_answer(answer, **KETTLE)
    assert (verdict.reward, verdict.category, verdict.method) == (
        0.0,
        Category.COMMAND_ANSWER,
        "command_guard",
    )
    assert verdict.reason == "answer is a command, not a value"
    assert verdict.prediction == answer


@pytest.mark.parametrize("answer", [">50K", "> 2 Years"])
def test_redirect_shaped_values_are_graded(answer: str) -> None:
    verdict = verdict_for_answer(answer, gold=answer, reward_mode="exact_short", atol=0, rtol=0)
    assert verdict.category is Category.CORRECT


# --- the agentic answer file -------------------------------------------------------------------


def test_answer_file_is_the_whole_file_stripped() -> None:
    verdict = verdict_for_answer_file("  a, b,\n c \n", gold="a, b, c", reward_mode="list")
    assert verdict.category is Category.CORRECT
    assert verdict.prediction == "a, b,\n c"


@pytest.mark.parametrize(
    ("text", "reason"), [(None, "no answer file"), (" \n", "answer file is empty")]
)
def test_missing_or_empty_answer_file_is_no_answer(text, reason) -> None:
    verdict = verdict_for_answer_file(text, gold="East")
    assert (verdict.reward, verdict.category, verdict.reason) == (0.0, Category.NO_ANSWER, reason)


def test_answer_file_with_a_command_is_a_command_answer() -> None:
    verdict = verdict_for_answer_file("echo 2.14 > /workdir/answer.txt", gold="2.14")
    assert verdict.category is Category.COMMAND_ANSWER


# --- tolerances, privacy, infrastructure -------------------------------------------------------


@pytest.mark.parametrize("tol", [None, float("nan")])
def test_missing_row_tolerance_counts_as_zero(tol) -> None:
    assert verdict_for_answer("19.0", gold="19", atol=tol, rtol=tol).category is Category.CORRECT
    wrong = verdict_for_answer("19.5", gold="19", reward_mode="numeric", atol=tol, rtol=tol)
    assert wrong.category is Category.WRONG_VALUE


def test_reason_never_quotes_the_gold() -> None:
    gold = "Honolulu"
    correct = verdict_for_answer("honolulu", gold=gold, reward_mode="exact_short")
    assert gold.lower() not in correct.reason.lower()
    assert correct.reason == "printed <reference>: exact"
    crash = ProgramOutcome(
        "",
        "Traceback (most recent call last):\nKeyError: 'Honolulu'\n",
        1,
        Category.CRASH,
        "KeyError",
    )
    crashed = verdict_for_program_outcome(crash, gold=gold)
    assert gold.lower() not in crashed.reason.lower()
    assert crashed.reason == "KeyError: '<reference>'"


def test_grader_failure_is_ungraded_not_zero() -> None:
    # A closed pool is a real infrastructure failure of the symbolic rung (a power is never
    # verified in-process, so this pair needs a worker).
    grader.clear_memo()
    symbolic.default_pool().close()
    try:
        verdict = verdict_for_answer("0.5", gold="$2^{-1}$")
    finally:
        symbolic.shutdown()
    assert verdict.reward is None
    assert verdict.category is Category.UNGRADED
    assert verdict.detail == "grader_failed"
    assert verdict.prediction == "0.5"
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    # With the pool back, the same answer is graded.
    assert verdict_for_answer("0.5", gold="$2^{-1}$").category is Category.CORRECT


# --- grader profiles and re-grading ------------------------------------------------------------

SURVEY = {"gold": "22", "reward_mode": "numeric", "atol": 0.0, "rtol": 0.0}


def test_every_verdict_records_its_profile_and_versioned_grader() -> None:
    cases = [
        verdict_for_answer("22 or maybe 23", **SURVEY),  # graded
        verdict_for_answer("echo 22", **SURVEY),  # command guard
        verdict_for_answer_file(None, **SURVEY),  # no answer
        verdict_before_running(extract_program("```bash\necho 22\n```")),  # shell answer
    ]
    for profile in ("default", "strict"):
        for verdict in [
            verdict_for_answer("22 or maybe 23", profile=profile, **SURVEY),
            verdict_for_answer("echo 22", profile=profile, **SURVEY),
            verdict_for_answer_file(None, profile=profile, **SURVEY),
            verdict_before_running(extract_program("```sh\necho 22\n```"), profile=profile),
            Verdict.ungraded(UngradedReason.TABLE_UNAVAILABLE, "gone", profile),
        ]:
            assert verdict is not None
            assert verdict.profile == profile
            assert verdict.grader_version == f"{GRADER_VERSION}+{profile}"
            assert Verdict.from_dict(verdict.to_dict()) == verdict
    assert all(v is not None and v.profile == "default" for v in cases)


def test_strict_verdict_names_the_rule_in_its_reason() -> None:
    verdict = verdict_for_answer("22 or maybe 23", profile="strict", **SURVEY)
    assert (verdict.reward, verdict.category, verdict.method) == (0.0, Category.WRONG_VALUE, "miss")
    assert verdict.reason == "printed '<reference> or maybe 23': miss (strict rule one_number)"


def test_verdict_recorded_before_profiles_reads_as_default() -> None:
    old = verdict_for_answer("22", **SURVEY).to_dict()
    del old["profile"]
    old["grader_version"] = "1.0.0"
    verdict = Verdict.from_dict(old)
    assert (verdict.profile, verdict.grader_version) == ("default", "1.0.0")


def test_unknown_profile_in_a_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="profile must be one of"):
        Verdict(0.0, "miss", Category.WRONG_VALUE, "x", profile="lenient")


def test_regrade_hedged_answer_under_strict_equals_grading_it_strictly() -> None:
    recorded = verdict_for_answer("22 or maybe 23", **SURVEY)
    assert recorded.category is Category.CORRECT
    regraded = regrade_verdict(recorded, profile="strict", **SURVEY)
    assert regraded == verdict_for_answer("22 or maybe 23", profile="strict", **SURVEY)
    # and back: strict's verdict re-graded under default is default's own
    assert regrade_verdict(regraded, profile="default", **SURVEY) == recorded


def test_regrade_keeps_the_recorded_program_failure_of_a_zero(tmp_path: Path) -> None:
    crash = _real_crash(tmp_path, 'print("22 or maybe 23")\nraise KeyError("x")')
    strict_run = verdict_for_program_outcome(crash, profile="strict", **SURVEY)
    assert (strict_run.category, strict_run.detail) == (Category.CRASH, "KeyError")
    default_run = verdict_for_program_outcome(crash, **SURVEY)
    assert regrade_verdict(strict_run, profile="default", **SURVEY) == default_run
    # A failed run whose answer stays wrong keeps its category, detail and the failure's words.
    wrong = _real_crash(tmp_path, 'print("21 or maybe 23")\nraise KeyError("x")')
    recorded = verdict_for_program_outcome(wrong, **SURVEY)
    assert regrade_verdict(recorded, profile="strict", **SURVEY) == verdict_for_program_outcome(
        wrong, profile="strict", **SURVEY
    )


def test_regrade_of_a_correct_failed_run_cannot_know_the_failure(tmp_path: Path) -> None:
    # Documented limit: a correct verdict records no failure, so strict's 0 is wrong_value here
    # where a strict run says crash. The reward, all pass@1 needs, is the same.
    crash = _real_crash(tmp_path, 'print("22 or maybe 23")\nraise KeyError("x")')
    recorded = verdict_for_program_outcome(crash, **SURVEY)
    regraded = regrade_verdict(recorded, profile="strict", **SURVEY)
    rerun = verdict_for_program_outcome(crash, profile="strict", **SURVEY)
    assert (regraded.reward, regraded.category) == (0.0, Category.WRONG_VALUE)
    assert (rerun.reward, rerun.category) == (0.0, Category.CRASH)


@pytest.mark.parametrize(
    "recorded",
    [
        verdict_for_answer("echo 22", **SURVEY),
        verdict_for_answer_file(None, **SURVEY),
        verdict_for_program_outcome(
            ProgramOutcome("", "", None, Category.TIMEOUT, "90s", 90.0), **SURVEY
        ),
        Verdict.ungraded(UngradedReason.SANDBOX_FAILED, "engine gone"),
    ],
    ids=["command", "no_answer_file", "timeout_without_output", "sandbox_failed"],
)
def test_regrade_carries_over_verdicts_no_rung_decided(recorded: Verdict) -> None:
    regraded = regrade_verdict(recorded, profile="strict", **SURVEY)
    assert regraded.profile == "strict"
    assert regraded.grader_version == f"{GRADER_VERSION}+strict"
    same = {k: v for k, v in regraded.to_dict().items() if k not in ("profile", "grader_version")}
    assert same == {
        k: v for k, v in recorded.to_dict().items() if k not in ("profile", "grader_version")
    }


# --- truncation (grader 1.4.0, issue 43) ---------------------------------------------------------


def test_a_verdict_records_truncation_and_reads_it_back() -> None:
    from smoldataenvs_tasks.scorers.answers import extract_program
    from smoldataenvs_tasks.scorers.decide import verdict_before_running

    verdict = verdict_before_running(extract_program("```python\n"))
    assert verdict is not None and verdict.category is Category.TRUNCATED and verdict.truncated
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    # A verdict recorded before 1.4.0 has no field: not truncated. A forged one is refused.
    older = {k: v for k, v in verdict.to_dict().items() if k != "truncated"}
    assert Verdict.from_dict({**older, "category": "syntax_error"}).truncated is False
    with pytest.raises(TypeError, match="truncated"):
        Verdict.from_dict({**verdict.to_dict(), "truncated": "yes"})


def test_regrading_keeps_the_truncation_mark() -> None:
    from dataclasses import replace

    from smoldataenvs_tasks.scorers.decide import regrade_verdict

    recorded = replace(verdict_for_answer("East", gold="East"), truncated=True)
    regraded = regrade_verdict(recorded, gold="East", profile="strict")
    assert (regraded.category, regraded.truncated, regraded.profile) == (
        Category.CORRECT,
        True,
        "strict",
    )
