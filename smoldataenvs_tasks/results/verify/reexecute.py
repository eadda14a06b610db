"""`smoldataenvs verify --reexecute`: every recorded answer produced again, not only re-graded.

`regrade` trusts the answer a log records. Here the answer is made again from what the model
wrote (its own messages, never a field derived from them: results/verify/transcript.py), on the
verifier's machine, in the sandbox kind the verifier picks, with the verifier's tables (staged
by `pipeline`, the one staging path), the verifier's gold, and the run's time limits capped by
the verifier's own (`VERIFIER_LIMITS`: a log's 1e6 s must not hold the verifier):

- the program task (Inspect `smoldataenvs_program`, lm-eval `smoldataenvs_program*`): each
  attempt's reply goes through `pipeline.grade_program_replies_with_tables`, the runner every
  framework uses (extract the program, run it, classify, grade);
- the agentic task (Inspect `smoldataenvs`, answer-file protocol): each attempt's `bash`/
  `python` tool calls, as its assistant messages hold them, run in order in a fresh session
  (`pipeline.replay_tool_calls`), each fresh output compared with the one the model was shown,
  then /workdir/answer.txt is graded with the scorer's reader.

Each graded attempt ends as one of (`Reexecuted.status`):

- `exact`: the same reward and the same answer (and, agentic, every tool output the same);
- `inexact`: the same reward, another answer or another tool output on the way (named, with
  the reason: e.g. the program reads the clock);
- `nondeterministic`: the fresh reward differed, and a second fresh run gave the recorded one
  (the program's result varies from run to run: counted and named);
- `not replayable`: the fresh reward differs and cannot be pinned on the record: two fresh runs
  (or replays) disagree with each other and with the record, or a fresh timeout came from the
  verifier's limit being shorter than the run's;
- `differs`: the fresh reward differs, and two fresh runs (or replays) agree on their answer, or
  the one replay reproduced every tool output: the log records a verdict its own program or
  commands do not produce. A replay that parted from the transcript (an edited tool output, an
  `ls -l` whose times never replay) does not excuse the answer: two replays that agree on it
  hold the record to it (issue 44). The check fails, and lists both answers.

The check `reexecute` is `fail` on any `differs` and when what the logs hold cannot be
re-executed at all (that submission fails, the others of a leaderboard are still verified),
`note` on any `not replayable` (the entry is verified, not re-executed, and a leaderboard
with `--reexecute` does not rank it), `ok` otherwise, with the counts of every status and the
seconds per attempt. The submit protocol's answer is the text of the model's own submit call,
which `regrade` already re-grades: its runs are `skip`.

One module (over 500 lines): the statuses are decided beside both re-runs, the program's and
the agent's, so the two cannot come to mean different things.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.pipeline import ToolCall
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import framework_of, variant_of
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.verify.checks import FAIL, NOTE, OK, SKIP, Check
from smoldataenvs_tasks.results.verify.transcript import Recorded, recorded_attempts
from smoldataenvs_tasks.results.verify.verifier_data import VerifierData
from smoldataenvs_tasks.sandboxes.tool_output import combined_output, shown_to_model
from smoldataenvs_tasks.scorers.verdict import Category, UngradedReason, Verdict
from smoldataenvs_tasks.variants import ANSWER_FILE_PROTOCOL, PROGRAM

EXACT, INEXACT, NONDETERMINISTIC, NOT_REPLAYABLE, DIFFERS = (
    "exact",
    "inexact",
    "nondeterministic",
    "not replayable",
    "differs",
)
STATUSES = (EXACT, INEXACT, NONDETERMINISTIC, NOT_REPLAYABLE, DIFFERS)
_LISTED = 6  # attempts named per status in the check's detail


class ReexecutionError(SmolDataEnvsError, RuntimeError):
    """The verifier's sandbox failed while re-executing (never the submission's doing)."""


# -- why a program or transcript may not replay exactly: cheap static hints --------------------
_SEEDED = re.compile(
    r"\.seed\(|default_rng\(\s*\d|RandomState\(\s*\d|random_state\s*=\s*\d|Random\(\s*\d"
)
_HINTS = (
    (
        re.compile(r"\btime\.(?:time|time_ns|perf_counter|monotonic|localtime|gmtime)\("),
        "the clock",
    ),
    (
        re.compile(r"\b(?:datetime|date)\.(?:now|today|utcnow)\(|\bpd\.Timestamp\.now\("),
        "today's date",
    ),
    (re.compile(r"(?:^|[\s;&|`(])date(?:\s|$|\))"), "today's date"),
    (
        re.compile(r"\buuid\d?\.|\buuid\.uuid|\bos\.urandom\(|\bsecrets\.|/dev/u?random"),
        "random bytes",
    ),
)
_RANDOM = re.compile(
    r"\brandom\.|\bnp\.random\.|\bnumpy\.random\.|\.sample\(|\bshuffle\(|\$RANDOM|\bshuf\b"
)


def replay_hints(text: str) -> list[str]:
    """What in a program or a command may make its output vary from run to run."""
    found = [words for pattern, words in _HINTS if pattern.search(text)]
    if _RANDOM.search(text) and not _SEEDED.search(text):
        found.append("randomness without a seed")
    return list(dict.fromkeys(found))


# -- re-execution ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reexecuted:
    run: str
    task_id: str
    epoch: int
    recorded: Verdict
    fresh: Verdict
    status: str
    why: str = ""  # what made it inexact, nondeterministic or not replayable


@dataclass
class Reexecution:
    attempts: list[Reexecuted]
    seconds: float
    skipped: list[str]  # runs not re-executed, with the reason

    @property
    def counts(self) -> Counter[str]:
        return Counter(item.status for item in self.attempts)


def _answer(verdict: Verdict) -> str:
    prediction = verdict.prediction
    if prediction is None:
        return f"no answer ({verdict.category.value})"
    shown = prediction if len(prediction) <= 40 else prediction[:37] + "..."
    return f"{shown!r} ({verdict.category.value})"


# The verifier's own bound on a program or a tool call: the contract's. A log states the limits
# its run used, and a log is the submitter's: 1e6 seconds there must not hold the verifier's
# machine for days (issue 44). A run that allowed more is re-executed within these, and an
# attempt that then times out is not replayable here, never `differs`.
VERIFIER_LIMITS = DEFAULT_LIMITS


def _capped(value: Any, cap: float) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return cap
    return seconds if math.isfinite(seconds) and 0 < seconds <= cap else cap


def _limits(run: Run) -> SandboxLimits:
    """The run's own time limits (its protocol), each capped by the verifier's."""
    settings = run.settings
    program = settings.get("program_timeout_s")
    tool = settings.get("tool_timeout_s")
    return replace(
        VERIFIER_LIMITS,
        program_timeout_s=_capped(
            VERIFIER_LIMITS.program_timeout_s if program is None else program,
            VERIFIER_LIMITS.program_timeout_s,
        ),
        tool_timeout_s=_capped(
            VERIFIER_LIMITS.tool_timeout_s if tool is None else tool,
            VERIFIER_LIMITS.tool_timeout_s,
        ),
    )


def _cut_short(run: Run, limits: SandboxLimits, fresh: Verdict) -> str | None:
    """Why a fresh timeout says nothing of the record: the run allowed longer than the
    verifier does (`_limits`); None when the limits were the run's own."""
    if fresh.category is not Category.TIMEOUT:
        return None
    for name, used in (
        ("program_timeout_s", limits.program_timeout_s),
        ("tool_timeout_s", limits.tool_timeout_s),
    ):
        stated = run.settings.get(name)
        if stated is not None and _capped(stated, math.inf) > used:
            return f"the run allowed {name} {stated}, the verifier {used:g}"
    return None


def _to_grade(
    run: Run, data: VerifierData, recorded: dict[tuple[str, int], Recorded]
) -> list[tuple[str, int, Verdict, Recorded]]:
    """The run's graded attempts with what the model wrote (an ungraded one has no answer to
    produce again: the data, the harness or the model's API decided it)."""
    items = []
    for task_id in sorted(run.tasks):
        if task_id not in data.records:
            continue  # the `data` check fails it
        for attempt in run.tasks[task_id].attempts:
            if not attempt.verdict.graded:
                continue
            found = recorded.get((task_id, attempt.epoch))
            if found is None:
                raise RunLoadError(
                    f"{run.source}: task {task_id} epoch {attempt.epoch} has a verdict but no "
                    "recorded reply to re-execute"
                )
            items.append((task_id, attempt.epoch, attempt.verdict, found))
    return items


def _joined(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _same(a: Verdict, b: Verdict) -> bool:
    return a.reward == b.reward


def _sandbox_failed(verdict: Verdict) -> bool:
    return not verdict.graded and verdict.detail == UngradedReason.SANDBOX_FAILED.value


def _program_runs(
    run: Run,
    items: Sequence[tuple[str, int, Verdict, Recorded]],
    data: VerifierData,
    *,
    sandbox: str,
    mirror: str | None,
) -> list[Reexecuted]:
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies_with_tables

    profile = items[0][2].profile
    limits = _limits(run)
    options: dict[str, Any] = {
        "sandbox": sandbox,
        "mirror": mirror,
        "revision": data.revision,
        "limits": limits,
        "profile": profile,
    }

    def grade(batch: Sequence[tuple[str, int, Verdict, Recorded]]) -> list[Verdict]:
        replies = [ProgramReply(data.records[t], rec.reply or "") for t, _, _, rec in batch]
        verdicts = [g.verdict for g in grade_program_replies_with_tables(replies, **options)]
        for (task_id, _, _, _), verdict in zip(batch, verdicts, strict=True):
            if _sandbox_failed(verdict):
                raise ReexecutionError(
                    f"task {task_id}: the verifier's {sandbox} sandbox failed twice while "
                    f"re-executing ({verdict.reason[:200]}); fix it and verify again"
                )
        return verdicts

    first = grade(items)
    again_for = [
        i
        for i, (item, fresh) in enumerate(zip(items, first, strict=True))
        if not _same(fresh, item[2])
    ]
    # A program whose fresh reward differs runs once more: two fresh runs that disagree show a
    # result that varies from run to run, which no record could be held to.
    second = (
        dict(zip(again_for, grade([items[i] for i in again_for]), strict=True)) if again_for else {}
    )
    out = []
    for index, ((task_id, epoch, recorded, rec), fresh) in enumerate(
        zip(items, first, strict=True)
    ):
        hints = replay_hints(rec.reply or "")
        why = ("it uses " + ", ".join(hints)) if hints else ""
        if index not in second:
            exact = fresh.prediction == recorded.prediction
            status = EXACT if exact else INEXACT
            if not exact and not why:
                why = "the program printed another answer with the same reward"
        else:
            other = second[index]
            if _same(other, recorded):
                status, fresh = NONDETERMINISTIC, other
                why = why or "a second run reproduced the recorded reward, the first did not"
            elif other.prediction != fresh.prediction or other.category != fresh.category:
                status = NOT_REPLAYABLE
                why = (why + "; " if why else "") + (
                    f"two fresh runs disagree ({_answer(fresh)}, {_answer(other)})"
                )
            elif (short := _cut_short(run, limits, fresh)) is not None:
                status, why = NOT_REPLAYABLE, _joined(why, short)
            else:
                status = DIFFERS
        out.append(Reexecuted(run.source, task_id, epoch, recorded, fresh, status, why))
    return out


def _shown(call: ToolCall, result: Any) -> tuple[str | None, str | None]:
    """(what Inspect's tool would have shown the model, its error type) for a fresh result."""
    if result.timed_out:
        return None, "timeout"
    if result.limit == "output":
        return None, "output_limit"
    return combined_output(result.stdout, result.stderr), None


def _divergence(rec: Recorded, results: Sequence[Any]) -> str | None:
    """The first tool call whose fresh output is not the recorded one, in words."""
    for number, (recorded, result) in enumerate(zip(rec.calls, results, strict=False), start=1):
        fresh, error = _shown(recorded.call, result)
        if recorded.error is not None or error is not None:
            if recorded.error != error:
                return (
                    f"call {number} ({_head(recorded.call.text)}): recorded "
                    f"{recorded.error or 'output'}, fresh {error or 'output'}"
                )
            continue
        if fresh is not None and recorded.output in (
            fresh,
            shown_to_model(recorded.call.tool, fresh),
        ):
            continue
        return f"call {number} ({_head(recorded.call.text)}) printed other output than recorded"
    return None


def _head(text: str) -> str:
    line = " ".join(text.split())
    return repr(line if len(line) <= 50 else line[:47] + "...")


async def _replay_once(
    task_id: str,
    recorded: Verdict,
    rec: Recorded,
    data: VerifierData,
    *,
    sandbox: str,
    mirror: str | None,
    limits: SandboxLimits,
) -> tuple[Verdict, list[Any]]:
    """One fresh replay of the attempt's calls (`pipeline.replay_tool_calls`, which sends each
    as the agentic task's tools do): the verdict, and each call's fresh result."""
    from smoldataenvs_tasks.pipeline import replay_tool_calls
    from smoldataenvs_tasks.sandboxes.base import SandboxFailure

    try:
        replayed = await replay_tool_calls(
            data.records[task_id],
            [c.call for c in rec.calls],
            sandbox=sandbox,
            mirror=mirror,
            revision=data.revision,
            limits=limits,
            profile=recorded.profile,
        )
    except SandboxFailure as exc:
        raise ReexecutionError(
            f"task {task_id}: the verifier's {sandbox} sandbox failed while "
            f"replaying its commands ({exc}); fix it and verify again"
        ) from None
    return replayed.verdict, list(replayed.results)


def _agent_replays(
    run: Run,
    items: Sequence[tuple[str, int, Verdict, Recorded]],
    data: VerifierData,
    *,
    sandbox: str,
    mirror: str | None,
) -> list[Reexecuted]:
    from smoldataenvs_tasks.pipeline import default_concurrency

    limits = _limits(run)

    def replay_all(
        batch: Sequence[tuple[str, int, Verdict, Recorded]],
    ) -> list[tuple[Verdict, list[Any]]]:
        async def every() -> list[tuple[Verdict, list[Any]]]:
            gate = asyncio.Semaphore(default_concurrency())

            async def one(task_id: str, recorded: Verdict, rec: Recorded) -> Any:
                async with gate:
                    return await _replay_once(
                        task_id, recorded, rec, data, sandbox=sandbox, mirror=mirror, limits=limits
                    )

            return list(await asyncio.gather(*(one(t, v, r) for t, _, v, r in batch)))

        return asyncio.run(every()) if batch else []

    first = replay_all(items)
    diverged = [
        _divergence(rec, results) for (_, _, _, rec), (_, results) in zip(items, first, strict=True)
    ]
    # A replay that parted from the transcript and reached another reward is replayed once
    # more: two fresh replays that agree on their answer hold the record to it (a forged answer
    # stays forged when a tool output was edited or never replays, issue 44); two that disagree
    # show a trajectory this machine cannot pin down.
    again_for = [
        i
        for i, ((_, _, recorded, _), (fresh, _)) in enumerate(zip(items, first, strict=True))
        if not _same(fresh, recorded) and diverged[i] is not None
    ]
    second = dict(zip(again_for, replay_all([items[i] for i in again_for]), strict=True))
    out = []
    for index, ((task_id, epoch, recorded, rec), (fresh, _)) in enumerate(
        zip(items, first, strict=True)
    ):
        hints = replay_hints("\n".join(c.call.text for c in rec.calls))
        why = "; ".join(
            part
            for part in (diverged[index], ("they use " + ", ".join(hints)) if hints else "")
            if part
        )
        if _same(fresh, recorded):
            exact = fresh.prediction == recorded.prediction and diverged[index] is None
            status = EXACT if exact else INEXACT
        elif index not in second:
            status = DIFFERS
        else:
            other = second[index][0]
            if _same(other, recorded):
                status, fresh = NONDETERMINISTIC, other
                why = _joined(
                    why, "a second replay reproduced the recorded reward, the first did not"
                )
            elif other.prediction != fresh.prediction or other.category != fresh.category:
                status = NOT_REPLAYABLE
                why = _joined(
                    why, f"two fresh replays disagree ({_answer(fresh)}, {_answer(other)})"
                )
            elif (short := _cut_short(run, limits, fresh)) is not None:
                status, why = NOT_REPLAYABLE, _joined(why, short)
            else:
                status = DIFFERS
                why = _joined(why, "two fresh replays agree on their answer")
        out.append(Reexecuted(run.source, task_id, epoch, recorded, fresh, status, why))
    return out


def reexecute_runs(
    runs: Sequence[Run], data: VerifierData, *, sandbox: str = "auto", mirror: str | None = None
) -> Reexecution:
    """Every graded attempt of `runs` produced again on this machine (module docstring)."""
    attempts: list[Reexecuted] = []
    skipped: list[str] = []
    started = time.monotonic()
    for run in runs:
        framework = framework_of(run.framework)
        if framework is None or not framework.reexecutable:
            skipped.append(f"{run.source}: {run.framework} runs are not re-executed here")
            continue
        # A variant this package does not know is re-executed as the program task (its replies
        # run as programs): a name a log's metadata gives must not skip the check.
        variant = variant_of(run.variant) or PROGRAM
        if variant.agentic and run.protocol != ANSWER_FILE_PROTOCOL:
            skipped.append(
                f"{run.source}: the {run.protocol} protocol's answer is the model's own text, "
                "re-graded by `regrade`; nothing to re-execute"
            )
            continue
        items = _to_grade(run, data, recorded_attempts(run))
        if not items:
            continue
        replay = _agent_replays if variant.agentic else _program_runs
        attempts += replay(run, items, data, sandbox=sandbox, mirror=mirror)
    return Reexecution(attempts, time.monotonic() - started, skipped)


def _listing(items: Sequence[Reexecuted], *, answers: bool) -> str:
    lines = []
    for item in items[:_LISTED]:
        text = f"{item.task_id} ({item.run}, epoch {item.epoch})"
        if answers:
            text += (
                f": recorded reward {item.recorded.reward} for {_answer(item.recorded)}, "
                f"fresh {item.fresh.reward} for {_answer(item.fresh)}"
            )
        if item.why:
            text += f" [{item.why}]"
        lines.append(text)
    more = f" (and {len(items) - _LISTED} more)" if len(items) > _LISTED else ""
    return "; ".join(lines) + more


def check_reexecute(
    runs: Sequence[Run], data: VerifierData, *, sandbox: str = "auto", mirror: str | None = None
) -> Check:
    """The `reexecute` check of `verify --reexecute` (module docstring)."""
    try:
        done = reexecute_runs(runs, data, sandbox=sandbox, mirror=mirror)
    except (RunLoadError, ValueError) as exc:
        # What the logs hold cannot be re-executed (unreadable samples, a byte no sandbox
        # takes): this submission fails, the others of a leaderboard are still verified. The
        # verifier's own sandbox failing (ReexecutionError) is not the submission's doing, and
        # stops the command.
        return Check("reexecute", FAIL, f"cannot be re-executed: {exc}"[:400])
    if not done.attempts:
        reason = " | ".join(done.skipped) or "no graded attempt to re-execute"
        return Check("reexecute", SKIP, reason)
    counts = done.counts
    total = len(done.attempts)
    per = done.seconds / total
    tally = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    summary = f"{total} attempt(s) re-executed in {sandbox} sandboxes ({per:.2f} s each): {tally}"
    by_status = {s: [a for a in done.attempts if a.status == s] for s in STATUSES}
    named = [
        f"{status}: {_listing(by_status[status], answers=status != INEXACT)}"
        for status in (DIFFERS, NOT_REPLAYABLE, NONDETERMINISTIC, INEXACT)
        if by_status[status]
    ]
    skipped = [f"skipped {line}" for line in done.skipped]
    detail = " | ".join([summary, *named, *skipped])
    if by_status[DIFFERS]:
        return Check(
            "reexecute",
            FAIL,
            f"{len(by_status[DIFFERS])} recorded verdict(s) are not what their own program or "
            f"commands produce here | {detail}",
        )
    if by_status[NOT_REPLAYABLE] or done.skipped:
        return Check("reexecute", NOTE, detail)
    return Check("reexecute", OK, detail)
