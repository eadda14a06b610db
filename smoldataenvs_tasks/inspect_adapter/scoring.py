"""The Inspect scorers: each turns a finished sample into a Score carrying its Verdict.

The decisions themselves live in the pure `scorers` package (`answers`, `decide`, `grader`) and,
for programs, in `pipeline.decide_program_reply`; this module only
fetches what the sample produced (the reply, the program's output, the answer file) and maps the
Verdict onto Inspect: value 1/0, `Score.unscored` for samples the dataset leaves ungradable (an
invalid row, a table missing or corrupt: excluded from metrics and reducers, reason kept), and the
Verdict in `Score.metadata`. A sandbox that failed (never the model's doing: docs/threat-model.md)
raises out of the scorer, so Inspect errors the sample and `--retry-on-error` or `inspect
eval-retry` run it again.

Metrics: accuracy (= pass@1 over graded samples) with stderr, and the same grouped by
`difficulty_tier` and by `reward_mode`.

Re-grading a finished log (`regrade_scorer`) lives in `inspect_adapter/regrade.py`.
"""

from __future__ import annotations

from functools import partial

import anyio
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    accuracy,
    grouped,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.inspect_adapter.program_host import InspectSandboxHost
from smoldataenvs_tasks.inspect_adapter.program_slots import program_gate
from smoldataenvs_tasks.inspect_adapter.setup import (
    TABLE_CORRUPT_KEY,
    TABLE_DIGESTS_KEY,
    TABLE_ERROR_KEY,
    record_of,
)
from smoldataenvs_tasks.pipeline import (
    decide_answer_file,
    decide_program_reply,
    table_verdict,
    unscorable_verdict,
)
from smoldataenvs_tasks.scorers.decide import verdict_for_answer_file
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict


@metric
def graded() -> Metric:
    """How many samples were graded. Ungraded ones (an invalid row, a table that cannot be had)
    are left out of accuracy, so 'accuracy 1.000, graded 9' over 10 samples
    says one was not counted, and `inspect view` shows why in its score explanation."""

    def compute(scores: list[SampleScore]) -> float:
        return float(len(scores))

    return compute


SCORER_METRICS = [
    accuracy(),
    stderr(),
    graded(),
    grouped(accuracy(), "difficulty_tier", all=False, name_template="tier_{group_name}"),
    grouped(accuracy(), "reward_mode", all=False, name_template="mode_{group_name}"),
]


def verdict_to_score(verdict: Verdict, extra: dict | None = None) -> Score:
    metadata = {**verdict.to_dict(), **(extra or {})}
    if verdict.reward is None:
        # The viewer shows a NaN score as blank: say where it looks (answer, explanation) why.
        why = f"ungraded ({verdict.detail or 'unknown'})"
        return Score.unscored(
            reason=verdict.detail or "ungraded",
            answer=verdict.prediction or why,
            explanation=f"{why}: {verdict.reason}. Not counted in accuracy (pass@1).",
            metadata=metadata,
        )
    return Score(
        value=verdict.reward,
        answer=verdict.prediction,
        explanation=verdict.reason,
        metadata=metadata,
    )


def _table_verdict(state: TaskState, grader: str) -> Verdict | None:
    """Ungraded before any grading: an invalid row, or tables missing or corrupt at setup."""
    return unscorable_verdict(record_of(state), grader) or table_verdict(
        state.metadata.get(TABLE_ERROR_KEY) or None,
        corrupt=bool(state.metadata.get(TABLE_CORRUPT_KEY)),
        profile=grader,
    )


def _extras(state: TaskState) -> dict:
    digests = state.metadata.get(TABLE_DIGESTS_KEY)
    return {"table_sha256": digests} if digests else {}


@scorer(metrics=SCORER_METRICS)
def program_scorer(
    limits: SandboxLimits = DEFAULT_LIMITS,
    max_programs: int | None = None,
    grader: str = DEFAULT_PROFILE,
) -> Scorer:
    """Run the reply's program in the sample's sandbox and grade its last printed line.

    Args:
        limits: The sandbox contract's limits (the program's time limit among them).
        max_programs: Programs running at once in this process when the sandboxes share this
            machine (default: one per CPU, or $SMOLDATAENVS_MAX_PROGRAMS). More samples than
            that may be in flight: the others wait for a slot before their time limit starts.
        grader: The grader profile, "default" (the published grader) or "strict".
    """

    async def score(state: TaskState, target: Target) -> Score:
        verdict = _table_verdict(state, grader)
        if verdict is None:
            verdict = await decide_program_reply(
                state.output.completion if state.output else "",
                record_of(state),
                InspectSandboxHost(current_sandbox()),
                limits=limits,
                gate=program_gate(max_programs),
                profile=grader,
            )
        return verdict_to_score(verdict, _extras(state))

    return score


async def _grade_agent_answer(state: TaskState, answer: str | None, grader: str) -> Verdict:
    """The agentic variants' verdict: the whole answer through the command guard and grader."""
    record = record_of(state)
    # The symbolic rung may wait seconds on a worker: keep the event loop free meanwhile.
    return await anyio.to_thread.run_sync(
        partial(
            verdict_for_answer_file,
            answer,
            gold=record.answer,
            reward_mode=record.reward_mode,
            atol=record.atol,
            rtol=record.rtol,
            profile=grader,
        )
    )


@scorer(metrics=SCORER_METRICS)
def answer_file_scorer(grader: str = DEFAULT_PROFILE) -> Scorer:
    """Grade the whole stripped answer file the agent wrote (agentic, answer-file protocol)."""

    async def score(state: TaskState, target: Target) -> Score:
        verdict = _table_verdict(state, grader)
        if verdict is None:
            host = InspectSandboxHost(current_sandbox())
            verdict = await decide_answer_file(record_of(state), host, profile=grader)
        return verdict_to_score(verdict, _extras(state))

    return score


def submitted_answer(state: TaskState) -> str | None:
    """The `answer` of the last `submit` call; None when the agent never submitted.

    Read from the conversation rather than `state.output`, which holds the last assistant text
    when the agent ran out of turns without submitting (that text is not an answer).
    """
    for message in reversed(state.messages):
        if isinstance(message, ChatMessageAssistant):
            for call in reversed(message.tool_calls or []):
                if call.function == "submit":
                    answer = call.arguments.get("answer")
                    return None if answer is None else str(answer)
    return None


@scorer(metrics=SCORER_METRICS)
def submit_scorer(grader: str = DEFAULT_PROFILE) -> Scorer:
    """Grade the value the agent passed to `submit()` (agentic, submit protocol)."""

    async def score(state: TaskState, target: Target) -> Score:
        verdict = _table_verdict(state, grader) or await _grade_agent_answer(
            state, submitted_answer(state), grader
        )
        return verdict_to_score(verdict, _extras(state))

    return score
