"""The one verdict type every part of the package speaks (docs/design.md "The verdict").

A Verdict is what Inspect's Score.metadata, lm-eval's per-doc verdict file, `validate` and
`report` all carry. `reward` is 1.0, 0.0, or None for ungraded (an infrastructure failure, never
the model's fault, and never counted in pass@1).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

# Bump when any rule that decides a reward changes (ladder, answer rules, guard, extraction).
# 1.1.0: `_is_clean_number` strips `%`/`$` from the ends only, as upstream; the strict profile.
# 1.2.0: a program that breaks its sandbox is its own 0 (`program_broke_sandbox`), no longer
#        ungraded; strict closes the hedge, negation, magnitude and date-list classes.
# 1.3.0: strict only (issue 33): LaTeX/Unicode relations and sign hedges, products, |x|, the
#        emoji minus, basis points, comparisons of dates, label extensions, a side of thousands
#        of numbers are refused; answer tags, `Answer ->`, ` | ` lists are read. Default unchanged.
# 1.3.1: strict only (issue 33): a `$` that delimits LaTeX math ("$\\boxed{12}$" in a sentence)
#        is no dollar sign, so "12 kg" accepts it as default does. Default unchanged.
# 1.4.0: issues 43 and 44, the program variant: a reply cut inside its program (an unclosed last
#        fence) whose program does not compile, or is empty, is `truncated` (it was syntax_error
#        or no_answer), and every verdict records `truncated`; a stray empty fence no longer
#        hides the python block after it (it read as no_answer); a program holding a NUL is
#        syntax_error without running and a lone surrogate reads as U+FFFD (both errored the
#        sample, or the run). Rewards change only where there was no verdict or no_answer.
# 1.4.1: strict only (issue 46): comparison words count in the number's own clause, markup, chat
#        tokens, sessions and table rules are removed, glued numbers and functions of a number,
#        the whole magnitude table, powers of ten, basis points, per mille, a date written twice
#        and units of area are read as docs/scoring.md "Round 3" says. Default unchanged.
GRADER_VERSION = "1.4.1"
# Every GRADER_VERSION whose verdicts differ from the one before, oldest first. The Inspect task
# version's number is this tuple's length ("2-A"), so a log's task version names the verdict
# rules it was scored by (versions before 1.1.0 all ran as task version 1).
VERDICT_GENERATIONS = ("1.1.0", "1.2.0", "1.3.0", "1.3.1", "1.4.0", "1.4.1")
# The profiles of the one ladder (docs/scoring.md): the published grader, and strict.
GRADER_PROFILES = ("default", "strict")
DEFAULT_PROFILE = "default"


def versioned(profile: str, version: str = GRADER_VERSION) -> str:
    """The grader version a Verdict records: the rules' version and the profile, "1.1.0+strict"."""
    return f"{version}+{profile}"


def profile_of_version(grader_version: str | None) -> str:
    """The profile a recorded grader version names; versions before profiles were default."""
    if grader_version and "+" in grader_version:
        return grader_version.rsplit("+", 1)[1]
    return DEFAULT_PROFILE


class Category(enum.StrEnum):
    CORRECT = "correct"
    WRONG_VALUE = "wrong_value"
    NO_ANSWER = "no_answer"
    COMMAND_ANSWER = "command_answer"
    SHELL_ANSWER = "shell_answer"
    SYNTAX_ERROR = "syntax_error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    # The model's code left its sandbox unable to do what the harness needed after it (read the
    # answer file, finish a command): everything a model's code can bring about is its own 0
    # (docs/threat-model.md, invariant 2), never "ungraded".
    PROGRAM_BROKE_SANDBOX = "program_broke_sandbox"
    # The reply was cut inside its program (the last fence never closed: a generation stopped
    # at max_tokens) and what was left does not compile or is empty: named, not `syntax_error`.
    TRUNCATED = "truncated"
    UNGRADED = "ungraded"


class UngradedReason(enum.StrEnum):
    TABLE_UNAVAILABLE = "table_unavailable"
    # the table is there but its bytes are not the recorded ones (edited, truncated, a link)
    TABLE_CORRUPT = "table_corrupt"
    # the dataset row itself is unusable (an unsafe file name, a NaN tolerance, no gold, ...)
    INVALID_ROW = "invalid_row"
    SANDBOX_FAILED = "sandbox_failed"
    GRADER_FAILED = "grader_failed"
    # The run's own failures, which a re-run can fix (Inspect's `eval-retry`): the model's API
    # refused or failed, or the sample was interrupted. Never the data's, never the sandbox's.
    MODEL_ERROR = "model_error"
    CANCELLED = "cancelled"


# Ungraded reasons that are the dataset's defects: the only ones a verifier's own data can
# confirm, so the only ones a headline may leave out (docs/reporting.md).
DATASET_DEFECTS = frozenset(
    {UngradedReason.TABLE_UNAVAILABLE, UngradedReason.TABLE_CORRUPT, UngradedReason.INVALID_ROW}
)


_TEXT_FIELDS = ("method", "reason", "prediction", "detail", "grader_version")
_REQUIRED = ("method", "reason")


@dataclass(frozen=True)
class Verdict:
    reward: float | None
    method: str
    category: Category
    reason: str
    prediction: str | None = None
    # Exception name for `crash` (e.g. "KeyError"), limit name for `resource_limit`,
    # an UngradedReason value for `ungraded`.
    detail: str | None = None
    # `versioned(profile)` unless given (a verdict read back keeps the version it was decided by).
    grader_version: str | None = None
    profile: str = DEFAULT_PROFILE
    # The reply's last fenced block was never closed: the generation was cut off (most often at
    # max_tokens), whatever the category. Read from the reply's text, so every framework marks
    # the same replies; False for the agentic variant and for verdicts recorded before 1.4.0.
    truncated: bool = False

    def __post_init__(self) -> None:
        if self.profile not in GRADER_PROFILES:
            raise ValueError(f"profile must be one of {GRADER_PROFILES}, not {self.profile!r}")
        if self.grader_version is None:
            object.__setattr__(self, "grader_version", versioned(self.profile))
        if self.reward not in (0.0, 1.0, None):
            raise ValueError(f"reward must be 1.0, 0.0 or None, not {self.reward!r}")
        if (self.reward is None) != (self.category is Category.UNGRADED):
            raise ValueError("reward None if and only if category is 'ungraded'")
        if (self.reward == 1.0) != (self.category is Category.CORRECT):
            raise ValueError("reward 1.0 if and only if category is 'correct'")

    @property
    def graded(self) -> bool:
        return self.reward is not None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["category"] = self.category.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__}
        # A verdict read back from a log is the submitter's file: its text fields are checked
        # here so a number, list or NaN in one is a malformed verdict, not a crash later on.
        for name in _TEXT_FIELDS:
            if not isinstance(fields[name], str) and (
                fields[name] is not None or name in _REQUIRED
            ):
                raise TypeError(f"{name} must be text, not {type(fields[name]).__name__}")
        if fields["truncated"] is None:
            fields["truncated"] = False
        elif not isinstance(fields["truncated"], bool):
            raise TypeError(f"truncated must be true or false, not {fields['truncated']!r}")
        fields["category"] = Category(data["category"])
        # Verdicts recorded before profiles existed were all decided by the default one.
        fields["profile"] = fields.get("profile") or profile_of_version(fields["grader_version"])
        return cls(**fields)

    @classmethod
    def broke_sandbox(cls, explanation: str, profile: str = DEFAULT_PROFILE) -> Verdict:
        """The model's code left its sandbox unable to give the harness what it needed after it
        (the answer file read to the end): a 0 of its own, never ungraded."""
        return cls(
            reward=0.0,
            method=Category.PROGRAM_BROKE_SANDBOX.value,
            category=Category.PROGRAM_BROKE_SANDBOX,
            reason=explanation,
            profile=profile,
        )

    @classmethod
    def ungraded(
        cls, reason: UngradedReason, explanation: str, profile: str = DEFAULT_PROFILE
    ) -> Verdict:
        return cls(
            reward=None,
            method="ungraded",
            category=Category.UNGRADED,
            reason=explanation,
            detail=reason.value,
            profile=profile,
        )


@dataclass(frozen=True)
class ProgramOutcome:
    """What running one program in a sandbox produced (the shared runner's result).

    `failure` is None when the program exited 0 within every limit; otherwise one of
    TIMEOUT, CRASH (detail: exception name), SYNTAX_ERROR, RESOURCE_LIMIT (detail: limit name).
    The answer is still read from stdout whatever the failure (docs/design.md "Answer rules").
    """

    stdout: str
    stderr: str
    exit_code: int | None
    failure: Category | None = None
    failure_detail: str | None = None
    duration_s: float = 0.0

    def __post_init__(self) -> None:
        allowed = {
            None,
            Category.TIMEOUT,
            Category.CRASH,
            Category.SYNTAX_ERROR,
            Category.RESOURCE_LIMIT,
        }
        if self.failure not in allowed:
            raise ValueError(f"not a program failure category: {self.failure!r}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["failure"] = self.failure.value if self.failure else None
        return data
