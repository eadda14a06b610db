"""Turning answers into Verdicts: the one place the answer rules meet the grader ladder.

Pure functions over text and `ProgramOutcome`s; both the Inspect scorers and the lm-eval glue
call these, so the two harnesses cannot disagree about a reply.

    python -c "from smoldataenvs_tasks.scorers.decide import verdict_for_answer as v; \\
print(v('5768', gold='5768.04', reward_mode='numeric', atol=0.05, rtol=0.01))"

Rules (docs/design.md "The verdict", "Answer rules"):

* a reply whose last fenced block is a shell block → `shell_answer`; no program → `no_answer`;
* a blank answer → the program's failure category (timeout, crash, syntax_error,
  resource_limit) when it failed, else `no_answer`;
* a command-shaped answer (`echo 5`) → `command_answer`;
* otherwise the ladder decides: 1 → `correct`; 0 → the program's failure category when it
  failed, else `wrong_value`;
* any unexpected grader error → `ungraded` / `grader_failed` (never a crash, never a 0).

Row tolerances: callers pass the row's `atol`/`rtol`; None, NaN or a negative value counts as 0.0
(the grader's coercion; WAI-env reads a missing tolerance as 0.0, and a NaN one could only reject
equal numbers). `reason` never quotes the gold: where the model's own text equals it, the
reason shows `<reference>` instead (whileai's convention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from smoldataenvs_tasks.scorers.answers import (
    ExtractedProgram,
    exception_line_from_stderr,
    is_command,
    last_nonempty_line,
)
from smoldataenvs_tasks.scorers.grader import METHODS, GradeResult, grade
from smoldataenvs_tasks.scorers.verdict import (
    DEFAULT_PROFILE,
    Category,
    ProgramOutcome,
    UngradedReason,
    Verdict,
)

__all__ = [
    "answer_too_large_verdict",
    "no_answer_verdict",
    "regrade_verdict",
    "verdict_before_running",
    "verdict_for_answer",
    "verdict_for_answer_file",
    "verdict_for_program_outcome",
    "with_truncation",
]

_QUOTE_CHARS = 60
_PROGRAM_FAILURES = frozenset(
    {Category.CRASH, Category.TIMEOUT, Category.SYNTAX_ERROR, Category.RESOURCE_LIMIT}
)
_REASON_CHARS = 200


def verdict_before_running(
    extracted: ExtractedProgram, *, profile: str = DEFAULT_PROFILE
) -> Verdict | None:
    """The verdict a reply earns without running anything, or None when its program must run."""
    if extracted.shell_tag is not None:
        return Verdict(
            reward=0.0,
            method="shell_answer",
            category=Category.SHELL_ANSWER,
            reason=f"answered in a ```{extracted.shell_tag} block, not a Python program",
            profile=profile,
        )
    if extracted.code is None or not extracted.code.strip():
        return with_truncation(
            Verdict(
                reward=0.0,
                method="no_answer",
                category=Category.NO_ANSWER,
                reason="no program in the reply",
                profile=profile,
            ),
            extracted,
        )
    if "\x00" in extracted.code:
        # Python source may hold no NUL (3.12 refuses it; the sandbox's 3.11 silently drops the
        # rest of the file), and no command line can carry one: decided here, the same in every
        # sandbox, instead of erroring the sample (issue 44).
        return with_truncation(
            Verdict(
                reward=0.0,
                method="syntax_error",
                category=Category.SYNTAX_ERROR,
                reason="the program holds a NUL character, which Python source may not",
                detail="SyntaxError",
                profile=profile,
            ),
            extracted,
        )
    return None


# What a cut reply's program failing like this means: the cut, not the model's Python.
_CUT_SHOWS_AS = frozenset({Category.SYNTAX_ERROR, Category.NO_ANSWER})


def with_truncation(verdict: Verdict, extracted: ExtractedProgram) -> Verdict:
    """`verdict` of a program reply, marked `truncated` when the reply was cut inside its last
    fence; a cut program that does not compile, or is empty, is `truncated` (reward still 0)
    rather than syntax_error or no_answer, so a max_tokens cut is named (issue 43)."""
    if not extracted.truncated:
        return verdict
    if verdict.category not in _CUT_SHOWS_AS:
        return replace(verdict, truncated=True)
    return replace(
        verdict,
        method=Category.TRUNCATED.value,
        category=Category.TRUNCATED,
        reason=_clip(
            f"the reply was cut off inside its program (no closing ```); {verdict.reason}"
        ),
        truncated=True,
    )


def verdict_for_answer(
    answer: str | None,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
    outcome: ProgramOutcome | None = None,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """The verdict for one answer string (and, for the program variant, the run that printed it),
    under the grader `profile` ("default" or "strict")."""
    failed = outcome is not None and outcome.failure is not None
    if answer is None or not answer.strip():
        if failed:
            assert outcome is not None and outcome.failure is not None
            return Verdict(
                reward=0.0,
                method=outcome.failure.value,
                category=outcome.failure,
                reason=_mask(_failure_reason(outcome), gold),
                prediction=None,
                detail=outcome.failure_detail,
                profile=profile,
            )
        return Verdict(
            reward=0.0,
            method="no_answer",
            category=Category.NO_ANSWER,
            reason="program printed nothing" if outcome is not None else "empty answer",
            prediction=None,
            profile=profile,
        )

    if is_command(answer):
        return Verdict(
            reward=0.0,
            method="command_guard",
            category=Category.COMMAND_ANSWER,
            reason="answer is a command, not a value",
            prediction=answer,
            profile=profile,
        )

    try:
        result = grade(
            gold, answer, reward_mode=reward_mode, abs_tol=atol, rel_tol=rtol, profile=profile
        )
    except Exception as exc:  # infrastructure (e.g. no math-verify worker): ungraded, never 0
        return Verdict(
            reward=None,
            method="ungraded",
            category=Category.UNGRADED,
            reason=_clip(f"grader failed: {type(exc).__name__}: {exc}"),
            prediction=answer,
            detail=UngradedReason.GRADER_FAILED.value,
            profile=profile,
        )
    failure = None
    if outcome is not None and outcome.failure is not None:
        failure = _Failure(
            outcome.failure, outcome.failure_detail, _mask(_failure_reason(outcome), gold)
        )
    return _graded_verdict(answer, gold, result, failure, profile)


@dataclass(frozen=True)
class _Failure:
    """How the program that printed the answer failed: category, detail, words for people."""

    category: Category
    detail: str | None
    reason: str


def _answer_reason(answer: str, gold: str, result: GradeResult) -> str:
    reason = f"printed {_quote(answer, gold)}: {result.method}"
    if result.rule is not None:
        reason += f" (strict rule {result.rule})"
    return reason


def _graded_verdict(
    answer: str, gold: str, result: GradeResult, failure: _Failure | None, profile: str
) -> Verdict:
    reason = _answer_reason(answer, gold, result)
    if result.reward == 1.0:
        return Verdict(
            reward=1.0,
            method=result.method,
            category=Category.CORRECT,
            reason=reason,
            prediction=answer,
            profile=profile,
        )
    if failure is not None:
        return Verdict(
            reward=0.0,
            method=result.method,
            category=failure.category,
            reason=_clip(f"{reason}; {failure.reason}"),
            prediction=answer,
            detail=failure.detail,
            profile=profile,
        )
    return Verdict(
        reward=0.0,
        method=result.method,
        category=Category.WRONG_VALUE,
        reason=reason,
        prediction=answer,
        profile=profile,
    )


def verdict_for_program_outcome(
    outcome: ProgramOutcome,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """Program variant: the answer is the last non-empty stdout line, whatever the exit status."""
    return verdict_for_answer(
        last_nonempty_line(outcome.stdout),
        gold=gold,
        reward_mode=reward_mode,
        atol=atol,
        rtol=rtol,
        outcome=outcome,
        profile=profile,
    )


def verdict_for_answer_file(
    text: str | None,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """Agentic variant: the whole answer file, stripped (multi-line allowed); missing → no_answer."""
    if text is None or not text.strip():
        return no_answer_verdict(
            "no answer file" if text is None else "answer file is empty", profile
        )
    return verdict_for_answer(
        text.strip(), gold=gold, reward_mode=reward_mode, atol=atol, rtol=rtol, profile=profile
    )


def no_answer_verdict(reason: str, profile: str = DEFAULT_PROFILE) -> Verdict:
    """A 0 for an answer that is not there: no file, an empty one, or one that is not a readable
    regular text file (a FIFO, a link, a directory: the agent's doing, never the harness's)."""
    return Verdict(
        reward=0.0, method="no_answer", category=Category.NO_ANSWER, reason=reason, profile=profile
    )


def answer_too_large_verdict(reason: str, profile: str = DEFAULT_PROFILE) -> Verdict:
    """A 0 of its own for an answer file past the contract's MAX_ANSWER_BYTES: graded (a model
    cannot turn a wrong answer into an unscored sample by writing 900 MB), and told apart from a
    missing answer."""
    return Verdict(
        reward=0.0,
        method="answer_too_large",
        category=Category.RESOURCE_LIMIT,
        reason=reason,
        detail="answer_size",
        profile=profile,
    )


def regrade_verdict(
    verdict: Verdict,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """The verdict a recorded one becomes under `profile`, from its recorded answer alone.

    Verdicts no ladder rung decided (no answer, a command or shell answer, a failed program that
    printed nothing, an unavailable table or sandbox) do not depend on the profile and carry
    over; a verdict ungraded because the grader failed is tried again. A graded answer is
    graded again; a 0 keeps the recorded program failure (crash, timeout, ...) when the recorded
    verdict had one. A run whose recorded verdict was correct has no failure on record, so its
    answer's 0 under the new profile is `wrong_value` even if the program failed after printing
    it (pass@1 does not depend on this).
    """
    retry = verdict.detail == UngradedReason.GRADER_FAILED.value
    if verdict.prediction is None or not (verdict.method in METHODS or retry):
        return replace(verdict, profile=profile, grader_version=None)
    try:
        result = grade(
            gold,
            verdict.prediction,
            reward_mode=reward_mode,
            abs_tol=atol,
            rel_tol=rtol,
            profile=profile,
        )
    except Exception as exc:  # infrastructure (e.g. no math-verify worker): ungraded, never 0
        return Verdict(
            reward=None,
            method="ungraded",
            category=Category.UNGRADED,
            reason=_clip(f"grader failed: {type(exc).__name__}: {exc}"),
            prediction=verdict.prediction,
            detail=UngradedReason.GRADER_FAILED.value,
            profile=profile,
        )
    failure = None
    if verdict.category in _PROGRAM_FAILURES:
        # The recorded reason is "<the answer's words>; <the failure's words>".
        recorded = verdict.reason
        failure_reason = verdict.category.value
        prefix = f"printed {_quote(verdict.prediction, gold)}: {verdict.method}"
        if recorded.startswith(prefix) and "; " in recorded[len(prefix) :]:
            failure_reason = recorded[len(prefix) :].split("; ", 1)[1]
        failure = _Failure(verdict.category, verdict.detail, failure_reason)
    regraded = _graded_verdict(verdict.prediction, gold, result, failure, profile)
    return replace(regraded, truncated=verdict.truncated)


def _failure_reason(outcome: ProgramOutcome) -> str:
    failure = outcome.failure
    if failure is Category.TIMEOUT:
        return f"program timed out after {outcome.duration_s:.0f}s"
    if failure is Category.RESOURCE_LIMIT:
        return f"program hit the {outcome.failure_detail or 'resource'} limit"
    line = exception_line_from_stderr(outcome.stderr)
    if line:
        return _clip(line)
    if failure is Category.SYNTAX_ERROR:
        return "program is not valid Python"
    detail = f" ({outcome.failure_detail})" if outcome.failure_detail else ""
    return f"program crashed{detail}, exit status {outcome.exit_code}"


def _quote(answer: str, gold: str) -> str:
    if " ".join(answer.lower().split()) == " ".join(str(gold).lower().split()):
        return "<reference>"
    shown = answer if len(answer) <= _QUOTE_CHARS else answer[: _QUOTE_CHARS - 3] + "..."
    return repr(_mask(shown, gold))


def _mask(text: str, gold: str) -> str:
    """`text` with whole-token occurrences of the gold replaced by `<reference>`."""
    needle = str(gold).strip()
    if not needle:
        return text
    pattern = re.compile(r"(?<![\w.])" + re.escape(needle) + r"(?![\w]|\.\d)", re.IGNORECASE)
    return pattern.sub("<reference>", text)


def _clip(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."
