"""Read Inspect logs and lm-eval output folders into framework-neutral `Run`s.

Inputs, any mix:
- an Inspect log file (`.eval` or `.json`), read only through Inspect's log API;
- a directory of Inspect logs (every SmolDataEnvs log in it, recursively);
- an lm-eval `--output_path` folder (or a model folder inside it, or one `results_*.json`):
  each results file is one invocation, and each SmolDataEnvs task in it one run. Verdicts come
  from the `verdicts_<ts>.jsonl` our console script writes (preferred) or, failing that, from
  lm-eval's own `samples_<task>_<ts>.jsonl` (`--log_samples`).

    python -c "from smoldataenvs_tasks.results.load import load_runs; \
        print([r.label for r in load_runs(['logs/'])])"
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID, SAMPLE_SPLIT
from smoldataenvs_tasks.results.runs import Attempt, Run, RunLoadError, TaskAttempts
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict

INSPECT_SUFFIXES = (".eval", ".json")


class NotASmolDataEnvsLog(RunLoadError):
    """A readable Inspect log of some other eval."""


_LM_EVAL_TASK_PREFIX = "smoldataenvs_program_"
# Sample fields the report never needs; skipping them makes big logs load fast.
_SKIP_SAMPLE_FIELDS = {"messages", "events", "store", "attachments", "events_data", "timelines"}


def load_runs(paths: Sequence[str | Path], *, allow_incomplete: bool = False) -> list[Run]:
    """Every SmolDataEnvs run found in `paths`, in the order given (directories sorted)."""
    runs: list[Run] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise RunLoadError(f"{path}: no such file or directory")
        found = _load_path(path, allow_incomplete=allow_incomplete)
        if not found:
            raise RunLoadError(
                f"{path}: no SmolDataEnvs run found (expected an Inspect log of the smoldataenvs "
                "tasks, or an lm-eval --output_path folder with results_*.json)"
            )
        runs.extend(found)
    return runs


def _load_path(path: Path, *, allow_incomplete: bool) -> list[Run]:
    if path.is_file():
        if path.name.startswith("results_") and path.suffix == ".json":
            return load_lm_eval_results(path)
        if path.suffix in INSPECT_SUFFIXES:
            return [load_inspect_log(path, allow_incomplete=allow_incomplete)]
        raise RunLoadError(f"{path}: not an Inspect log (.eval/.json) nor an lm-eval results file")
    runs: list[Run] = []
    for file in sorted(path.rglob("results_*.json")):
        runs.extend(load_lm_eval_results(file))
    from inspect_ai.log import list_eval_logs

    infos = list_eval_logs(str(path), recursive=True, descending=False)
    for info in sorted(infos, key=lambda info: info.name):
        try:
            runs.append(load_inspect_log(info.name, allow_incomplete=allow_incomplete))
        except NotASmolDataEnvsLog:
            continue  # a shared log dir holds other evals' logs too
    return runs


# -- Inspect -----------------------------------------------------------------------------------
def _display_name(location: str) -> str:
    return Path(location.removeprefix("file://")).name


def _verdict_from_score_metadata(metadata: dict[str, Any] | None) -> Verdict | None:
    if not metadata or "category" not in metadata:
        return None
    return Verdict.from_dict(metadata)


def load_inspect_log(log_file: str | Path, *, allow_incomplete: bool = False) -> Run:
    """One Inspect log of `smoldataenvs` / `smoldataenvs_program` as a Run.

    A sample that errored (its sandbox did not start, ...) has no score: it counts as ungraded
    `sandbox_failed`, never as a 0.
    """
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    name = _display_name(str(log_file))
    try:
        header = read_eval_log(str(log_file), header_only=True)
    except Exception as exc:  # Inspect raises several types for unreadable files
        raise RunLoadError(f"{name}: not a readable Inspect log: {exc}") from None
    spec = header.eval
    meta = spec.metadata or {}
    if meta.get("benchmark") != "SmolDataEnvs" and "grader_version" not in meta:
        raise NotASmolDataEnvsLog(f"{name}: not a SmolDataEnvs log (task {spec.task!r})")
    if header.status != "success" and not allow_incomplete:
        raise RunLoadError(
            f"{name}: the run's status is {header.status!r}, not 'success' (it did not finish). "
            "Finish it with `inspect eval-retry`, or pass --allow-incomplete to report the "
            "samples it has."
        )

    tasks: dict[str, TaskAttempts] = {}
    samples: Iterable[Any] = read_eval_log_samples(
        str(log_file),
        all_samples_required=not allow_incomplete,
        exclude_fields=_SKIP_SAMPLE_FIELDS,
    )
    for sample in samples:
        task_id = str(sample.id)
        smeta = sample.metadata or {}
        verdict = None
        for score in (sample.scores or {}).values():
            verdict = _verdict_from_score_metadata(score.metadata)
            if verdict is not None:
                break
        if verdict is None:
            if sample.error is None and sample.scores:
                raise RunLoadError(
                    f"{name}: sample {task_id} epoch {sample.epoch} has a score without a "
                    "SmolDataEnvs verdict in its metadata"
                )
            message = sample.error.message if sample.error is not None else "no score"
            verdict = Verdict.ungraded(
                UngradedReason.SANDBOX_FAILED, f"sample errored: {message}"[:500]
            )
        entry = tasks.get(task_id)
        if entry is None:
            entry = tasks[task_id] = TaskAttempts(
                task_id=task_id,
                difficulty_tier=str(smeta.get("difficulty_tier") or "unknown"),
                reward_mode=str(smeta.get("reward_mode") or ""),
            )
        entry.attempts.append(Attempt(int(sample.epoch), verdict))
    for entry in tasks.values():
        entry.attempts.sort(key=lambda a: a.epoch)

    packages = dict(spec.packages or {})
    epochs = spec.config.epochs or 1
    return Run(
        source=name,
        framework="inspect_ai",
        framework_version=packages.get("inspect_ai"),
        model=str(spec.model),
        task_name=str(spec.task),
        split=str(meta.get("split") or (spec.task_args or {}).get("split") or "unknown"),
        variant=str(meta.get("variant") or "unknown"),
        protocol=str(meta.get("protocol") or "unknown"),
        dataset=meta.get("dataset") or DATASET_REPO_ID,
        dataset_revision=meta.get("dataset_revision"),
        tables_manifest_digest=meta.get("tables_manifest_digest"),
        grader_version=_grader_version(meta.get("grader_version"), tasks.values(), name),
        sandbox=meta.get("sandbox"),
        epochs=int(epochs),
        tasks=tasks,
        run_id=spec.run_id,
        created=str(spec.created) if spec.created else None,
        package_versions=packages,
    )


def _grader_version(declared: Any, tasks: Iterable[TaskAttempts], where: str) -> str | None:
    """The run's grader version; every verdict must have been decided by that one version."""
    seen = {a.verdict.grader_version for t in tasks for a in t.attempts if a.verdict.graded}
    if declared is not None:
        seen.add(str(declared))
    if len(seen) > 1:
        raise RunLoadError(f"{where}: verdicts from several grader versions {sorted(seen)}")
    return next(iter(seen), None)


# -- lm-eval -----------------------------------------------------------------------------------
def _timestamp(results_file: Path) -> str:
    return results_file.stem.removeprefix("results_")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RunLoadError(f"{path.name}:{number}: not JSON: {exc}") from None
    return rows


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
            ),
        )
        verdict = _parse_verdict(row["verdict"], f"{where} task {task_id}")
        entry.attempts.append(Attempt(int(row.get("repeat", 0)) + 1, verdict))
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
        results = json.loads(results_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunLoadError(
            f"{results_file.name}: not a readable lm-eval results file: {exc}"
        ) from None
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
                grader_version=_grader_version(
                    meta.get("grader_version"), tasks.values(), results_file.name
                ),
                # hooks.load_split's default when no --metadata sandbox was given
                sandbox=stamped["sandbox"] or meta.get("sandbox") or "auto",
                epochs=repeats,
                tasks=tasks,
                run_id=f"{task_name}@{stamp}",
                created=created,
                package_versions={"lm_eval": str(results.get("lm_eval_version"))},
            )
        )
    return runs


def _read_jsonl_first(path: Path) -> dict[str, Any] | None:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return json.loads(line)
    return None
