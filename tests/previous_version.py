"""Runs as the version before issue 34 wrote them, made from runs of this version.

Before issue 34 a run's provenance was not kept under one key: Inspect's task metadata held each
field at its top; lm-eval's docs held one `_` column per field, and `smoldataenvs-lm-eval` wrote
every verdict a second time, with the provenance, into `verdicts_<timestamp>.jsonl` beside
lm-eval's results file. Reports, `verify` and `regrade` still read such runs; these copies let
tests check that they read them as they read this version's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def inspect_as_previous(log_file: Path, target: Path) -> Path:
    """A copy of an Inspect log with its task metadata laid out as before: the provenance's
    fields at the top (that version recorded no package version there)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    metadata = dict(log.eval.metadata or {})
    provenance = metadata.pop("run")
    provenance.pop("package_version")
    log.eval.metadata = {**metadata, **provenance}
    target.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(target))
    return target


def _previous_doc(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    run = json.loads(doc.pop("_run"))
    grading = json.loads(doc.pop("_grading"))
    # nor did it store the task's protocol (issue 47)
    doc.pop("_task_protocol", None)
    doc.update(
        {
            "_sandbox": run["sandbox"],
            "_mirror": grading["mirror"] or "",
            "_revision": run["dataset_revision"] or "",
            "_concurrency": str(grading["concurrency"] or ""),
            "_tables_manifest_digest": run["tables_manifest_digest"] or "",
            "_split_tasks": str(run["split_tasks"]),
            "_filters": json.dumps(run["filters"], sort_keys=True),
            "_grader": run["grader"],
            "_split_sha256": run["split_sha256"],
            "_package_version": run["package_version"] or "",
        }
    )
    return doc


def _verdict_rows(row: dict[str, Any], run: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdicts file's rows of one samples line: one per reply."""
    doc = row["doc"]
    filtered = row["filtered_resps"]
    if filtered and isinstance(filtered[0], list):
        filtered = filtered[0]
    return [
        {
            "task_id": doc["task_id"],
            "repeat": repeat,
            "difficulty_tier": doc["difficulty_tier"],
            "reward_mode": doc["reward_mode"],
            "verdict": json.loads(verdict),
            "dataset_revision": run["dataset_revision"],
            "sandbox": run["sandbox"],
            "tables_manifest_digest": run["tables_manifest_digest"],
            "split_tasks": run["split_tasks"],
            "filters": run["filters"],
            "hf_bucket": doc["hf_bucket"],
            "bucket_prefix": doc["bucket_prefix"],
            "split_sha256": run["split_sha256"],
            "package_version": run["package_version"],
        }
        for repeat, verdict in enumerate(filtered)
    ]


def lm_eval_as_previous(folder: Path, target: Path) -> Path:
    """A copy of an lm-eval `--output_path` folder of one of our tasks as the previous version
    wrote it: its docs' provenance in `_` columns, and its verdicts also in
    `verdicts_<timestamp>.jsonl`."""
    shutil.copytree(folder, target)
    for samples in sorted(target.rglob("samples_smoldataenvs_program_*.jsonl")):
        stamp = samples.stem.rsplit("_", 1)[1]
        lines, verdicts = [], []
        for line in samples.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            run = json.loads(row["doc"]["_run"])
            if row.get("filter", "verdicts") == "verdicts":
                verdicts += _verdict_rows(row, run)
            row["doc"] = _previous_doc(row["doc"])
            lines.append(json.dumps(row))
        samples.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        verdicts_file = samples.with_name(f"verdicts_{stamp}.jsonl")
        assert not verdicts_file.exists(), "one task per run, as the previous version needed"
        verdicts_file.write_text(
            "".join(json.dumps(row, sort_keys=True) + "\n" for row in verdicts), encoding="utf-8"
        )
    return target
