"""The Inspect scorers: each turns a finished sample into a Score carrying its Verdict.

The decisions themselves live in the pure `scorers` package (`answers`, `decide`, `grader`) and,
for programs, in `pipeline.decide_program_reply`; this module only
fetches what the sample produced (the reply, the program's output, the answer file) and maps the
Verdict onto Inspect: value 1/0, `Score.unscored` for samples the dataset leaves ungradable (an
invalid row, a table missing or corrupt: excluded from metrics and reducers, reason kept), and the
Verdict in `Score.metadata`. A sandbox that failed (never the model's doing: docs/threat-model.md)
under the program scorer gets the reply graded again in a fresh session of the same kind over the
sample's staged tables, as lm-eval and validate retry (`pipeline.decide_in_fresh_sandboxes`): the
scorer needs nothing of the broken session but the reply it already holds, so one lost session
(issue 43: a bwrap session directory that vanished) costs neither the sample nor the run. When
the fresh session fails too, or the sandbox is not one of ours, the failure raises out of the
scorer, so Inspect errors the sample and `--retry-on-error` or `inspect eval-retry` run it again.

Metrics: `pass_at_1`, the report's headline pass@1 by its rule (each task's mean reward over its
attempts, averaged over the tasks; a task the data leaves ungradable left out), then accuracy
(the same number, Inspect's name for it) with stderr, and accuracy grouped by `difficulty_tier`
and by `reward_mode`. Inspect hands a metric no score for a sample that errored (it prints "N of
M executed samples had errors and were not scored"); the report counts such an attempt as 0, so
the two agree once nothing errored (`inspect eval-retry`), the only run a report takes without
--allow-partial. With `-T pass_k=k` (`pass_k_epochs`) each epoch reducer's column of scores is
titled by the scorer's name alone; `pass_at_1` is then named after the column's reducer
(`mean`, `pass_at_1`, `pass_at_k`), so the three columns say which is which.

A sample scored where it has no sandbox is being scored again from its log (`inspect score LOG`
re-creates the scorers the log records; nothing runs a sandbox for it): each scorer then
re-grades the verdict the run recorded, from its recorded answer, as `regrade_scorer` does,
instead of failing with "No sandbox environment". The scorers are registered with the package
prefix (`smoldataenvs_tasks/program_scorer`) and under the name Inspect records in the log
(`program_scorer`), so `inspect score LOG` finds them with no `--scorer`. Re-grading a finished
log under another profile (`regrade_scorer`, `smoldataenvs regrade`) lives in
`inspect_adapter/regrade.py`.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Epochs
from inspect_ai.event import ScoreEvent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    accuracy,
    grouped,
    mean_score,
    metric,
    pass_at,
    scorer,
    stderr,
    value_to_float,
)
from inspect_ai.solver import TaskState
from inspect_ai.util import SandboxEnvironment
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.data.layout import source_dataset
from smoldataenvs_tasks.inspect_adapter._compat import package_name
from smoldataenvs_tasks.inspect_adapter.program_host import InspectSandboxHost
from smoldataenvs_tasks.inspect_adapter.program_slots import program_gate
from smoldataenvs_tasks.inspect_adapter.providers import session_of
from smoldataenvs_tasks.inspect_adapter.setup import (
    STAGED_KEY,
    TABLE_CORRUPT_KEY,
    TABLE_DIGESTS_KEY,
    TABLE_ERROR_KEY,
    record_of,
)
from smoldataenvs_tasks.pipeline import (
    ProgramReply,
    decide_answer_file,
    decide_in_fresh_sandboxes,
    decide_program_reply,
    table_verdict,
    unscorable_verdict,
)
from smoldataenvs_tasks.sandboxes.base import SandboxFailure
from smoldataenvs_tasks.scorers.decide import regrade_verdict, verdict_for_answer_file
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict


@metric(name=package_name("graded"))
def graded() -> Metric:
    """How many samples were graded. Ungraded ones (an invalid row, a table that cannot be had)
    are left out of accuracy, so 'accuracy 1.000, graded 9' over 10 samples
    says one was not counted, and `inspect view` shows why in its score explanation."""

    def compute(scores: list[SampleScore]) -> float:
        return float(len(scores))

    return compute


# The metadata key under which `pass_k_epochs`' reducers name themselves on the score they reduce.
REDUCER_KEY = "smoldataenvs_reducer"
HEADLINE_METRIC = "pass_at_1"


@metric(name=package_name(HEADLINE_METRIC))
def pass_at_1() -> Metric:
    """The report's headline pass@1 (docs/reporting.md), by its rule: each task's mean reward over
    its attempts, averaged over the tasks. Inspect leaves out of every metric a sample the data
    left ungradable (unscored) and one that errored (no score); the report leaves out the first
    and counts the second as 0, so the two agree on a run where no sample errored.

    Named `pass_at_1`, or after the epoch reducer whose scores it is given when that reducer says
    (`pass_k_epochs`): under `pass_at_4` the same mean is pass@4, and must not be called pass@1."""
    to_float = value_to_float()

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        # One score per task unless the run had epochs and no reducer (Inspect reduces them
        # with `mean` by default): grouped by task either way, as the report groups attempts.
        by_task: dict[str, list[float]] = defaultdict(list)
        labels = set()
        for sample_score in scores:
            value = to_float(sample_score.score.value)
            if math.isnan(value):
                continue
            by_task[str(sample_score.sample_id)].append(value)
            labels.add((sample_score.score.metadata or {}).get(REDUCER_KEY, HEADLINE_METRIC))
        if not by_task:
            return {}
        means = [sum(values) / len(values) for values in by_task.values()]
        label = str(labels.pop()) if len(labels) == 1 else HEADLINE_METRIC
        return {label: sum(means) / len(means)}

    return compute


def _named(reducer: ScoreReducer, name: str) -> ScoreReducer:
    """`reducer`, marking each score it reduces with its name for `pass_at_1`. The wrapper keeps
    the reducer's registry name and parameters (functools.wraps copies them), so the log records
    the reducers as Inspect names them (`mean`, `pass_at_1`, `pass_at_4`) and reports read them
    as before."""

    @functools.wraps(reducer)
    def reduce(scores: list[Score]) -> Score:
        reduced = reducer(scores)
        metadata = {**(reduced.metadata or {}), REDUCER_KEY: name}
        return reduced.model_copy(update={"metadata": metadata})

    return reduce


def pass_k_epochs(k: int) -> Epochs:
    """`-T pass_k=k`: k epochs reduced to mean, pass_at_1 and pass_at_k, each column of scores
    naming its reducer in its `pass_at_1` row."""
    named = [(mean_score(), "mean"), (pass_at(1), "pass_at_1"), (pass_at(k), f"pass_at_{k}")]
    return Epochs(k, [_named(reducer, name) for reducer, name in named])


# Sample metadata key naming the task's source dataset (`<hf_bucket>/<bucket_prefix>`).
SOURCE_DATASET_KEY = "source_dataset"


def _cluster_of(sample_score: SampleScore) -> SampleScore:
    """The score with its source dataset in the sample metadata: a sample our tasks made holds
    it; one from an older log (`inspect score` re-scoring it) or a caller's own sample is given
    it from its bucket fields, else its id (a cluster of its own), since Inspect's stderr
    refuses a sample without the key."""
    metadata = sample_score.sample_metadata or {}
    if metadata.get(SOURCE_DATASET_KEY) is not None:
        return sample_score
    cluster = source_dataset(metadata.get("hf_bucket"), metadata.get("bucket_prefix"))
    return sample_score.model_copy(
        update={
            "sample_metadata": {
                **metadata,
                SOURCE_DATASET_KEY: cluster or f"sample:{sample_score.sample_id}",
            }
        }
    )


@metric(name=package_name("stderr_clustered"))
def stderr_clustered() -> Metric:
    """Inspect's clustered standard error of accuracy, clustered by source dataset: about 11
    tasks share each Kaggle dataset and are not independent (results' pass@1_clustered
    resamples the same clusters)."""
    # Inspect types a Metric as taking Scores or SampleScores; stderr's takes SampleScores.
    clustered: Callable[[list[SampleScore]], Any] = stderr(cluster=SOURCE_DATASET_KEY)  # type: ignore[assignment]

    def compute(scores: list[SampleScore]) -> float:
        return float(clustered([_cluster_of(score) for score in scores]))

    return compute


SCORER_METRICS = [
    pass_at_1(),
    accuracy(),
    stderr(),
    stderr_clustered(),
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


def _sample_sandbox() -> SandboxEnvironment | None:
    """The sample's sandbox; None when it has none, i.e. Inspect is scoring a finished log."""
    try:
        return current_sandbox()
    except ProcessLookupError:  # Inspect's way of saying the sample has no sandbox
        return None


def recorded_verdict(scores: dict[str, Score] | None) -> tuple[Verdict, Score] | None:
    """The first SmolDataEnvs verdict among a sample's scores (the one its run decided)."""
    for score in (scores or {}).values():
        if score.metadata and "category" in score.metadata:
            return Verdict.from_dict(score.metadata), score
    return None


def _scored_verdict() -> tuple[Verdict, Score] | None:
    """The first SmolDataEnvs verdict the sample's transcript recorded being scored.

    `inspect score --action overwrite` hands the scorers a state without the sample's scores;
    the transcript it loads from the log still holds the run's score events."""
    return recorded_verdict(
        {
            str(i): event.score
            for i, event in enumerate(transcript().events)
            if isinstance(event, ScoreEvent) and _is_score(event)
        }
    )


def _is_score(event: object) -> bool:
    return isinstance(event, ScoreEvent) and not event.intermediate


async def regrade_recorded(state: TaskState, grader: str) -> Score:
    """The sample's recorded verdict re-graded under `grader` from its recorded answer: no model,
    program or sandbox runs. A sample without one (it errored, or its run did not score it)
    stays without a verdict: unscored, so the report reads why from the sample's error
    (docs/reporting.md)."""
    found = recorded_verdict(state.scores) or _scored_verdict()
    if found is None:
        return Score.unscored(
            reason="no recorded verdict",
            explanation=(
                "the sample has no recorded verdict (it errored, or its run did not score it, "
                "and a program runs only in the eval's sandbox): nothing to re-grade"
            ),
        )
    recorded, recorded_score = found
    record = record_of(state)
    verdict = await anyio.to_thread.run_sync(
        partial(
            regrade_verdict,
            recorded,
            gold=record.answer,
            reward_mode=record.reward_mode,
            atol=record.atol,
            rtol=record.rtol,
            profile=grader,
        )
    )
    digests = (recorded_score.metadata or {}).get("table_sha256")
    return verdict_to_score(verdict, {"table_sha256": digests} if digests else None)


@scorer(metrics=SCORER_METRICS, name=package_name("program_scorer"))
def program_scorer(
    program_timeout: float = DEFAULT_LIMITS.program_timeout_s,
    max_programs: int | None = None,
    grader: str = DEFAULT_PROFILE,
    limits: SandboxLimits | str | None = None,
) -> Scorer:
    """Run the reply's program in the sample's sandbox and grade its last printed line.

    Args:
        program_timeout: Seconds the program may run (the sandbox contract's other limits hold).
        max_programs: Programs running at once in this process when the sandboxes share this
            machine (default: one per CPU, or $SMOLDATAENVS_MAX_PROGRAMS). More samples than
            that may be in flight: the others wait for a slot before their time limit starts.
        grader: The grader profile, "default" (the published grader) or "strict".
        limits: All of the sandbox contract's limits at once, instead of `program_timeout`.
    """
    # The task passes plain numbers: the log records a scorer's arguments and `inspect score`
    # re-creates the scorer from them, but it records an object as its type's name. Older logs
    # hold limits="SandboxLimits": no values, and a re-scored log runs no program anyway.
    if not isinstance(limits, SandboxLimits):
        limits = DEFAULT_LIMITS.with_program_timeout(program_timeout)

    async def score(state: TaskState, target: Target) -> Score:
        environment = _sample_sandbox()
        if environment is None:
            return await regrade_recorded(state, grader)
        verdict = _table_verdict(state, grader)
        if verdict is None:
            reply = ProgramReply(record_of(state), state.output.completion if state.output else "")
            try:
                verdict = await decide_program_reply(
                    reply.completion,
                    reply.record,
                    InspectSandboxHost(environment),
                    limits=limits,
                    gate=program_gate(max_programs),
                    profile=grader,
                )
            except SandboxFailure as failure:
                verdict = await _in_a_fresh_sandbox(state, environment, reply, failure)
        return verdict_to_score(verdict, _extras(state))

    async def _in_a_fresh_sandbox(
        state: TaskState, environment: SandboxEnvironment, reply: ProgramReply, failure: Exception
    ) -> Verdict:
        """The reply graded once more in a new session of the sample's kind over its staged
        tables; `failure` raised again where there is none to open (a sandbox not ours, or
        tables staged inside it)."""
        session = session_of(environment)
        stage_dir = state.metadata.get("stage_dir")
        if session is None or not stage_dir or not state.metadata.get(STAGED_KEY):
            raise failure
        transcript().info(
            f"the sample's sandbox failed ({failure}); its reply is graded in a fresh one"
        )
        return await decide_in_fresh_sandboxes(
            reply,
            Path(stage_dir),
            sandbox=session.kind,
            limits=limits,
            profile=grader,
            attempts=1,
        )

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


@scorer(metrics=SCORER_METRICS, name=package_name("answer_file_scorer"))
def answer_file_scorer(grader: str = DEFAULT_PROFILE) -> Scorer:
    """Grade the whole stripped answer file the agent wrote (agentic, answer-file protocol)."""

    async def score(state: TaskState, target: Target) -> Score:
        environment = _sample_sandbox()
        if environment is None:
            return await regrade_recorded(state, grader)
        verdict = _table_verdict(state, grader)
        if verdict is None:
            host = InspectSandboxHost(environment)
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


@scorer(metrics=SCORER_METRICS, name=package_name("submit_scorer"))
def submit_scorer(grader: str = DEFAULT_PROFILE) -> Scorer:
    """Grade the value the agent passed to `submit()` (agentic, submit protocol)."""

    async def score(state: TaskState, target: Target) -> Score:
        # Needs no sandbox, but a finished log's sample re-grades what its run decided, as the
        # other scorers do: a sample ungraded at setup (its table missing) stays ungraded.
        if _sample_sandbox() is None:
            return await regrade_recorded(state, grader)
        verdict = _table_verdict(state, grader) or await _grade_agent_answer(
            state, submitted_answer(state), grader
        )
        return verdict_to_score(verdict, _extras(state))

    return score
