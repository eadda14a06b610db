"""A framework-neutral run: per task, per attempt (epoch or repeat), the Verdict it earned.

Inspect logs and lm-eval output folders both load into `Run` (see `results/load/inputs.py`); everything
after loading (statistics, submission.json, report.md, compare) sees only this shape.

    from smoldataenvs_tasks.results.load.inputs import load_runs
    run, = load_runs(["logs/2026-11-29T13-00-41_smoldataenvs-program_X.eval"])
    print(run.split, run.model, len(run.tasks))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from smoldataenvs_tasks.data.source import Filters
from smoldataenvs_tasks.results.model.errors import IncompatibleRunsError, RunLoadError
from smoldataenvs_tasks.results.model.protocol import SETTING_KEYS, normal_settings, signature
from smoldataenvs_tasks.results.model.schema import AttemptUsage, Sampling
from smoldataenvs_tasks.scorers.verdict import Verdict
from smoldataenvs_tasks.variants import TaskProtocol


@dataclass(frozen=True)
class Retried:
    """A sample the framework ran again after an error (results/load/retries.py): the verdict of
    each earlier attempt, None where that attempt recorded none, and the one that counts.
    `recorded` False: the sample ran in an `eval-retry` whose log keeps no record of its
    earlier attempt (`earlier` is empty)."""

    task_id: str
    epoch: int
    earlier: list[Verdict | None]
    final: Verdict
    recorded: bool = True


@dataclass(frozen=True)
class Attempt:
    epoch: int  # 1-based: Inspect's epoch, or lm-eval's repeat + 1
    verdict: Verdict
    # The same answer's verdicts under the other grader profiles (`smoldataenvs regrade`).
    regraded: dict[str, Verdict] = field(default_factory=dict)
    # name -> sha256 of each table the attempt's sandbox was given; None when none was staged
    # (an invalid row, a table that could not be had) or the run did not record them.
    table_sha256: dict[str, str] | None = None
    # sha256 of the model's reply, folded (results/load/fingerprint.py): runs are told apart by it.
    output_sha256: str | None = None
    # Tokens and time the framework recorded for the sample (results/figures/cost.py); None: nothing.
    usage: AttemptUsage | None = None
    # Earlier attempts of the sample that errored and were run again (results/load/retries.py).
    retries: int = 0

    def under(self, profile: str) -> Verdict | None:
        """This attempt's verdict under the grader `profile`, when the run holds one."""
        if self.verdict.profile == profile:
            return self.verdict
        return self.regraded.get(profile)


@dataclass
class TaskAttempts:
    task_id: str
    difficulty_tier: str
    reward_mode: str
    attempts: list[Attempt] = field(default_factory=list)
    # "<hf_bucket>/<bucket_prefix>": where the task's tables live (the contamination view); None
    # when the run did not record it.
    tables: str | None = None

    @property
    def graded(self) -> list[Attempt]:
        return [a for a in self.attempts if a.verdict.graded]

    @property
    def pass1(self) -> float | None:
        """Mean reward over graded attempts; None when no attempt was graded."""
        graded = self.graded
        if not graded:
            return None
        return sum(a.verdict.reward or 0.0 for a in graded) / len(graded)


def _no_filters() -> Filters:
    return {"tiers": None, "reward_modes": None, "task_ids": None}


def _default_sampling() -> Sampling:
    return {"temperature": None, "reducers": None}


def _default_settings() -> TaskProtocol:
    return normal_settings({})


@dataclass
class Run:
    """One evaluation: one model, one split, one framework invocation."""

    source: str  # file name the run was read from (no directories: reports get shared)
    framework: str  # a name in run_plan.FRAMEWORKS (a hostile log may hold another)
    framework_version: str | None
    model: str
    task_name: str
    split: str
    variant: str  # a name in variants.VARIANTS, or "unknown" when a log does not say
    protocol: str  # one of that Variant's `protocols`
    dataset: str | None
    dataset_revision: str | None
    tables_manifest_digest: str | None
    grader_version: str | None
    sandbox: str | None
    # The attempts the run planned per task (Inspect's eval config epochs, lm-eval's repeats,
    # Harbor's attempts): the one declaration coverage holds every task to
    # (results/model/coverage.py `attempt_shortfalls`).
    epochs: int
    tasks: dict[str, TaskAttempts]
    run_id: str | None = None
    created: str | None = None
    package_versions: dict[str, str] = field(default_factory=dict)
    # Coverage, recorded at run time (results/model/coverage.py): the split's full size, the filters
    # (tiers, reward_modes, task_ids: a list or None each), the tasks they kept, the framework's
    # own limit (Inspect --limit N or [start, end], lm-eval --limit N or a fraction), Inspect's
    # --sample-id, and whether the run finished.
    split_tasks: int | None = None
    filters: Filters = field(default_factory=_no_filters)
    n_selected: int | None = None
    limit: int | float | list[int] | None = None
    sample_ids: list[str] | None = None
    finished: bool = True
    status: str = "success"  # Inspect's log status (success, error, cancelled, started)
    # How the attempts were sampled: `temperature` (None: the model's default) and, for Inspect,
    # the epoch `reducers` the log shows (pass_at_k from -T pass_k=k); pass@k is only comparable
    # across runs that sampled alike.
    sampling: Sampling = field(default_factory=_default_sampling)
    # Every setting that can change the score (results/model/protocol.py): runs pool only when these
    # are identical, and a leaderboard ranks apart the runs whose settings are not the defaults.
    settings: TaskProtocol = field(default_factory=_default_settings)
    # sha256 of the split's parquet the rows (and golds) came from; a verifier compares it with
    # its own copy's.
    split_sha256: str | None = None
    # Inspect's eval_id: a copy or `smoldataenvs regrade` of a log keeps it, `inspect eval-retry`
    # makes a new one under the same run id (Inspect's task_id). None for lm-eval.
    attempt_id: str | None = None
    # Call settings the header states that the model calls did not use (results/load/calls.py):
    # `verify --logs` fails a run with any.
    call_mismatches: list[str] = field(default_factory=list)
    # Samples re-run after an error, with what their earlier attempts scored.
    retried: list[Retried] = field(default_factory=list)
    # The file the attempts were read from (an Inspect log, an lm-eval samples file), on this
    # machine: `verify --reexecute` reads the replies and tool calls there. Not part of a report.
    location: str | None = None
    # Seconds from the run's start to its end, as the framework recorded them (None: not).
    wall_seconds: float | None = None

    @property
    def label(self) -> str:
        return f"{self.source} ({self.framework}, {self.model}, {self.split})"

    def pass1(self, task_ids: set[str] | None = None) -> float | None:
        """Mean over tasks (graded ones, optionally only `task_ids`) of each task's pass@1."""
        values = [
            t.pass1
            for tid, t in self.tasks.items()
            if t.pass1 is not None and (task_ids is None or tid in task_ids)
        ]
        return sum(values) / len(values) if values else None


# Fields that must agree for runs to combine into one score, with the words used in errors.
_MUST_AGREE = (
    ("split", "splits"),
    ("variant", "variants"),
    ("protocol", "protocols"),
    ("grader_version", "grader versions"),
    ("dataset_revision", "dataset revisions"),
    ("model", "models"),
)


# Files a model name may end in that name a file, not a model: their stem is the name.
_FILE_SUFFIXES = (".jsonl", ".json", ".gguf", ".safetensors", ".bin")


def public_model_name(provider: str, name: str) -> str:
    """`<provider>/<name>` with no machine path in it: a name that is a file or an absolute
    folder (Inspect's `hf//srv/models/SmolLM2`, lm-eval's `pretrained=/srv/models/SmolLM2`,
    the replay model's `path=/x/gold.jsonl`) becomes its last part (`hf/SmolLM2`, `gold`), so a
    report, submission.json and a leaderboard never show where a submitter keeps a model
    (issue 43). Every loader names a run's model through here."""
    # Where a path starts: the whole name, or after a service prefix (`llamacpp//srv/m.gguf`).
    start = 0 if name.startswith(("/", "~")) else name.find("//") + 1
    if start or name.startswith(("/", "~")) or name.endswith(_FILE_SUFFIXES):
        kept = name[:start] if start else ""
        last = name[start:].rstrip("/").rsplit("/", 1)[-1]
        name = kept + (last.rsplit(".", 1)[0] if last.endswith(_FILE_SUFFIXES) else last)
    return f"{provider}/{name}" if name else provider


def settings_key(run: Run) -> str:
    """The run's settings as one comparable string (results/model/protocol.py)."""
    return signature(run.settings)


def check_combinable(runs: Sequence[Run], *, same_model: bool = True) -> None:
    """Refuse, with the reason, runs that do not measure the same thing: seeds of one setup
    share data, grader, variant, model and every recorded setting (framework, sandbox kind,
    sampling, budgets: results/model/protocol.py). `same_model=False` when the caller named the model
    itself (`report --name`): the frameworks spell one model differently."""
    if not runs:
        raise IncompatibleRunsError("no runs to report")
    for attribute, words in _MUST_AGREE:
        if attribute == "model" and not same_model:
            continue
        values = {getattr(run, attribute) for run in runs}
        if len(values) > 1:
            listing = "; ".join(f"{run.source}: {getattr(run, attribute)!r}" for run in runs)
            raise IncompatibleRunsError(
                f"cannot combine runs of different {words} into one report ({listing}). "
                "Report them separately (or select one with --split / by passing fewer inputs)."
            )
    if len({settings_key(run) for run in runs}) > 1:
        differing = [
            key for key in SETTING_KEYS if len({repr(run.settings.get(key)) for run in runs}) > 1
        ]
        listing = "; ".join(
            f"{run.source}: " + ", ".join(f"{k}={run.settings.get(k)!r}" for k in differing)
            for run in runs
        )
        raise IncompatibleRunsError(
            f"cannot combine runs of different protocols into one report ({listing}): runs "
            "pool only when every recorded setting is the same. Report them separately."
        )


def dedupe_runs(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """One run per run id, and a note for each input left out.

    The same log copied under another name, and a `smoldataenvs regrade` of it (`X_regraded-
    strict.eval`), are one run: the copy holding the most grader profiles stands for it. An
    `inspect eval-retry` of a run (same run id, a new attempt id) supersedes it: the latest
    attempt that finished stands for the run (the latest one when none did). Two inputs that
    claim one run id with different outcomes are refused: one of them is not what it says.
    """
    by_id: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        if run.run_id is not None:
            by_id.setdefault((run.framework, run.run_id), []).append(run)
    notes: list[str] = []
    chosen: dict[int, Run] = {}
    for (_, run_id), group in by_id.items():
        if len(group) == 1:
            chosen[id(group[0])] = group[0]
            continue
        latest_attempt = max(
            group, key=lambda r: (r.finished, str(r.created or ""), r.attempt_id or "")
        )
        same_attempt = [r for r in group if r.attempt_id == latest_attempt.attempt_id]
        for other in group:
            if other.attempt_id != latest_attempt.attempt_id:
                status = "" if other.finished else f" ({other.status})"
                notes.append(
                    f"{other.source}{status}: superseded by {latest_attempt.source}, the latest "
                    f"finished attempt of run id {run_id} (inspect eval-retry); counted once"
                    if latest_attempt.finished
                    else f"{other.source}{status}: superseded by {latest_attempt.source}, the "
                    f"latest attempt of run id {run_id}; counted once"
                )
        best = max(same_attempt, key=lambda r: (len(_profiles(r)), r.source))
        earlier_attempts = [r for r in group if r.attempt_id != latest_attempt.attempt_id]
        for run in same_attempt:
            run.retried = _accounted(run.retried, earlier_attempts)
            _add_earlier_usage(run, earlier_attempts)
        for other in same_attempt:
            if other is best:
                continue
            if _primary_outcomes(other) != _primary_outcomes(best):
                raise IncompatibleRunsError(
                    f"{other.source} and {best.source} both claim run id {run_id} but record "
                    "different outcomes: one of them is not the run it says it is"
                )
            what = "a regrade" if _profiles(best) > _profiles(other) else "a copy"
            notes.append(f"{best.source}: {what} of {other.source} (run id {run_id}); one run")
        chosen[id(best)] = best
    out = [run for run in runs if id(run) in chosen or run.run_id is None]
    return out, notes


def _accounted(retried: list[Retried], earlier_attempts: Sequence[Run]) -> list[Retried]:
    """A retry's samples whose earlier attempt its log does not record, read in the earlier
    attempts' own logs: the verdicts they hold, or nothing to retry when none of them ran the
    sample (it never started there: an interrupted run)."""
    if not earlier_attempts:
        return retried
    out = []
    for item in retried:
        if item.recorded:
            out.append(item)
            continue
        found = [
            attempt.verdict
            for run in earlier_attempts
            if (task := run.tasks.get(item.task_id)) is not None
            for attempt in task.attempts
            if attempt.epoch == item.epoch
        ]
        if found:
            out.append(Retried(item.task_id, item.epoch, list(found), item.final))
    return out


_USAGE_KEYS = ("input_tokens", "output_tokens", "total_seconds", "working_seconds")


def _add_earlier_usage(run: Run, earlier_attempts: Sequence[Run]) -> None:
    """Each retried attempt's usage with what its earlier attempts spent added: a sample that
    errored after its model call (a lost sandbox) and was run again by `inspect eval-retry`
    cost both calls, and the retry's log records only the second (issue 43: after eval-retry
    the cost undercounted). Attempts the retry copied from its earlier attempt are not retried
    and are counted once."""
    retried = {(item.task_id, item.epoch) for item in run.retried}
    for task_id, task in run.tasks.items():
        for index, attempt in enumerate(task.attempts):
            if (task_id, attempt.epoch) not in retried or attempt.usage is None:
                continue
            spent = [
                earlier.usage
                for other in earlier_attempts
                if (found := other.tasks.get(task_id)) is not None
                for earlier in found.attempts
                if earlier.epoch == attempt.epoch and earlier.usage is not None
            ]
            if spent:
                total = dict(attempt.usage)
                for usage in spent:
                    for key in _USAGE_KEYS:
                        if usage[key] is not None:  # type: ignore[literal-required]
                            total[key] = (total[key] or 0) + usage[key]  # type: ignore[literal-required]
                task.attempts[index] = replace(attempt, usage=cast(AttemptUsage, total))


def _profiles(run: Run) -> set[str]:
    return {p for t in run.tasks.values() for a in t.attempts for p in a.regraded} | {
        a.verdict.profile for t in run.tasks.values() for a in t.attempts
    }


def _primary_outcomes(run: Run) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (task_id, a.epoch): (a.verdict.reward, a.verdict.category, a.verdict.prediction)
        for task_id, t in run.tasks.items()
        for a in t.attempts
    }


def grader_version_of(declared: Any, tasks: Iterable[TaskAttempts], where: str) -> str | None:
    """The run's grader version; every verdict must have been decided by that one version."""
    seen = {a.verdict.grader_version for t in tasks for a in t.attempts if a.verdict.graded}
    if declared is not None:
        seen.add(str(declared))
    if len(seen) > 1:
        raise RunLoadError(
            f"{where}: verdicts from several grader versions {sorted(seen, key=str)}"
        )
    return next(iter(seen), None)


def tables_key(hf_bucket: Any, bucket_prefix: Any) -> str | None:
    """`<hf_bucket>/<bucket_prefix>`, the identity of a task's tables; None when not recorded."""
    from smoldataenvs_tasks.data.layout import source_dataset

    return source_dataset(hf_bucket, bucket_prefix)
