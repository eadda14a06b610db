"""lm-eval hooks for the SmolDataEnvs program variant (referenced from the task YAMLs).

The prompt, the program runner, the sandboxes and the verdict rules are the same objects the
Inspect program variant uses, so both frameworks give identical per-task verdicts on the same
completions.

    smoldataenvs-lm-eval --tasks smoldataenvs_program --model hf --model_args pretrained=... \
        --confirm_run_unsafe_code --log_samples --output_path out/
    smoldataenvs-lm-eval --tasks smoldataenvs_program_sample --model replay \
        --model_args path=smoldataenvs_tasks/sample/replays/gold_program.jsonl \
        --confirm_run_unsafe_code --metadata '{"sandbox": "docker"}'
    # the strict grader profile (docs/scoring.md)
    smoldataenvs-lm-eval --tasks smoldataenvs_program_sample --model replay \
        --model_args path=smoldataenvs_tasks/sample/replays/gold_program.jsonl \
        --confirm_run_unsafe_code --metadata grader=strict
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from smoldataenvs_tasks._pins import reward_mode_label
from smoldataenvs_tasks.data.prompts import PROGRAM_SYSTEM_PROMPT, program_prompt
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict

if TYPE_CHECKING:
    from smoldataenvs_tasks.options import OptionChecks

logger = logging.getLogger(__name__)

# Run-level options and provenance travel inside each doc: lm-eval hands filters only responses
# and docs, and `--log_samples` writes docs where `smoldataenvs report` reads them.
# `_split_tasks` (the split's full size) and `_filters` (JSON) let a report tell a filtered or
# --limit run from a complete one without reading the data again.
RUN_FIELDS = (
    "_sandbox",
    "_mirror",
    "_revision",
    "_concurrency",
    "_tables_manifest_digest",
    "_split_tasks",
    "_filters",
    "_grader",
    "_split_sha256",
    "_package_version",
)

# Verdicts decided in this process, by (task_id, repeat); the console script writes them next to
# lm-eval's own output files.
VERDICT_LOG: list[dict[str, Any]] = []


def _doc_row(record: TaskRecord, run: dict[str, str]) -> dict[str, Any]:
    doc = record.to_doc()
    # Arrow needs one schema for every row: nested free-form columns travel as JSON text.
    for key, value in list(doc.items()):
        if isinstance(value, dict):
            doc[key] = json.dumps(value, sort_keys=True)
    doc["system_prompt"] = PROGRAM_SYSTEM_PROMPT
    doc.update(run)
    return doc


def load_split(
    split: str = "eval",
    mirror: str | None = None,
    revision: str | None = None,
    sandbox: str = "auto",
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
    concurrency: int | str | None = None,
    grader: str = DEFAULT_PROFILE,
    program_timeout: float | str | None = None,
    **_unrelated: Any,
):
    """`custom_dataset` loader: the split's rows as docs (every column kept).

    lm-eval calls it with the task's metadata merged with `--metadata` and `--model_args`, so
    unrelated keywords are accepted and ignored. `concurrency` (`--metadata concurrency=N`) is
    how many programs run at once (default: one per CPU); `grader` (`--metadata grader=strict`)
    the grader profile. Every option is checked as Inspect checks its `-T` options
    (`smoldataenvs_tasks.options`), before any data is read except the reward modes, which may
    name a mode only the split holds.
    """
    import datasets

    from smoldataenvs_tasks.data.source import DataSource, filter_tasks, recorded_filters
    from smoldataenvs_tasks.data.tables import tables_manifest_digest
    from smoldataenvs_tasks.options import LM_EVAL as check
    from smoldataenvs_tasks.sandboxes.kinds import SESSION_KINDS, resolve_kind

    check.split(split)
    # Not `revision`: lm-eval merges --model_args into these keywords, and a model's revision
    # (hf, vllm) arrives under that name.
    check.bundled_split(split, mirror=mirror)
    check.grader(grader)
    check.sandbox(sandbox, SESSION_KINDS)
    if concurrency not in (None, ""):
        concurrency = check.whole_number("concurrency", concurrency, "programs at once")
    if program_timeout is not None:
        _check_program_timeout(check, program_timeout)
    check.tiers(tiers)

    source = DataSource.resolve(split, mirror=mirror, revision=revision)
    every_record = source.load_tasks(split)
    check.reward_modes(reward_modes, {record.reward_mode for record in every_record})
    # The bytes the rows (and golds) came from: a verifier compares them with its own copy.
    split_sha256 = source.split_sha256(split)
    records = filter_tasks(every_record, tiers=tiers, reward_modes=reward_modes, task_ids=task_ids)
    filters = recorded_filters(tiers=tiers, reward_modes=reward_modes, task_ids=task_ids)
    run = {
        # The kind that will really run (what "auto" picks here), as Inspect's logs record it.
        "_sandbox": resolve_kind(str(sandbox)),
        "_mirror": str(mirror or ""),
        "_revision": str(source.revision or ""),
        "_concurrency": str(concurrency or ""),
        "_tables_manifest_digest": str(tables_manifest_digest(records, source) or ""),
        "_split_tasks": str(len(every_record)),
        "_filters": json.dumps(filters, sort_keys=True),
        "_grader": grader,
        "_split_sha256": split_sha256,
        # This package's version, as Inspect records it for a task's package: reports show it.
        "_package_version": _package_version(),
    }
    rows = [_doc_row(record, run) for record in records]
    return datasets.DatasetDict({split: datasets.Dataset.from_list(rows)})


def _package_version() -> str:
    """The installed smoldataenvs_tasks' version; "" when it runs from a checkout not installed."""
    from importlib import metadata

    try:
        return metadata.version("smoldataenvs_tasks")
    except metadata.PackageNotFoundError:
        return ""


def _check_program_timeout(check: OptionChecks, value: float | str) -> None:
    """lm-eval runs programs with the dataset's limit only, the one its runs record
    (`results/load_lm_eval.py`): another `program_timeout` would be ignored silently."""
    from smoldataenvs_tasks.contract import DEFAULT_LIMITS

    limit = DEFAULT_LIMITS.program_timeout_s
    if check.seconds("program_timeout", value) != limit:
        raise check.invalid(
            "program_timeout",
            value,
            f"lm-eval runs programs for {limit:g} seconds, the dataset's limit "
            "(Inspect's -T program_timeout sets another)",
        )


def _record(doc: dict[str, Any]) -> TaskRecord:
    clean = {k: v for k, v in doc.items() if k not in RUN_FIELDS and k != "system_prompt"}
    extra = clean.get("extra")
    if isinstance(extra, str):
        try:
            clean["extra"] = json.loads(extra)
        except json.JSONDecodeError:
            pass
    return TaskRecord.from_doc(clean)


def doc_to_text(doc: dict[str, Any]) -> str:
    return program_prompt(doc["question"], list(doc.get("files") or []))


def run_programs_filter(resps: list[list[str]], docs: list[dict[str, Any]]) -> list[list[str]]:
    """Run every response's program at once; each response becomes its Verdict as JSON, with
    the sha256 of each table the pipeline staged for it (`table_sha256`), as Inspect's scores
    record it."""
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies_with_tables

    if not docs:
        return []
    first = docs[0]
    replies: list[ProgramReply] = []
    owners: list[tuple[int, int]] = []
    for doc_index, (doc, responses) in enumerate(zip(docs, resps, strict=True)):
        record = _record(doc)
        for repeat, response in enumerate(responses):
            replies.append(ProgramReply(record, response if isinstance(response, str) else ""))
            owners.append((doc_index, repeat))
    graded = grade_program_replies_with_tables(
        replies,
        sandbox=first.get("_sandbox") or "auto",
        mirror=first.get("_mirror") or None,
        revision=first.get("_revision") or None,
        concurrency=int(first.get("_concurrency") or 0) or None,
        profile=first.get("_grader") or DEFAULT_PROFILE,
    )
    out: list[list[str]] = [[] for _ in docs]
    for (doc_index, repeat), reply, graded_reply in zip(owners, replies, graded, strict=True):
        verdict = graded_reply.verdict
        payload = verdict.to_dict()
        if verdict.graded and graded_reply.table_sha256:
            payload["table_sha256"] = graded_reply.table_sha256
        out[doc_index].append(json.dumps(payload, sort_keys=True))
        doc = docs[doc_index]
        VERDICT_LOG.append(
            {
                "task_id": reply.record.task_id,
                "repeat": repeat,
                "difficulty_tier": reply.record.difficulty_tier,
                "reward_mode": reply.record.reward_mode,
                "verdict": payload,
                "dataset_revision": doc.get("_revision") or None,
                "sandbox": doc.get("_sandbox") or None,
                "tables_manifest_digest": doc.get("_tables_manifest_digest") or None,
                "split_tasks": int(doc["_split_tasks"]) if doc.get("_split_tasks") else None,
                "filters": json.loads(doc["_filters"]) if doc.get("_filters") else None,
                "hf_bucket": reply.record.hf_bucket,
                "bucket_prefix": reply.record.bucket_prefix,
                "split_sha256": doc.get("_split_sha256") or None,
                "package_version": doc.get("_package_version") or None,
            }
        )
    return out


def _verdict(text: str) -> Verdict:
    return Verdict.from_dict(json.loads(text))


def mode_metric_name(reward_mode: str) -> str:
    return f"pass@1_mode_{reward_mode_label(reward_mode)}"


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """Metrics of one doc from its Verdict. Ungraded docs emit no pass@1 key at all."""
    verdict = _verdict(results[0])
    if verdict.reward is None:
        return {"ungraded": 1.0}
    return {
        "pass@1": verdict.reward,
        f"pass@1_{doc['difficulty_tier']}": verdict.reward,
        mode_metric_name(doc["reward_mode"]): verdict.reward,
        "ungraded": 0.0,
    }


def process_results_pass_k(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """pass@1 (mean over graded samples) and pass@k (any correct) from k Verdicts of one doc."""
    rewards = [_verdict(text).reward for text in results[0]]
    graded = [r for r in rewards if r is not None]
    if not graded:
        return {"ungraded": 1.0}
    k = len(rewards)
    return {
        "pass@1": sum(graded) / len(graded),
        f"pass@{k}": 1.0 if any(r == 1.0 for r in graded) else 0.0,
        "ungraded": 0.0 if len(graded) == k else 1.0,
    }


def count(items: list[float]) -> float:
    """Aggregation for the `ungraded` metric: how many docs, not a mean."""
    return float(math.fsum(items))
