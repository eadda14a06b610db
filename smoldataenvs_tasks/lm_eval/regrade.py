"""Re-grade an lm-eval `--output_path` folder under another grader profile, into a new folder.

Nothing runs again: each line of our tasks' `samples_<task>_<ts>.jsonl` (`--log_samples`) holds
its doc (the gold, mode and tolerances) and its verdicts (`filtered_resps`), each with the graded
answer (`prediction`); each is graded again and the new verdicts are added to the line as
`regraded.<profile>`, one per reply. The `verdicts_<ts>.jsonl` files the console script wrote
before issue 34 are re-graded the same way (`regraded.<profile>` on each row), their golds from
the samples' docs or, without them, from the dataset rows of the recorded revision. Every other
file is copied unchanged.

    smoldataenvs regrade out/ --grader strict --out out-strict/
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.data.cache import atomic_write_bytes
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.lm_eval_samples import (
    SamplesFileError,
    holds_verdicts,
    read_samples_file,
    samples_line_verdicts,
)
from smoldataenvs_tasks.scorers.decide import regrade_verdict
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES, Verdict

# Our tasks' samples files: samples_<task>_<timestamp>.jsonl
_OUR_TASKS = "smoldataenvs_program_"


class LmEvalRegradeError(SmolDataEnvsError, ValueError):
    """An lm-eval output folder that cannot be re-graded; the message says why."""


def _rows(path: Path) -> list[dict[str, Any]]:
    """The file's JSON objects, one per line; a malformed file is one LmEvalRegradeError."""
    try:
        return read_samples_file(path)
    except SamplesFileError as exc:
        raise LmEvalRegradeError(str(exc)) from None


def _docs_beside(verdicts_file: Path) -> dict[str, dict[str, Any]]:
    """task_id -> doc, from the samples files of the same invocation (same timestamp)."""
    stamp = verdicts_file.stem.removeprefix("verdicts_")
    docs: dict[str, dict[str, Any]] = {}
    for samples in verdicts_file.parent.glob(f"samples_*_{stamp}.jsonl"):
        for row in _rows(samples):
            doc = row.get("doc") or {}
            if "task_id" in doc:
                docs.setdefault(str(doc["task_id"]), doc)
    return docs


def _split_of(verdicts_file: Path) -> str | None:
    stamp = verdicts_file.stem.removeprefix("verdicts_")
    results = verdicts_file.with_name(f"results_{stamp}.json")
    if not results.exists():
        return None
    configs = json.loads(results.read_text(encoding="utf-8")).get("configs") or {}
    for config in configs.values():
        split = (config.get("dataset_kwargs") or {}).get("split") or config.get("test_split")
        if split:
            return str(split)
    return None


def _docs_from_dataset(
    verdicts_file: Path, rows: list[dict[str, Any]], missing: set[str]
) -> dict[str, dict[str, Any]]:
    from smoldataenvs_tasks.data.kinds import resolve_source

    split = _split_of(verdicts_file)
    if split is None:
        raise LmEvalRegradeError(
            f"{verdicts_file.name}: no samples file and no results file to find the golds of "
            f"{len(missing)} task(s); run lm-eval with --log_samples"
        )
    revision = next((r.get("dataset_revision") for r in rows if r.get("dataset_revision")), None)
    source = resolve_source(split, revision=revision)
    records = source.load_tasks(split, task_ids=sorted(missing))
    return {record.task_id: record.to_doc() for record in records}


def _regraded_rows(verdicts_file: Path, profile: str) -> list[dict[str, Any]]:
    """The file's rows, each with its verdict under `profile` added as `regraded.<profile>`."""
    rows = _rows(verdicts_file)
    docs = _docs_beside(verdicts_file)
    missing = {str(row["task_id"]) for row in rows} - set(docs)
    if missing:
        docs.update(_docs_from_dataset(verdicts_file, rows, missing))
    for row in rows:
        task_id = str(row["task_id"])
        already = dict(row.get("regraded") or {})
        new = _regraded(row["verdict"], docs[task_id], profile, already, verdicts_file)
        row["regraded"] = {**already, profile: new}
    return rows


def _regraded(
    recorded: Any, doc: dict[str, Any], profile: str, already: dict[str, Any], file: Path
) -> dict[str, Any]:
    """One recorded verdict graded again under `profile` against its doc's gold, refused when the
    line already holds a verdict of that profile."""
    verdict = Verdict.from_dict(json.loads(recorded) if isinstance(recorded, str) else recorded)
    if verdict.profile == profile or profile in already:
        raise LmEvalRegradeError(
            f"{file.name}: task {doc['task_id']} already holds a verdict under the "
            f"{profile!r} grader"
        )
    return regrade_verdict(
        verdict,
        gold=str(doc["answer"]),
        reward_mode=str(doc.get("reward_mode") or ""),
        atol=doc.get("atol"),
        rtol=doc.get("rtol"),
        profile=profile,
    ).to_dict()


def _verdicts(row: dict[str, Any]) -> list[Any]:
    verdicts = samples_line_verdicts(row)
    if verdicts is None:
        raise LmEvalRegradeError("filtered_resps is not a list of verdicts")
    return verdicts


def _regraded_samples(samples_file: Path, profile: str) -> list[dict[str, Any]]:
    """The file's lines, each of our filter's with its verdicts under `profile` added as
    `regraded.<profile>`."""
    rows = _rows(samples_file)
    for row in rows:
        if not holds_verdicts(row):
            continue
        doc = row["doc"]
        already = dict(row.get("regraded") or {})
        regraded = [_regraded(raw, doc, profile, already, samples_file) for raw in _verdicts(row)]
        row["regraded"] = {**already, profile: regraded}
    return rows


def regrade_lm_eval_output(path: str | Path, profile: str, out: str | Path) -> list[Path]:
    """Copy the output folder `path` to `out`, adding each verdict's verdict under `profile`.
    Returns the files written."""
    if profile not in GRADER_PROFILES:
        raise LmEvalRegradeError(
            f"grader must be one of {', '.join(GRADER_PROFILES)}, not {profile!r}"
        )
    source, target = Path(path), Path(out)
    samples_files = sorted(source.rglob(f"samples_{_OUR_TASKS}*.jsonl"))
    verdict_files = sorted(source.rglob("verdicts_*.jsonl"))
    if not samples_files and not verdict_files:
        raise LmEvalRegradeError(
            f"{source}: no samples_{_OUR_TASKS}*.jsonl (the samples lm-eval logs with "
            "--log_samples, which smoldataenvs-lm-eval implies) to re-grade"
        )
    if target.exists() and any(target.iterdir()):
        raise LmEvalRegradeError(f"{target}: exists and is not empty")
    # Every row is re-graded before anything is written.
    regraded: dict[Path, list[dict[str, Any]]] = {}
    regraders = [(_regraded_samples, f) for f in samples_files] + [
        (_regraded_rows, f) for f in verdict_files
    ]
    for regrade_file, file in regraders:
        try:
            regraded[file.relative_to(source)] = regrade_file(file, profile)
        except LmEvalRegradeError:
            raise
        except SmolDataEnvsError as exc:  # the golds' rows could not be had
            raise LmEvalRegradeError(f"{file.name}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LmEvalRegradeError(
                f"{file.name}: a row is not a verdict row ({type(exc).__name__}: {str(exc)[:120]})"
            ) from None

    shutil.copytree(source, target, dirs_exist_ok=True)
    written = []
    for relative, rows in regraded.items():
        destination = target / relative
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
        atomic_write_bytes(destination, text.encode("utf-8"))
        written.append(destination)
    return written
