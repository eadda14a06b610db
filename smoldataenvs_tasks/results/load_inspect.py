"""Read one Inspect log of the SmolDataEnvs tasks into a framework-neutral `Run`, through
Inspect's own log API (`read_eval_log`, `read_eval_log_samples`).

    python -c "from smoldataenvs_tasks.results.load_inspect import load_inspect_log; \
        print(load_inspect_log('logs/x.eval').model)"
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.results.coverage import FILTER_NAMES, normal_filters
from smoldataenvs_tasks.results.runs import (
    Attempt,
    Run,
    RunLoadError,
    TaskAttempts,
    grader_version_of,
    tables_key,
)
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict

INSPECT_SUFFIXES = (".eval", ".json")
# Sample fields the report never needs; skipping them makes big logs load fast.
_SKIP_SAMPLE_FIELDS = {"messages", "events", "store", "attachments", "events_data", "timelines"}


class NotASmolDataEnvsLog(RunLoadError):
    """A readable Inspect log of some other eval."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _readable(samples: Iterable[Any], name: str) -> Iterator[Any]:
    """The samples, or one RunLoadError naming the file: a truncated or corrupt log often
    fails only once its samples are read."""
    iterator = iter(samples)
    while True:
        try:
            sample = next(iterator)
        except StopIteration:
            return
        except Exception as exc:
            raise RunLoadError(
                f"{name}: not a readable Inspect log (truncated or corrupt?): {_first_line(exc)}"
            ) from None
        yield sample


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
    whole = None
    try:
        if str(log_file).endswith(".json"):
            # One full read: Inspect's streaming header reader for .json has no nesting bound
            # (a deeply nested file exhausts memory); its full reader refuses deep nesting.
            header = whole = read_eval_log(str(log_file))
        else:
            header = read_eval_log(str(log_file), header_only=True)
    except Exception as exc:  # Inspect raises several types for unreadable files
        raise RunLoadError(f"{name}: not a readable Inspect log: {_first_line(exc)}") from None
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
    samples: Iterable[Any] = (
        whole.samples or []
        if whole is not None
        else read_eval_log_samples(
            str(log_file),
            all_samples_required=not allow_incomplete,
            exclude_fields=_SKIP_SAMPLE_FIELDS,
        )
    )
    for sample in _readable(samples, name):
        task_id = str(sample.id)
        smeta = sample.metadata or {}
        verdicts = [
            found
            for score in (sample.scores or {}).values()
            if (found := _verdict_from_score_metadata(score.metadata)) is not None
        ]
        # The first is the run's own; later ones are `smoldataenvs regrade`'s other profiles.
        verdict = verdicts[0] if verdicts else None
        regraded = {v.profile: v for v in verdicts[1:] if verdict and v.profile != verdict.profile}
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
                tables=tables_key(smeta.get("hf_bucket"), smeta.get("bucket_prefix")),
            )
        entry.attempts.append(Attempt(int(sample.epoch), verdict, regraded))
    for entry in tasks.values():
        entry.attempts.sort(key=lambda a: a.epoch)

    packages = dict(spec.packages or {})
    epochs = spec.config.epochs or 1
    task_args = spec.task_args or {}
    # Logs made before coverage was recorded still name their filters in the task arguments.
    filters = meta.get("filters") or {name: task_args.get(name) for name in FILTER_NAMES}
    sample_ids = spec.config.sample_id
    if sample_ids is not None and not isinstance(sample_ids, list):
        sample_ids = [sample_ids]
    limit = spec.config.limit
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
        grader_version=grader_version_of(meta.get("grader_version"), tasks.values(), name),
        sandbox=meta.get("sandbox"),
        epochs=int(epochs),
        tasks=tasks,
        run_id=spec.run_id,
        created=str(spec.created) if spec.created else None,
        package_versions=packages,
        split_tasks=_int_or_none(meta.get("split_tasks")),
        filters=normal_filters(filters),
        n_selected=_int_or_none(meta.get("n_tasks")),
        limit=list(limit) if isinstance(limit, tuple) else limit,
        sample_ids=[str(s) for s in sample_ids] if sample_ids else None,
        finished=header.status == "success",
        sampling=_sampling(header),
    )


def _sampling(header: Any) -> dict[str, Any]:
    temperature = header.plan.config.temperature if header.plan else None
    reducers = sorted(
        {
            score.reducer
            for score in (header.results.scores if header.results else [])
            if score.reducer
        }
    )
    return {"temperature": temperature, "reducers": reducers or None}


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
