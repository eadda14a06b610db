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
from typing import Any

from smoldataenvs_tasks._pins import reward_mode_label
from smoldataenvs_tasks.data.prompts import PROGRAM_SYSTEM_PROMPT, program_prompt
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.lm_eval_samples import doc_column
from smoldataenvs_tasks.run_plan import LM_EVAL, PROVENANCE_KEY, RunOptions, plan_run
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict
from smoldataenvs_tasks.variants import PROGRAM, PROTOCOL_KEY

logger = logging.getLogger(__name__)

# Run-level options and provenance travel inside each doc: lm-eval hands filters only responses
# and docs, and `--log_samples` writes docs where `smoldataenvs report` reads them. `_run` is the
# run's provenance (`run_plan.RunProvenance`, JSON), `_task_protocol` the protocol its task
# declares (`variants.TaskProtocol`, JSON; issue 47), `_grading` what the filter needs beyond them.
RUN_KEY = doc_column(PROVENANCE_KEY)
PROTOCOL_COLUMN = doc_column(PROTOCOL_KEY)
GRADING_KEY = "_grading"
# The columns docs carried before the provenance had one key (reports still read them).
LEGACY_RUN_FIELDS = (
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
RUN_FIELDS = (RUN_KEY, PROTOCOL_COLUMN, GRADING_KEY, *LEGACY_RUN_FIELDS)


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
    pass_k: int | str = 1,
    **_unrelated: Any,
):
    """`custom_dataset` loader: the split's rows as docs (every column kept).

    lm-eval calls it with the task's metadata merged with `--metadata` and `--model_args`, so
    unrelated keywords are accepted and ignored. `concurrency` (`--metadata concurrency=N`) is
    how many programs run at once (default: one per CPU); `grader` (`--metadata grader=strict`)
    the grader profile. `pass_k` is the task's own: a `_pass4` task's YAML gives its `repeats`
    here, so the protocol its docs record (`plan.protocol`) says it samples four replies. Every
    option is checked as Inspect checks its `-T` options (`smoldataenvs_tasks.run_plan`).
    """
    import datasets

    from smoldataenvs_tasks.contract import DEFAULT_LIMITS

    options = RunOptions.parse(
        LM_EVAL,
        # lm-eval poses the program variant only (its agentic runs are Inspect's and TRL's).
        variant=PROGRAM.name,
        split=split,
        mirror=mirror,
        revision=revision,
        sandbox=sandbox,
        tiers=tiers,
        reward_modes=reward_modes,
        task_ids=task_ids,
        concurrency=concurrency,
        grader=grader,
        pass_k=pass_k,
        program_timeout=DEFAULT_LIMITS.program_timeout_s
        if program_timeout is None
        else program_timeout,
    )
    plan = plan_run(options)
    grading = {"mirror": options.mirror, "concurrency": options.concurrency}
    run = {
        RUN_KEY: json.dumps(plan.provenance, sort_keys=True),
        PROTOCOL_COLUMN: json.dumps(plan.protocol, sort_keys=True),
        GRADING_KEY: json.dumps(grading, sort_keys=True),
    }
    rows = [_doc_row(record, run) for record in plan.records]
    return datasets.DatasetDict({split: datasets.Dataset.from_list(rows)})


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
    owners: list[int] = []
    for doc_index, (doc, responses) in enumerate(zip(docs, resps, strict=True)):
        record = _record(doc)
        for response in responses:
            replies.append(ProgramReply(record, response if isinstance(response, str) else ""))
            owners.append(doc_index)
    run = json.loads(first[RUN_KEY])
    grading = json.loads(first[GRADING_KEY])
    graded = grade_program_replies_with_tables(
        replies,
        sandbox=run["sandbox"],
        mirror=grading["mirror"],
        revision=run["dataset_revision"],
        concurrency=grading["concurrency"],
        profile=run["grader"],
    )
    out: list[list[str]] = [[] for _ in docs]
    for doc_index, graded_reply in zip(owners, graded, strict=True):
        verdict = graded_reply.verdict
        payload = verdict.to_dict()
        if verdict.graded and graded_reply.table_sha256:
            payload["table_sha256"] = graded_reply.table_sha256
        out[doc_index].append(json.dumps(payload, sort_keys=True))
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
