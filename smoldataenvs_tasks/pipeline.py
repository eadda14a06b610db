"""reply -> run -> Verdict: the one module that joins data, sandboxes and scorers.

`prepare_tables` is the one staging path: the row checked, the tables fetched, staged and checked
against their recorded sha256, and the sha256 of what was staged (`table_sha256`), used by
Inspect's setup step and by `grade_program_reply`. `decide_program_reply` is the single
sequence — extract the program, apply the shell/empty rules, run it with the shared runner in a
sandbox, classify the run, grade the last printed line — used by the Inspect scorer (through
Inspect's sandbox) and by everything that runs without Inspect (lm-eval, `smoldataenvs
validate`, benchmarks) through `grade_program_replies`, which stages a task's tables, opens one
fresh sandbox per reply and runs many replies concurrently.

    python -c "from smoldataenvs_tasks.data.kinds import load_tasks; \
from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies; \
t = load_tasks('sample')[0]; \
print(grade_program_replies([ProgramReply(t, 'print(1)')])[0].category)"
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smoldataenvs_tasks.contract import (
    ANSWER_FILE,
    DEFAULT_LIMITS,
    PROGRAM_PATH,
    ExecResult,
    SandboxLimits,
)
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.sandboxes.answer_file import AnswerState, read_answer_file
from smoldataenvs_tasks.sandboxes.base import ProgramHost, SandboxFailure
from smoldataenvs_tasks.sandboxes.runner import program_timeout, run_program
from smoldataenvs_tasks.scorers.answers import extract_program, without_lone_surrogates
from smoldataenvs_tasks.scorers.decide import (
    answer_too_large_verdict,
    no_answer_verdict,
    verdict_before_running,
    verdict_for_answer_file,
    verdict_for_program_outcome,
    with_truncation,
)
from smoldataenvs_tasks.scorers.outcome import program_outcome
from smoldataenvs_tasks.scorers.verdict import (
    DEFAULT_PROFILE,
    ProgramOutcome,
    UngradedReason,
    Verdict,
)
from smoldataenvs_tasks.variants import AGENT_TOOLS, BASH

if TYPE_CHECKING:
    from smoldataenvs_tasks.sandboxes.opening import SessionSource


@dataclass(frozen=True)
class PreparedTables:
    """A task's tables as staged for its sandbox, or why no reply to it can be graded."""

    # name -> sha256 of each table as staged (the bytes the sandbox reads); empty when not staged
    table_sha256: dict[str, str] = field(default_factory=dict)
    # invalid_row, table_unavailable or table_corrupt; None when the tables are staged
    problem: UngradedReason | None = None
    reason: str = ""

    def verdict(self, profile: str = DEFAULT_PROFILE) -> Verdict | None:
        """The ungraded verdict every reply to the task gets, or None when it can be graded."""
        if self.problem is None:
            return None
        return Verdict.ungraded(self.problem, self.reason, profile)


def prepare_tables(
    record: TaskRecord, stage_dir: Path, *, mirror: str | None, revision: str | None
) -> PreparedTables:
    """Stage `record`'s tables into `stage_dir`: the row checked, the tables fetched where they
    are not cached, each linked in and checked against its recorded sha256 (idempotent, so the
    epochs of one sample may share a stage dir). Blocking: call it from a worker thread."""
    from smoldataenvs_tasks.data.integrity import TableCorruptError
    from smoldataenvs_tasks.data.kinds import resolve_tables
    from smoldataenvs_tasks.data.staging import stage_tables, staged_sha256

    if record.invalid_row is not None:
        return PreparedTables(problem=UngradedReason.INVALID_ROW, reason=record.invalid_row)
    table_set = resolve_tables(record, mirror=mirror, revision=revision)
    if not table_set.available:
        corrupt = UngradedReason.TABLE_CORRUPT if table_set.corrupt else None
        return PreparedTables(
            problem=corrupt or UngradedReason.TABLE_UNAVAILABLE, reason=str(table_set.error)
        )
    try:
        stage_tables(table_set, stage_dir)
        # Free: staging hashed the same inodes. The staged bytes, not the manifest's, are the
        # evidence a verifier compares.
        digests = staged_sha256(table_set, stage_dir)
    except TableCorruptError as exc:
        return PreparedTables(problem=UngradedReason.TABLE_CORRUPT, reason=str(exc))
    return PreparedTables(table_sha256=digests)


async def run_program_outcome(
    host: ProgramHost,
    code: str,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
    program_path: str = PROGRAM_PATH,
    cwd: str | None = None,
) -> ProgramOutcome:
    """Run `code` once in `host` (the shared runner) and classify the run (the one classifier)."""
    result = await run_program(
        host, code, limits=limits, timeout=timeout, program_path=program_path, cwd=cwd
    )
    return program_outcome(result, program_timeout(limits, timeout), program_path)


async def decide_program_reply(
    completion: str,
    record: TaskRecord,
    host: ProgramHost,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    gate: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """The Verdict for one single-shot reply, its program run on `host` (a ready sandbox),
    under the grader `profile`.

    `gate`, when given, is entered around the run only (e.g. a limit on programs running at
    once): the program's time limit starts once it holds the gate.

    Raises SandboxFailure when the sandbox failed: the runner settles that before the program
    starts (and SandboxLost means the sandbox went away), so it is never the program's doing and
    never its 0. The caller grades the reply again in a fresh sandbox
    (`decide_in_fresh_sandboxes`: `grade_program_reply` and the Inspect program scorer), and
    Inspect errors the sample when that fails too, for `--retry-on-error` and `eval-retry`.
    """
    extracted = extract_program(completion)
    verdict = verdict_before_running(extracted, profile=profile)
    if verdict is not None:
        return verdict
    async with gate() if gate is not None else contextlib.nullcontext():
        outcome = await run_program_outcome(host, extracted.code or "", limits=limits)
    # The symbolic rung may wait seconds on a worker: keep the event loop free meanwhile.
    verdict = await asyncio.to_thread(
        verdict_for_program_outcome,
        outcome,
        gold=record.answer,
        reward_mode=record.reward_mode,
        atol=record.atol,
        rtol=record.rtol,
        profile=profile,
    )
    return with_truncation(verdict, extracted)


async def decide_answer_file(
    record: TaskRecord,
    host: ProgramHost,
    *,
    path: str = ANSWER_FILE,
    profile: str = DEFAULT_PROFILE,
) -> Verdict:
    """The agentic (answer-file) Verdict: the file read inside the sample's sandbox, as its user
    (`sandboxes.answer_file`), then its whole stripped text graded. The agent's commands ran in
    that sandbox first, so a reader that cannot run to the end there is the agent's own 0
    (`program_broke_sandbox`); only a sandbox that went away (SandboxLost) raises."""
    found = await read_answer_file(host, path)
    if found.state is AnswerState.BROKEN:
        return Verdict.broke_sandbox(found.problem or "", profile)
    if found.state is AnswerState.TOO_LARGE:
        return answer_too_large_verdict(found.problem or "", profile)
    if found.state is not AnswerState.READ:
        return no_answer_verdict(found.problem or "", profile)
    # The symbolic rung may wait seconds on a worker: keep the event loop free meanwhile.
    return await asyncio.to_thread(
        verdict_for_answer_file,
        found.text,
        gold=record.answer,
        reward_mode=record.reward_mode,
        atol=record.atol,
        rtol=record.rtol,
        profile=profile,
    )


def unscorable_verdict(record: TaskRecord, profile: str = DEFAULT_PROFILE) -> Verdict | None:
    """The verdict of a task no reply can change: ungraded `invalid_row` for an unusable row."""
    if record.invalid_row is not None:
        return Verdict.ungraded(UngradedReason.INVALID_ROW, record.invalid_row, profile)
    return None


def table_verdict(
    error: str | None, *, corrupt: bool = False, profile: str = DEFAULT_PROFILE
) -> Verdict | None:
    """Ungraded when the task's tables cannot be had (`table_unavailable`) or are not the
    recorded bytes (`table_corrupt`); None when there is no table error."""
    if error is None:
        return None
    reason = UngradedReason.TABLE_CORRUPT if corrupt else UngradedReason.TABLE_UNAVAILABLE
    return Verdict.ungraded(reason, str(error), profile)


@dataclass(frozen=True)
class ProgramReply:
    record: TaskRecord
    completion: str


# Overrides how many programs run at once on this machine (default: one per usable CPU).
MAX_PROGRAMS_ENV = "SMOLDATAENVS_MAX_PROGRAMS"
# Sandboxes a reply gets when its sandbox fails (without Inspect's retries: lm-eval, validate).
SANDBOX_ATTEMPTS = 2


def default_concurrency() -> int:
    """Programs to run at once here: $SMOLDATAENVS_MAX_PROGRAMS, else one per CPU we may use.

    More would not finish sooner on the same cores; they would only stretch each program's wall
    time towards its time limit (a verdict change) and add up their memory.
    """
    configured = os.environ.get(MAX_PROGRAMS_ENV, "").strip()
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            raise ValueError(
                f"{MAX_PROGRAMS_ENV} must be a whole number, not {configured!r}"
            ) from None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus)


@dataclass(frozen=True)
class GradedReply:
    """A reply's verdict and the sha256 of the tables it was graded against (`table_sha256`:
    None when they were not staged)."""

    verdict: Verdict
    table_sha256: dict[str, str] | None = None


async def grade_program_reply(
    reply: ProgramReply,
    *,
    sandbox: str = "auto",
    mirror: str | None = None,
    revision: str | None = None,
    limits: SandboxLimits = DEFAULT_LIMITS,
    profile: str = DEFAULT_PROFILE,
    sessions: SessionSource | None = None,
) -> GradedReply:
    """Stage the task's tables, open a sandbox (from `sessions` when given: a batch's, whose
    Docker containers are reused after a reset), run the reply's program, end the sandbox."""
    from smoldataenvs_tasks.data.staging import new_stage_dir, remove_stage_dir

    stage_dir = await asyncio.to_thread(new_stage_dir)
    try:
        # The row and its tables first, as Inspect's setup step does: a task nobody can grade
        # is ungraded whatever the reply, so both frameworks give it the same verdict.
        prepared = await asyncio.to_thread(
            prepare_tables, reply.record, stage_dir, mirror=mirror, revision=revision
        )
        early = prepared.verdict(profile)
        if early is not None:
            return GradedReply(early)
        digests = prepared.table_sha256
        # Replies that never reach a sandbox are decided without starting one.
        early = verdict_before_running(extract_program(reply.completion), profile=profile)
        if early is not None:
            return GradedReply(early, digests)
        # A sandbox that failed is never the program's doing (decide_program_reply): the reply
        # gets a fresh one, and is ungraded only when that fails too (the run is then not
        # complete, and its report says to re-run it).
        try:
            verdict = await decide_in_fresh_sandboxes(
                reply, stage_dir, sandbox=sandbox, limits=limits, profile=profile,
                sessions=sessions,
            )  # fmt: skip
        except SandboxFailure as failure:
            return GradedReply(
                Verdict.ungraded(UngradedReason.SANDBOX_FAILED, str(failure), profile), digests
            )
        return GradedReply(verdict, digests)
    finally:
        await asyncio.to_thread(remove_stage_dir, stage_dir)


async def decide_in_fresh_sandboxes(
    reply: ProgramReply,
    stage_dir: Path,
    *,
    sandbox: str,
    limits: SandboxLimits,
    profile: str,
    sessions: SessionSource | None = None,
    attempts: int = SANDBOX_ATTEMPTS,
) -> Verdict:
    """The reply's verdict in a new session over `stage_dir` (its tables staged), a new one
    again each time the sandbox fails, up to `attempts` sessions; the last SandboxFailure when
    every one failed. The one retry of a broken sandbox: lm-eval's and validate's
    (`grade_program_reply`), and the Inspect program scorer's after the sample's own sandbox
    failed (inspect_adapter/scoring.py)."""
    failure: SandboxFailure | None = None
    for _ in range(attempts):
        try:
            return await _decide_in_new_session(
                reply, stage_dir, sandbox=sandbox, limits=limits, profile=profile,
                sessions=sessions,
            )  # fmt: skip
        except SandboxFailure as exc:
            failure = exc
    assert failure is not None, "attempts must be at least 1"
    raise failure


async def _decide_in_new_session(
    reply: ProgramReply,
    stage_dir: Path,
    *,
    sandbox: str,
    limits: SandboxLimits,
    profile: str,
    sessions: SessionSource | None,
) -> Verdict:
    from smoldataenvs_tasks.sandboxes.opening import open_session

    if sessions is not None:
        session = await sessions.open(stage_dir)
    else:
        session = await open_session(sandbox, stage_dir, limits=limits)
    try:
        return await decide_program_reply(
            reply.completion, reply.record, session, limits=limits, profile=profile
        )
    finally:
        if sessions is not None:
            sessions.end(session)
        else:
            await session.close()


async def grade_program_replies_async(
    replies: Sequence[ProgramReply],
    *,
    sandbox: str = "auto",
    mirror: str | None = None,
    revision: str | None = None,
    limits: SandboxLimits = DEFAULT_LIMITS,
    concurrency: int | None = None,
    profile: str = DEFAULT_PROFILE,
) -> list[GradedReply]:
    from smoldataenvs_tasks.sandboxes.opening import SessionSource
    from smoldataenvs_tasks.sandboxes.progress import Progress

    at_once = concurrency or default_concurrency()
    gate = asyncio.Semaphore(at_once)

    async def one(reply: ProgramReply, sessions: SessionSource, progress: Progress) -> GradedReply:
        async with gate:
            try:
                return await grade_program_reply(
                    reply,
                    sandbox=sandbox,
                    mirror=mirror,
                    revision=revision,
                    limits=limits,
                    profile=profile,
                    sessions=sessions,
                )
            finally:
                progress.advance()

    # A batch runs for tens of seconds with nothing else to show (lm-eval prints nothing while
    # its filter runs): a progress line on stderr.
    what = f"running {len(replies)} programs ({sandbox} sandbox, {at_once} at a time)"
    with Progress(what, total=len(replies)) as progress:
        async with SessionSource(sandbox, limits=limits) as sessions:
            return list(
                await asyncio.gather(*(one(reply, sessions, progress) for reply in replies))
            )


def grade_program_replies_with_tables(
    replies: Sequence[ProgramReply], **options: Any
) -> list[GradedReply]:
    """Each reply's verdict with the sha256 of the tables staged for it (lm-eval records both),
    for callers without an event loop."""
    return asyncio.run(grade_program_replies_async(replies, **options))


def grade_program_replies(replies: Sequence[ProgramReply], **options: Any) -> list[Verdict]:
    """Synchronous entry for callers without an event loop (lm-eval filters, the CLI)."""
    return [graded.verdict for graded in grade_program_replies_with_tables(replies, **options)]


@dataclass(frozen=True)
class ToolCall:
    """One recorded call of an agent tool (`variants.AGENT_TOOLS`): `bash` runs `text` as
    `bash -c`, `python` feeds it to `python3 -`; each a fresh process in /workdir."""

    tool: str
    text: str


# A refused call's status: the shell's own for a command it cannot execute.
REFUSED_STATUS = 126


@dataclass(frozen=True)
class ToolCommand:
    """How one tool call reaches the sandbox: `argv` with `input` on stdin, or, when its text
    cannot be sent at all, `refused`: the call's result, never run."""

    argv: list[str]
    input: str | None = None
    refused: ExecResult | None = None


def tool_command(tool: str, text: str) -> ToolCommand:
    """The one way a `bash` or `python` tool call's text is sent to a sandbox, for the agentic
    task and its re-execution alike. A lone surrogate reads as U+FFFD (no UTF-8 pipe or
    argv can carry it); a NUL, which no command line can carry and Python source may not hold,
    refuses the call with a message the model sees as its output. Either way the sandbox kind
    never decides: every kind used to raise on its own encoder and error the sample (issue 44)."""
    text = without_lone_surrogates(text)
    # The tool's one declaration (variants.py); a name it does not declare runs as `bash`.
    spec = AGENT_TOOLS.get(tool, BASH)
    argv = spec.command_argv(text)
    if "\x00" in text:
        return ToolCommand(argv, refused=ExecResult(REFUSED_STATUS, "", spec.nul_refusal()))
    return ToolCommand(argv, input=text if spec.stdin else None)


@dataclass(frozen=True)
class ReplayedSession:
    """What replaying an agent's tool calls in a fresh session gave: the answer file's verdict
    and each call's result (none when the task's tables could not be staged)."""

    verdict: Verdict
    results: list[ExecResult] = field(default_factory=list)


async def replay_tool_calls(
    record: TaskRecord,
    calls: Sequence[ToolCall],
    *,
    sandbox: str = "auto",
    mirror: str | None = None,
    revision: str | None = None,
    limits: SandboxLimits = DEFAULT_LIMITS,
    profile: str = DEFAULT_PROFILE,
) -> ReplayedSession:
    """Run an agentic sample's recorded tool calls, in order, in a fresh session staged as the
    task stages one (`prepare_tables`, then a session whose input dir links the tables), and
    grade /workdir/answer.txt with the scorer's reader (`decide_answer_file`): what
    `smoldataenvs verify --reexecute` compares with the recorded verdict."""
    from smoldataenvs_tasks.contract import WORKDIR
    from smoldataenvs_tasks.data.staging import new_stage_dir, remove_stage_dir
    from smoldataenvs_tasks.sandboxes.opening import open_session

    stage_dir = await asyncio.to_thread(new_stage_dir)
    try:
        prepared = await asyncio.to_thread(
            prepare_tables, record, stage_dir, mirror=mirror, revision=revision
        )
        early = prepared.verdict(profile)
        if early is not None:
            return ReplayedSession(early)
        session = await open_session(sandbox, stage_dir, limits=limits)
        try:
            results = []
            for call in calls:
                command = tool_command(call.tool, call.text)
                if command.refused is not None:
                    results.append(command.refused)
                    continue
                results.append(
                    await session.exec(
                        command.argv,
                        input=command.input,
                        cwd=WORKDIR,
                        timeout=limits.tool_timeout_s,
                    )
                )
            verdict = await decide_answer_file(record, session, profile=profile)
            return ReplayedSession(verdict, results)
        finally:
            await session.close()
    finally:
        await asyncio.to_thread(remove_stage_dir, stage_dir)
