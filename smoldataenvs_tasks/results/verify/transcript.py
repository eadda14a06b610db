"""What the model wrote, read from its own messages, and the log's derived fields held to them.

An Inspect sample keeps the model's words once, in its messages (the assistant's text and tool
calls, each tool's reply as the model was shown it), and again in fields derived from them:
`output.completion` (the last reply's text) and each tool call's `ToolEvent` (its arguments and
result). A submitter who edits only the derived copies must not be believed (issue 44): every
re-execution runs the messages (`recorded_attempts`), and `verify --logs` fails, in its
`transcript` check, on any derived field that is not what the messages hold
(`check_transcript`). lm-eval keeps the replies once (`resps`); nothing there is derived.

    from smoldataenvs_tasks.results.verify.transcript import recorded_attempts
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smoldataenvs_tasks.pipeline import ToolCall
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.verify.checks import FAIL, OK, SKIP, Check
from smoldataenvs_tasks.run_plan import INSPECT, LM_EVAL
from smoldataenvs_tasks.variants import AGENT_TOOLS

# The agent tools whose calls a replay runs, and the argument each takes its text in: read from
# their one declaration, so a replay reads a call as the task received it.
TOOL_ARGUMENT = {spec.name: spec.parameter for spec in AGENT_TOOLS.values()}
_LISTED = 6  # mismatches named in the check's detail


@dataclass(frozen=True)
class RecordedCall:
    call: ToolCall
    output: str | None  # what the model was shown; None when the call errored
    error: str | None  # the error's type (timeout, output_limit, parsing, ...) when it errored


@dataclass(frozen=True)
class Recorded:
    """One attempt as the model wrote it: the program task's reply, the agent's tool calls."""

    reply: str | None
    calls: tuple[RecordedCall, ...] = ()


def recorded_attempts(run: Run) -> dict[tuple[str, int], Recorded]:
    """(task id, epoch) -> what the model wrote, read from the file the run was loaded from."""
    if run.location is None:
        raise RunLoadError(
            f"{run.source}: no samples file on this machine to read the replies from"
        )
    read = ATTEMPT_READERS.get(run.framework)
    if read is None:
        raise RunLoadError(f"{run.source}: {run.framework} runs cannot be re-executed here")
    return read(run.location, run.source)


def _inspect_attempts(location: str, name: str) -> dict[tuple[str, int], Recorded]:
    return {
        (str(sample.id), int(sample.epoch)): _from_messages(sample)
        for sample in _inspect_samples(location, name)
    }


def _inspect_samples(location: str, name: str) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log_samples

    try:
        yield from read_eval_log_samples(
            location,
            all_samples_required=False,
            resolve_attachments=True,
            exclude_fields={"store", "timelines"},
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RunLoadError(f"{name}: the samples cannot be read again: {exc}"[:300]) from None


def _assistant_messages(sample: Any) -> list[Any]:
    return [m for m in sample.messages or [] if getattr(m, "role", None) == "assistant"]


def _text(message: Any) -> str | None:
    text = getattr(message, "text", None)
    return text if isinstance(text, str) else None


def _ran_call_ids(sample: Any) -> set[str]:
    """Calls that ran: a tool message answers them, or a tool event records them (a call the
    sample's limit cut off after the model asked for it never ran, and is not replayed)."""
    ran = {str(m.tool_call_id) for m in sample.messages or [] if getattr(m, "role", None) == "tool"}
    ran |= {str(e.id) for e in sample.events or [] if getattr(e, "event", None) == "tool"}
    return ran


def _from_messages(sample: Any) -> Recorded:
    assistant = _assistant_messages(sample)
    reply = _text(assistant[-1]) if assistant else None
    replies = {
        str(m.tool_call_id): m for m in sample.messages or [] if getattr(m, "role", None) == "tool"
    }
    ran = _ran_call_ids(sample)
    calls = []
    for message in assistant:
        for call in getattr(message, "tool_calls", None) or []:
            key = TOOL_ARGUMENT.get(str(call.function))
            if key is None or str(call.id) not in ran:
                continue
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            text = arguments.get(key)
            answer = replies.get(str(call.id))
            error = getattr(answer, "error", None) if answer is not None else None
            if answer is None:
                output, kind = None, "no result"
            elif error is not None:
                output, kind = None, str(getattr(error, "type", "error"))
            else:
                output, kind = _text(answer), None
            calls.append(
                RecordedCall(
                    ToolCall(str(call.function), text if isinstance(text, str) else ""),
                    output,
                    kind,
                )
            )
    return Recorded(reply, tuple(calls))


def _lm_eval_attempts(location: str, name: str) -> dict[tuple[str, int], Recorded]:
    """(lm-eval's samples file names its errors itself: `name` is for Inspect's reader.)"""
    from pathlib import Path

    from smoldataenvs_tasks.lm_eval_samples import holds_verdicts, samples_line_replies
    from smoldataenvs_tasks.results.load.load_lm_eval import read_jsonl

    found: dict[tuple[str, int], Recorded] = {}
    for row in read_jsonl(Path(location)):
        if not holds_verdicts(row):
            continue
        doc = row.get("doc")
        task_id = doc.get("task_id") if isinstance(doc, dict) else None
        if not isinstance(task_id, str):
            continue
        for repeat, reply in enumerate(samples_line_replies(row)):
            found[(task_id, repeat + 1)] = Recorded(reply if isinstance(reply, str) else None)
    return found


# -- derived fields against the messages -------------------------------------------------------
def derived_mismatches(sample: Any) -> list[str]:
    """Where `sample`'s derived fields are not its messages, in words ([] when they agree)."""
    where = f"{sample.id} (epoch {sample.epoch})"
    out = []
    assistant = _assistant_messages(sample)
    completion = getattr(getattr(sample, "output", None), "completion", None)
    if isinstance(completion, str) and completion:
        last = _text(assistant[-1]) if assistant else None
        if completion != last:
            out.append(f"{where}: output.completion is not the last assistant message")
    asked = {
        str(call.id): call
        for message in assistant
        for call in getattr(message, "tool_calls", None) or []
    }
    replies = {
        str(m.tool_call_id): m for m in sample.messages or [] if getattr(m, "role", None) == "tool"
    }
    for event in sample.events or []:
        if getattr(event, "event", None) != "tool":
            continue
        call = asked.get(str(event.id))
        if call is None:
            out.append(f"{where}: tool event {event.id} answers no call the model made")
            continue
        if event.function != call.function or event.arguments != call.arguments:
            out.append(f"{where}: tool event {event.id}'s call is not the model's")
        answer = replies.get(str(event.id))
        if answer is not None and isinstance(event.result, str) and event.result != answer.text:
            out.append(f"{where}: tool event {event.id}'s result is not what the model was shown")
    return out


# Where each framework's log keeps what the model wrote: the frameworks whose records say
# `reexecutable` (run_plan.FRAMEWORKS; a test holds the two together).
ATTEMPT_READERS: Mapping[str, Callable[[str, str], dict[tuple[str, int], Recorded]]] = {
    INSPECT.name: _inspect_attempts,
    LM_EVAL.name: _lm_eval_attempts,
}
# The frameworks whose logs keep the model's words twice, with their samples' reader: Inspect's
# messages, and the completion and tool events derived from them. lm-eval keeps its replies once.
_DERIVED_COPIES = {INSPECT.name: _inspect_samples}


def check_transcript(runs: Sequence[Run]) -> Check:
    """The `transcript` check of `verify --logs` (module docstring)."""
    found: list[str] = []
    n_samples = 0
    for run in runs:
        read = _DERIVED_COPIES.get(run.framework)
        if read is None or run.location is None:
            continue
        try:
            for sample in read(run.location, run.source):
                n_samples += 1
                found += [f"{run.source}: {line}" for line in derived_mismatches(sample)]
        except RunLoadError as exc:
            # This submission's messages cannot be read: it fails, and a leaderboard's other
            # submissions are still verified.
            return Check("transcript", FAIL, str(exc))
    if found:
        more = f" (and {len(found) - _LISTED} more)" if len(found) > _LISTED else ""
        return Check(
            "transcript",
            FAIL,
            "fields derived from the model's messages were edited: "
            + "; ".join(found[:_LISTED])
            + more,
        )
    if not n_samples:
        return Check("transcript", SKIP, "no Inspect samples: lm-eval keeps only the replies")
    return Check(
        "transcript",
        OK,
        f"{n_samples} sample(s): every completion and tool event is the model's own messages",
    )
