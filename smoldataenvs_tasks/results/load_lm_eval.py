"""Read an lm-eval `--output_path` folder into framework-neutral `Run`s: each results file is one
invocation, each SmolDataEnvs task in it one run. Verdicts come from the `verdicts_<ts>.jsonl`
our console script writes (preferred) or, failing that, from lm-eval's own
`samples_<task>_<ts>.jsonl` (`--log_samples`).

    python -c "from pathlib import Path; from smoldataenvs_tasks.results.load_lm_eval import \
        load_lm_eval_results; print(load_lm_eval_results(Path('out/m/results_x.json')))"
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID, SAMPLE_SPLIT
from smoldataenvs_tasks.results.coverage import FILTER_NAMES, normal_filters
from smoldataenvs_tasks.results.runs import (
    Attempt,
    Run,
    RunLoadError,
    TaskAttempts,
    grader_version_of,
    tables_key,
)
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict, versioned

_LM_EVAL_TASK_PREFIX = "smoldataenvs_program_"


def _timestamp(results_file: Path) -> str:
    return results_file.stem.removeprefix("results_")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                rows.append(_json_line(line, f"{path.name}:{number}"))
    except UnicodeDecodeError as exc:
        raise RunLoadError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    return rows


def _json_line(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunLoadError(f"{where}: not JSON: {exc}") from None
    except RecursionError:
        raise RunLoadError(f"{where}: JSON nested too deeply") from None


def _lm_eval_model(config: dict[str, Any], model_name: str | None) -> str:
    """`<backend>/<model>` like Inspect's model names (`hf/Qwen/...`); file paths (the replay
    model's `path=`) shortened to their stem so no machine path lands in a report."""
    backend = str(config.get("model") or "unknown")
    name = model_name or ""
    if name.endswith((".jsonl", ".json")) or name.startswith("/"):
        name = Path(name).stem
    return f"{backend}/{name}" if name else backend


def _parse_verdict(raw: Any, where: str) -> Verdict:
    data = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(data, dict):
        raise RunLoadError(f"{where}: not a verdict: {raw!r:.200}")
    return Verdict.from_dict(data)


def _attempts_from_samples(path: Path) -> tuple[dict[str, TaskAttempts], dict[str, Any]]:
    """Per-task attempts from lm-eval's samples file (filtered_resps hold Verdict JSON)."""
    tasks: dict[str, TaskAttempts] = {}
    first_doc: dict[str, Any] = {}
    for row in _read_jsonl(path):
        # lm-eval writes one line per doc per filter; ours is the "verdicts" filter.
        if row.get("filter", "verdicts") != "verdicts":
            continue
        doc = row.get("doc") or {}
        first_doc = first_doc or doc
        task_id = str(doc.get("task_id"))
        filtered = row.get("filtered_resps")
        if isinstance(filtered, str):
            filtered = [filtered]
        # pass@k tasks keep all K verdicts, possibly nested one level: [[v1, ..., vK]].
        if filtered and isinstance(filtered[0], list):
            filtered = filtered[0]
        if task_id in tasks:
            raise RunLoadError(f"{path.name}: task {task_id} appears on two lines")
        entry = tasks[task_id] = TaskAttempts(
            task_id,
            str(doc.get("difficulty_tier") or "unknown"),
            str(doc.get("reward_mode") or ""),
            tables=tables_key(doc.get("hf_bucket"), doc.get("bucket_prefix")),
        )
        where = f"{path.name} doc {row.get('doc_id')}"
        entry.attempts.extend(
            Attempt(repeat + 1, _parse_verdict(raw, where))
            for repeat, raw in enumerate(filtered or [])
        )
    return tasks, first_doc


def _attempts_from_verdicts(rows: list[dict[str, Any]], where: str) -> dict[str, TaskAttempts]:
    tasks: dict[str, TaskAttempts] = {}
    for row in rows:
        task_id = str(row["task_id"])
        entry = tasks.setdefault(
            task_id,
            TaskAttempts(
                task_id,
                str(row.get("difficulty_tier") or "unknown"),
                str(row.get("reward_mode") or ""),
                tables=tables_key(row.get("hf_bucket"), row.get("bucket_prefix")),
            ),
        )
        verdict = _parse_verdict(row["verdict"], f"{where} task {task_id}")
        # `smoldataenvs regrade` adds the same answer's verdicts under other grader profiles.
        regraded = {
            profile: _parse_verdict(raw, f"{where} task {task_id} ({profile})")
            for profile, raw in (row.get("regraded") or {}).items()
        }
        entry.attempts.append(Attempt(int(row.get("repeat", 0)) + 1, verdict, regraded))
    for entry in tasks.values():
        entry.attempts.sort(key=lambda a: a.epoch)
        epochs = [a.epoch for a in entry.attempts]
        if len(set(epochs)) != len(epochs):
            raise RunLoadError(
                f"{where}: task {entry.task_id} has repeated attempts {epochs}; the file mixes "
                "several tasks or runs (keep --log_samples on to tell them apart)"
            )
    return tasks


def _split_of(task_name: str, config: dict[str, Any]) -> str:
    split = (config.get("dataset_kwargs") or {}).get("split") or config.get("test_split")
    if split:
        return str(split)
    rest = task_name.removeprefix(_LM_EVAL_TASK_PREFIX)
    return rest.split("_", 1)[0]


def _lm_eval_revision(doc: dict[str, Any], meta: dict[str, Any], split: str) -> str | None:
    """The revision the rows came from. Docs carry it (`_revision`); without a samples file, an
    explicit `--metadata revision=` wins, the bundled sample has its own, and otherwise the
    YAML's pinned Hub revision is what `load_split` used (unless a mirror was given, which only
    the docs record)."""
    if doc.get("_revision"):
        return str(doc["_revision"])
    if meta.get("revision"):
        return str(meta["revision"])
    if split == SAMPLE_SPLIT and not meta.get("mirror"):
        from smoldataenvs_tasks.data.source import DataSource

        return DataSource.sample().revision
    return meta.get("dataset_revision")


def load_lm_eval_results(results_file: Path) -> list[Run]:
    """The SmolDataEnvs runs of one lm-eval results file (one per task that ran)."""
    results_file = Path(results_file)
    try:
        text = results_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunLoadError(
            f"{results_file.name}: not a readable lm-eval results file: {exc}"
        ) from None
    results = _json_line(text, results_file.name)
    if not isinstance(results, dict):
        raise RunLoadError(f"{results_file.name}: not a readable lm-eval results file")
    configs: dict[str, Any] = results.get("configs") or {}
    ours = sorted(name for name in configs if name.startswith(_LM_EVAL_TASK_PREFIX))
    if not ours:
        return []
    stamp = _timestamp(results_file)
    folder = results_file.parent
    verdicts_file = folder / f"verdicts_{stamp}.jsonl"
    verdict_rows = _read_jsonl(verdicts_file) if verdicts_file.exists() else None
    run_config: dict[str, Any] = results.get("config") or {}
    model = _lm_eval_model(run_config, results.get("model_name"))
    created = None
    if isinstance(results.get("date"), int | float) and math.isfinite(results["date"]):
        created = _dt.datetime.fromtimestamp(results["date"], tz=_dt.UTC).isoformat()

    runs = []
    for task_name in ours:
        config = configs[task_name]
        meta = config.get("metadata") or {}
        samples_file = folder / f"samples_{task_name}_{stamp}.jsonl"
        first_doc: dict[str, Any] = {}
        if verdict_rows is not None and len(ours) == 1:
            tasks = _attempts_from_verdicts(verdict_rows, verdicts_file.name)
            if samples_file.exists():
                first_doc = (_read_jsonl_first(samples_file) or {}).get("doc") or {}
        elif samples_file.exists():
            tasks, first_doc = _attempts_from_samples(samples_file)
        else:
            raise RunLoadError(
                f"{results_file.name}: no per-doc verdicts for {task_name}: run lm-eval with "
                "--log_samples (or through `smoldataenvs-lm-eval`, which writes verdicts_*.jsonl)"
                + (" — with several tasks in one run, --log_samples is needed" if ours[1:] else "")
            )
        repeats = int(config.get("repeats") or 1)
        coverage = _coverage_fields(first_doc, verdict_rows, meta, results, task_name)
        # Provenance the loader stamped on every doc (and the console script on every verdict).
        stamped = {**(verdict_rows[0] if verdict_rows else {})}
        stamped.update(
            {
                "dataset_revision": first_doc.get("_revision") or stamped.get("dataset_revision"),
                "sandbox": first_doc.get("_sandbox") or stamped.get("sandbox"),
                "tables_manifest_digest": first_doc.get("_tables_manifest_digest")
                or stamped.get("tables_manifest_digest"),
            }
        )
        runs.append(
            Run(
                source=f"{results_file.name}#{task_name}",
                framework="lm_eval",
                framework_version=results.get("lm_eval_version"),
                model=model,
                task_name=task_name,
                split=_split_of(task_name, config),
                variant="program",
                protocol="program",
                dataset=meta.get("dataset") or DATASET_REPO_ID,
                dataset_revision=stamped["dataset_revision"]
                or _lm_eval_revision(first_doc, meta, _split_of(task_name, config)),
                tables_manifest_digest=stamped["tables_manifest_digest"]
                or meta.get("tables_manifest_digest"),
                grader_version=grader_version_of(
                    _declared_grader_version(meta, tasks), tasks.values(), results_file.name
                ),
                # hooks.load_split's default when no --metadata sandbox was given
                sandbox=stamped["sandbox"] or meta.get("sandbox") or "auto",
                epochs=repeats,
                tasks=tasks,
                run_id=f"{task_name}@{stamp}",
                created=created,
                package_versions={"lm_eval": str(results.get("lm_eval_version"))},
                limit=_limit(run_config.get("limit")),
                sampling={
                    "temperature": (config.get("generation_kwargs") or {}).get("temperature"),
                    "reducers": None,
                },
                **coverage,
            )
        )
    return runs


def _limit(value: Any) -> int | float | None:
    """lm-eval's --limit as given: a count (stored as a float, 3.0) or a fraction below 1."""
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value)
    return value


def _coverage_fields(
    doc: dict[str, Any],
    verdict_rows: list[dict[str, Any]] | None,
    meta: dict[str, Any],
    results: dict[str, Any],
    task_name: str,
) -> dict[str, Any]:
    """The split's size and the filters the loader stamped on every doc (and the console script
    on every verdict); lm-eval's own count of the docs the filters kept."""
    stamped = verdict_rows[0] if verdict_rows else {}
    split_tasks = doc.get("_split_tasks") or stamped.get("split_tasks")
    filters: Any = doc.get("_filters") or stamped.get("filters")
    if isinstance(filters, str):
        filters = json.loads(filters)
    if not filters:  # runs made before coverage was recorded: the --metadata filters
        filters = {name: meta.get(name) for name in FILTER_NAMES}
        filters = {k: v.split(",") if isinstance(v, str) else v for k, v in filters.items()}
    counts = (results.get("n-samples") or {}).get(task_name) or {}
    return {
        "split_tasks": int(split_tasks) if split_tasks not in (None, "") else None,
        "filters": normal_filters(filters),
        "n_selected": int(counts["original"]) if counts.get("original") is not None else None,
    }


def _declared_grader_version(meta: dict[str, Any], tasks: dict[str, TaskAttempts]) -> Any:
    """The YAML's rules version with the profile `--metadata grader=` chose, as the verdicts
    record it ("1.1.0+strict"); versions from before profiles stand as they are."""
    version = meta.get("grader_version")
    if version is None or "+" in str(version):
        return version
    recorded = {a.verdict.grader_version for t in tasks.values() for a in t.attempts}
    if any(str(v).startswith(f"{version}+") for v in recorded):
        return versioned(str(meta.get("grader") or DEFAULT_PROFILE), str(version))
    return version


def _read_jsonl_first(path: Path) -> dict[str, Any] | None:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return json.loads(line)
    return None
