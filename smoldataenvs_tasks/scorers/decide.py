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

from smoldataenvs_tasks.scorers.answers import (
    ExtractedProgram,
    exception_line_from_stderr,
    is_command,
    last_nonempty_line,
)
from smoldataenvs_tasks.scorers.grader import grade
from smoldataenvs_tasks.scorers.verdict import Category, ProgramOutcome, UngradedReason, Verdict

__all__ = [
    "verdict_before_running",
    "verdict_for_answer",
    "verdict_for_answer_file",
    "verdict_for_program_outcome",
]

_QUOTE_CHARS = 60
_REASON_CHARS = 200


def verdict_before_running(extracted: ExtractedProgram) -> Verdict | None:
    """The verdict a reply earns without running anything, or None when its program must run."""
    if extracted.shell_tag is not None:
        return Verdict(
            reward=0.0,
            method="shell_answer",
            category=Category.SHELL_ANSWER,
            reason=f"answered in a ```{extracted.shell_tag} block, not a Python program",
        )
    if extracted.code is None or not extracted.code.strip():
        return Verdict(
            reward=0.0,
            method="no_answer",
            category=Category.NO_ANSWER,
            reason="no program in the reply",
        )
    return None


def verdict_for_answer(
    answer: str | None,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
    outcome: ProgramOutcome | None = None,
) -> Verdict:
    """The verdict for one answer string (and, for the program variant, the run that printed it)."""
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
            )
        return Verdict(
            reward=0.0,
            method="no_answer",
            category=Category.NO_ANSWER,
            reason="program printed nothing" if outcome is not None else "empty answer",
            prediction=None,
        )

    if is_command(answer):
        return Verdict(
            reward=0.0,
            method="command_guard",
            category=Category.COMMAND_ANSWER,
            reason="answer is a command, not a value",
            prediction=answer,
        )

    try:
        result = grade(gold, answer, reward_mode=reward_mode, abs_tol=atol, rel_tol=rtol)
    except Exception as exc:  # infrastructure (e.g. no math-verify worker): ungraded, never 0
        return Verdict(
            reward=None,
            method="ungraded",
            category=Category.UNGRADED,
            reason=_clip(f"grader failed: {type(exc).__name__}: {exc}"),
            prediction=answer,
            detail=UngradedReason.GRADER_FAILED.value,
        )

    quoted = _quote(answer, gold)
    if result.reward == 1.0:
        return Verdict(
            reward=1.0,
            method=result.method,
            category=Category.CORRECT,
            reason=f"printed {quoted}: {result.method}",
            prediction=answer,
        )
    reason = f"printed {quoted}: {result.method}"
    if failed:
        assert outcome is not None and outcome.failure is not None
        reason = _clip(f"{reason}; {_mask(_failure_reason(outcome), gold)}")
        return Verdict(
            reward=0.0,
            method=result.method,
            category=outcome.failure,
            reason=reason,
            prediction=answer,
            detail=outcome.failure_detail,
        )
    return Verdict(
        reward=0.0,
        method=result.method,
        category=Category.WRONG_VALUE,
        reason=reason,
        prediction=answer,
    )


def verdict_for_program_outcome(
    outcome: ProgramOutcome,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
) -> Verdict:
    """Program variant: the answer is the last non-empty stdout line, whatever the exit status."""
    return verdict_for_answer(
        last_nonempty_line(outcome.stdout),
        gold=gold,
        reward_mode=reward_mode,
        atol=atol,
        rtol=rtol,
        outcome=outcome,
    )


def verdict_for_answer_file(
    text: str | None,
    *,
    gold: str,
    reward_mode: str = "",
    atol: float | None = 1e-3,
    rtol: float | None = 1e-3,
) -> Verdict:
    """Agentic variant: the whole answer file, stripped (multi-line allowed); missing → no_answer."""
    if text is None or not text.strip():
        return Verdict(
            reward=0.0,
            method="no_answer",
            category=Category.NO_ANSWER,
            reason="no answer file" if text is None else "answer file is empty",
        )
    return verdict_for_answer(
        text.strip(), gold=gold, reward_mode=reward_mode, atol=atol, rtol=rtol
    )


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
