"""Runs told apart by what the model wrote, not by their ids (issues 35 and 44).

A run copied under a new eval id, run id, task id and sample uuids, or an lm-eval folder renamed,
is still the same model outputs. Each attempt carries `output_sha256`, a digest of the model's
reply with case and whitespace taken out (re-indenting or re-spacing a copy does not make it
new); an agent's attempt digests every tool call it made, in order, with its closing message
(`trajectory_digest`: two agents that both end "Done." are not one run). Two runs, or two
submissions, are one run when, task by task, their attempts' digests match for at least
`NEAR_IDENTICAL` of the attempts both hold, whatever epoch each attempt was numbered (a copy
with its epochs swapped is still a copy).

Honest runs of one model at temperature 0 are often identical too: they are one measurement,
never a second run (two greedy runs are not a pass@2). Which of two such runs is kept never
depends on a date the runs state about themselves (`created`): that is the submitter's to write.

    from smoldataenvs_tasks.results.load.fingerprint import output_digest, content_duplicates
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from smoldataenvs_tasks.results.model.runs import Run, TaskAttempts

# Share of the attempts both runs hold (with a reply) whose replies are the same, at or above
# which two runs are one: a copy with a few replies edited is still a copy.
NEAR_IDENTICAL = 0.9
# Below this many shared replies nothing is decided (two runs of three tasks can agree by chance).
MIN_SHARED = 5

Key = tuple[str, int]


def output_digest(text: Any) -> str | None:
    """sha256 of the reply with case and every whitespace removed; None for no reply."""
    if not isinstance(text, str):
        return None
    folded = "".join(text.split()).casefold()
    if not folded:
        return None
    return hashlib.sha256(folded.encode("utf-8", "backslashreplace")).hexdigest()


def trajectory_digest(sample: Any) -> str | None:
    """An Inspect attempt's digest: its closing reply's (`output_digest`), and for an agent
    every tool call it made, in order, with that reply. A program attempt (no tool call) keeps
    the reply's own digest. The calls are read as the log stores them (Inspect keeps a text
    over 100 characters as a reference named by its content's hash)."""
    completion = getattr(getattr(sample, "output", None), "completion", None)
    calls = [
        _call_text(event)
        for event in getattr(sample, "events", None) or []
        if getattr(event, "event", None) == "tool"
    ]
    if not calls:
        return output_digest(completion)
    parts = [output_digest(text) or "-" for text in (*calls, completion)]
    return hashlib.sha256("\n".join(parts).encode("ascii")).hexdigest()


def _call_text(event: Any) -> str:
    arguments = event.arguments if isinstance(event.arguments, dict) else {}
    values = [
        f"{key}={value if isinstance(value, str) else json.dumps(value, sort_keys=True)}"
        for key, value in sorted(arguments.items(), key=lambda item: str(item[0]))
    ]
    return "\n".join([str(getattr(event, "function", "")), *values])


def tasks_digests(tasks: Mapping[str, TaskAttempts]) -> dict[Key, str]:
    return {
        (task_id, a.epoch): a.output_sha256
        for task_id, entry in tasks.items()
        for a in entry.attempts
        if a.output_sha256
    }


def run_digests(run: Run) -> dict[Key, str]:
    return tasks_digests(run.tasks)


def overlap(a: Mapping[Key, str], b: Mapping[Key, str]) -> tuple[int, int]:
    """(attempts both hold, of those the same), task by task whatever the epoch numbers: a
    task's attempts pair up as far as the smaller side has them, and as many are the same as
    their digests have in common (counted with repeats)."""
    by_task_a = _by_task(a)
    by_task_b = _by_task(b)
    tasks = by_task_a.keys() & by_task_b.keys()
    shared = sum(min(by_task_a[t].total(), by_task_b[t].total()) for t in tasks)
    same = sum((by_task_a[t] & by_task_b[t]).total() for t in tasks)
    return shared, same


def _by_task(digests: Mapping[Key, str]) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for (task_id, _), digest in digests.items():
        out.setdefault(task_id, Counter())[digest] += 1
    return out


def same_content(a: Mapping[Key, str], b: Mapping[Key, str]) -> tuple[bool, int, int]:
    shared, same = overlap(a, b)
    return shared >= MIN_SHARED and same >= NEAR_IDENTICAL * shared, shared, same


def content_duplicates(
    items: Sequence[Any], digests_of: Any, name_of: Any
) -> tuple[list[Any], list[str], dict[int, int]]:
    """`items` with every near-identical later one left out, a note per one left out naming
    both, and {left-out index: kept index}. The caller orders `items` (the kept one is the
    first of its group in that order)."""
    kept: list[int] = []
    dropped: dict[int, int] = {}
    notes: list[str] = []
    fingerprints = [digests_of(item) for item in items]
    for index, digests in enumerate(fingerprints):
        for other in kept:
            duplicate, shared, same = same_content(fingerprints[other], digests)
            if duplicate:
                dropped[index] = other
                notes.append(
                    f"{name_of(items[index])}: the same model outputs as "
                    f"{name_of(items[other])} ({same} of {shared} replies identical); "
                    "counted as one run"
                )
                break
        else:
            kept.append(index)
    return [items[i] for i in kept], notes, dropped


def dedupe_by_content(runs: Iterable[Run]) -> tuple[list[Run], list[str]]:
    """Runs in a stable order (framework, then file name: never the `created` date a run
    states of itself), one per content."""
    runs = list(runs)
    ordered = sorted(runs, key=lambda r: (r.framework, r.source))
    kept, notes, _ = content_duplicates(ordered, run_digests, lambda r: r.source)
    kept_ids = {id(run) for run in kept}
    return [run for run in runs if id(run) in kept_ids], notes
