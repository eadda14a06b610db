"""Build `submission.json`: the one file that stands behind a SmolDataEnvs number.

The headline pass@1 is the mean over *countable* tasks of each task's mean reward over its
attempts. A task is countable unless its data is ungradable (a table that cannot be had or is
corrupt, an invalid row: `DATASET_DEFECTS`, which a verifier confirms against its own data);
every attempt of a countable task the run left ungraded for any other reason (a model error, an
interrupt, a broken sandbox) counts as 0 and is shown apart ("left ungraded by the run"), so a run
cannot raise its number by not grading its failures. `pass@1_graded` is the same over the tasks
graded in every run, ungraded attempts left out, for comparison. Several runs of one model,
split and protocol (seeds) pool their attempts, plus mean ± standard error of the per-run pass@1.
The `sha256` field is the SHA-256 of the canonical JSON of everything else (docs/design.md
"Reports"): keys sorted, separators "," and ":", UTF-8, no NaN.

A submission is a *header* (what was measured: model, split, revision, grader, protocol ...), one
record per *run* (where it came from and its coverage: the split's size, the filters, the limit),
and the per-task *outcomes*. Every other field is a figure `assemble` computes from those three,
so `recompute` rebuilds a submission from its own header, runs and tasks, and `smoldataenvs
verify` compares the two field by field.

One module (over 500 lines): building a submission from runs (`build_submission`) and rebuilding
it from its own records (`recompute`) both end in the one `assemble`, beside the header and run
records they assemble from. Split, the two paths could come to compute a figure differently, and
the verifier's field-by-field check would then fail honest submissions or pass edited ones. The
figures themselves (statistics, diagnostics, cost, outcomes) already live in results/figures/.

    from smoldataenvs_tasks.results.load.inputs import load_runs
    from smoldataenvs_tasks.results.publish.submission import build_submission, verify_submission
    sub = build_submission(load_runs(["logs/"]))
    assert verify_submission(sub)
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata as importlib_metadata
from typing import Any, cast

from smoldataenvs_tasks._pins import (
    EMPTY_REWARD_MODE,
    KNOWN_REWARD_MODES,
    OLD_EMPTY_REWARD_MODE,
    TIERS,
    reward_mode_label,
)
from smoldataenvs_tasks.results.figures.cost import cost_figure, prices_for
from smoldataenvs_tasks.results.figures.diagnostics import ALPHA, POWER, submission_diagnostics
from smoldataenvs_tasks.results.figures.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    bootstrap_ci,
    cluster_bootstrap_ci,
    mean_and_se,
    pass_at_k,
    pass_k_values,
)
from smoldataenvs_tasks.results.figures.task_outcomes import (
    TaskOutcomes,
    outcomes_from_entries,
    outcomes_from_runs,
    ungraded_reason,
)
from smoldataenvs_tasks.results.model.coverage import combined_coverage, coverage_of
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import deviations, normal_settings
from smoldataenvs_tasks.results.model.runs import Run, check_combinable
from smoldataenvs_tasks.results.model.schema import (
    ClusteredEstimate,
    CoverageInputs,
    EstimateEntry,
    Failures,
    Header,
    ModelPrice,
    PassKEntry,
    RunEntry,
    RunFields,
    RunRecord,
    Sampling,
    Seeds,
    Statistics,
    Submission,
    SubmissionMetadata,
    TrainTables,
    field_names,
)
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES, Category, profile_of_version

# 2: coverage (split size, filters, limit, complete), model_ids, diagnostics, table_in_train,
# grader_profile, pass@1 by grader profile (each attempt's reward per profile in `by_grader`),
# sampling (temperature, Inspect's epoch reducers).
# 3: the headline counts a countable task's ungraded attempts as 0 (n_countable, left ungraded
# by the run, ungradable), pass@1_graded, protocol_settings and protocol_deviations, split_sha256
# and each attempt's table_sha256, nonstandard split sizes; run ids are Inspect's task_id.
SUBMISSION_FORMAT = "smoldataenvs-submission/3"

# What was measured (recorded, never computed from the outcomes), where each run came from, and
# what it recorded of its coverage: the inputs of every figure, in submission.json's order.
HEADER_FIELDS = field_names(Header)
RUN_FIELDS = field_names(RunFields)
COVERAGE_INPUTS = field_names(CoverageInputs)

STATISTICS: Statistics = {
    "pass@1": (
        "mean over countable tasks (all but those whose data is ungradable) of each task's mean "
        "reward over its attempts; an attempt the run left ungraded counts as 0"
    ),
    "pass@1_graded": "the same over the tasks graded in every run, ungraded attempts left out",
    "ci": "percentile bootstrap over tasks",
    "confidence": CONFIDENCE,
    "resamples": BOOTSTRAP_RESAMPLES,
    "seed": BOOTSTRAP_SEED,
    "pass@k": "unbiased estimator (Chen et al. 2021) over each task's graded attempts",
    "seeds": "mean ± standard error of per-run pass@1 over the countable tasks of every run",
    "tasks_to_separate": (
        f"normal approximation, {POWER:.0%} power, {ALPHA:.0%} two-sided; one submission: two "
        "independent models with its per-task sd; a pair: the sd of paired per-task differences"
    ),
}


# -- hashing -----------------------------------------------------------------------------------
def canonical_json(data: Any) -> bytes:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def submission_sha256(submission: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the submission without its `sha256` field."""
    body = {k: v for k, v in submission.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def verify_submission(submission: Mapping[str, Any]) -> bool:
    """True when the submission's `sha256` matches its content (nothing edited since)."""
    return submission.get("sha256") == submission_sha256(submission)


def submission_json(submission: Submission) -> bytes:
    """The bytes of submission.json (the same submission always gives the same bytes)."""
    text = json.dumps(submission, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8")


# -- helpers -----------------------------------------------------------------------------------
def _ordered(keys: Iterable[str], canonical: Sequence[str]) -> list[str]:
    present = set(keys)
    head = [k for k in canonical if k in present]
    return head + sorted(present - set(head))


def _one_or_many(values: Iterable[Any]) -> Any:
    """A single value when every run agrees, else the sorted distinct values."""
    distinct = sorted({v for v in values if v is not None})  # one type per field
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else distinct


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _package_version() -> str | None:
    try:
        return importlib_metadata.version("smoldataenvs_tasks")
    except importlib_metadata.PackageNotFoundError:
        return None


# -- figures ---------------------------------------------------------------------------------
def _by_reason(tasks: Sequence[TaskOutcomes]) -> dict[str, int]:
    return dict(sorted(Counter(map(ungraded_reason, tasks)).items()))


def _estimates_by(
    tasks: Sequence[TaskOutcomes], key: Callable[[TaskOutcomes], str], order: Sequence[str]
) -> dict[str, EstimateEntry]:
    groups: dict[str, list[float]] = {}
    for task in tasks:
        value = task.pass1()
        if value is not None:
            groups.setdefault(key(task), []).append(value)
    return {name: bootstrap_ci(groups[name]).to_dict() for name in _ordered(groups, order)}


def _pass_k(tasks: Sequence[TaskOutcomes]) -> dict[str, PassKEntry]:
    counts = [(len(r), int(sum(r))) for r in (t.rewards() for t in tasks)]
    if not counts:
        return {}
    out: dict[str, PassKEntry] = {}
    for k in pass_k_values(max(n for n, _ in counts)):
        values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
        # n_tasks_excluded: the tasks with fewer than k graded attempts
        out[str(k)] = {
            **bootstrap_ci(values).to_dict(),
            "n_tasks_excluded": len(counts) - len(values),
        }
    return out


def _by_grader(tasks: Sequence[TaskOutcomes]) -> dict[str, EstimateEntry]:
    """pass@1 under each grader profile every attempt has a verdict for (a run graded under
    one profile and regraded under another has both; `smoldataenvs regrade`)."""
    attempts = [a for task in tasks for a in task.attempts]
    if not attempts:
        return {}
    profiles = [p for p in GRADER_PROFILES if all(p in a.by_grader for a in attempts)]
    out: dict[str, EstimateEntry] = {}
    for profile in profiles:
        values = []
        for task in tasks:
            rewards = [
                reward for a in task.attempts if (reward := a.by_grader[profile]) is not None
            ]
            if rewards:
                values.append(sum(rewards) / len(rewards))
        out[profile] = bootstrap_ci(values).to_dict()
    return out


def _failures(tasks: Sequence[TaskOutcomes]) -> Failures:
    by_category = Counter({category.value: 0 for category in Category})
    crashes: Counter[str] = Counter()
    limits: Counter[str] = Counter()
    ungraded: Counter[str] = Counter()
    n_attempts = 0
    for task in tasks:
        for attempt in task.attempts:
            n_attempts += 1
            by_category[attempt.category] += 1
            if attempt.category == Category.CRASH.value:
                crashes[attempt.detail or "unknown"] += 1
            elif attempt.category == Category.RESOURCE_LIMIT.value:
                limits[attempt.detail or "unknown"] += 1
            elif attempt.category == Category.UNGRADED.value:
                ungraded[attempt.detail or "unknown"] += 1
    return {
        "n_attempts": n_attempts,
        "by_category": dict(by_category),
        "crash_by_exception": dict(sorted(crashes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "resource_limit_by_limit": dict(sorted(limits.items())),
        "ungraded_by_reason": dict(sorted(ungraded.items())),
    }


def _run_fields(record: RunFields) -> RunFields:
    fields: RunFields = {
        "source": record["source"],
        "framework": record["framework"],
        "framework_version": record["framework_version"],
        "model": record["model"],
        "task": record["task"],
        "run_id": record["run_id"],
        "created": record["created"],
        "sandbox": record["sandbox"],
        "epochs": record["epochs"],
    }
    if "wall_seconds" in record:  # absent in runs recorded before issue 35's cost
        fields["wall_seconds"] = record["wall_seconds"]
    return fields


def _run_entry(
    index: int, record: RunRecord, tasks: Sequence[TaskOutcomes], header: Header
) -> RunEntry:
    present = [t for t in tasks if t.in_run(index)]
    graded = [t for t in present if t.graded_in(index)]
    countable = [t.scored() for t in present if not t.ungradable]
    values = [value for t in countable if (value := t.pass1(index)) is not None]
    left = [t for t in present if t.left_ungraded(index)]
    left_reasons = Counter(a.detail or "unknown" for t in present for a in t.left_ungraded(index))
    inputs = record["coverage_inputs"]
    return {
        **_run_fields(record),
        "n_tasks": len(present),
        "n_graded": len(graded),
        "n_left_ungraded": len(left),
        "pass@1": _round(sum(values) / len(values)) if values else None,
        "coverage": coverage_of(
            n_tasks=len(present),
            n_left_ungraded=len(left),
            left_ungraded_by_reason=dict(left_reasons),
            framework=record["framework"],
            split=header["split"],
            revision=header["dataset_revision"],
            split_tasks=inputs["split_tasks"],
            filters=inputs["filters"],
            n_selected=inputs["n_selected"],
            limit=inputs["limit"],
            sample_ids=inputs["sample_ids"],
            finished=inputs["finished"],
            # every task holds the run's epochs (results/model/coverage.py, issue 44)
            planned_attempts=record["epochs"],
            attempts={t.task_id: [a.epoch for a in t.attempts if a.run == index] for t in present},
        ),
    }


def _clustered(scored: list[TaskOutcomes]) -> dict[str, ClusteredEstimate]:
    """pass@1 with its interval clustered by source dataset, when the tasks record theirs
    (older submissions do not: nothing to recompute, so nothing is added)."""
    if not any(t.cluster for t in scored):
        return {}
    values = _pass1s(scored)
    estimate, n_clusters = cluster_bootstrap_ci(values, [t.cluster for t in scored])
    plain = bootstrap_ci(values)
    entry = estimate.to_dict()
    widening = None
    if plain.low is not None and plain.high is not None and plain.high > plain.low:
        assert estimate.low is not None and estimate.high is not None
        widening = round((estimate.high - estimate.low) / (plain.high - plain.low), 3)
    return {"pass@1_clustered": {**entry, "n_clusters": n_clusters, "widening": widening}}


# -- assembling --------------------------------------------------------------------------------
def assemble(
    header: Header, run_records: Sequence[RunRecord], tasks: list[TaskOutcomes]
) -> Submission:
    """The submission: the header, then every figure computed from the runs' coverage records
    and the per-task outcomes, then the tasks, then the sha256."""
    n_runs = len(run_records)
    ungradable = [t for t in tasks if t.ungradable]
    countable_ids = {t.task_id for t in tasks if not t.ungradable}
    # The headline's view: countable tasks, every ungraded attempt a 0.
    scored = [t.scored() for t in tasks if t.task_id in countable_ids]
    graded_everywhere = [t for t in tasks if all(t.graded_in(i) for i in range(n_runs))]
    left = [t for t in tasks if t.left_ungraded()]
    left_reasons = Counter(a.detail or "unknown" for t in tasks for a in t.left_ungraded())
    runs = [_run_entry(i, record, tasks, header) for i, record in enumerate(run_records)]
    seeds: Seeds | None = None
    if n_runs > 1:
        in_every_run = [t for t in scored if all(t.in_run(i) for i in range(n_runs))]
        per_run = []
        for index in range(n_runs):
            values = [value for t in in_every_run if (value := t.pass1(index)) is not None]
            per_run.append(sum(values) / len(values) if values else None)
        summary = mean_and_se(per_run)
        seeds = {"n_runs": n_runs, "n_tasks": len(in_every_run), "pass@1": summary.to_dict()}

    submission: Submission = {
        **header,
        "protocol_deviations": deviations(header["protocol_settings"]),
        "coverage": combined_coverage([run["coverage"] for run in runs], len(tasks)),
        "n_runs": n_runs,
        "runs": runs,
        "n_tasks": len(tasks),
        "n_countable": len(scored),
        "n_graded": len(graded_everywhere),
        "n_left_ungraded": len(left),
        "left_ungraded_by_reason": dict(sorted(left_reasons.items())),
        "n_ungradable": len(ungradable),
        "ungradable_by_reason": _by_reason(ungradable),
        "pass@1": bootstrap_ci(_pass1s(scored)).to_dict(),
        "pass@1_graded": bootstrap_ci(_pass1s(graded_everywhere)).to_dict(),
        **_clustered(scored),  # type: ignore[typeddict-item]
        "pass@1_by_tier": _estimates_by(scored, lambda t: t.difficulty_tier, TIERS),
        "pass@1_by_reward_mode": _estimates_by(
            scored,
            lambda t: reward_mode_label(t.reward_mode),
            [reward_mode_label(m) for m in KNOWN_REWARD_MODES],
        ),
        "pass@1_by_grader": _by_grader(scored),
        "pass@k": _pass_k(scored),
        "seeds": seeds,
        "failures": _failures(tasks),
        **_cost(header, run_records, tasks),
        "diagnostics": submission_diagnostics(
            # every task for the contamination share; pass@1 over the countable, scored
            [t.scored() if t.task_id in countable_ids else t for t in tasks],
            countable_ids,
            header["train_tables"],
        ),
        "statistics": STATISTICS,
        "tasks": [t.to_entry(t.task_id in countable_ids) for t in tasks],
        "sha256": None,  # its place, last; the hash covers everything else
    }
    submission["sha256"] = submission_sha256(submission)
    return submission


def _cost(
    header: Header, run_records: Sequence[RunRecord], tasks: Sequence[TaskOutcomes]
) -> dict[str, Any]:
    """Cost and retried attempts, for runs recorded since issue 35 (their records hold
    `wall_seconds`); an older submission has neither, and is recomputed without them."""
    if not any("wall_seconds" in record for record in run_records):
        return {}
    return {
        "cost": cost_figure(run_records, tasks, header.get("prices")),
        "n_retried": sum(a.retries > 0 for task in tasks for a in task.attempts),
    }


def _pass1s(tasks: Sequence[TaskOutcomes]) -> list[float]:
    """Each task's pass@1 (tasks with no graded attempt have none)."""
    return [value for t in tasks if (value := t.pass1()) is not None]


def header_from_runs(
    runs: Sequence[Run], *, model: str | None, train_tables: TrainTables
) -> Header:
    versions: dict[str, str] = {}
    for run in runs:
        versions.update({k: str(v) for k, v in run.package_versions.items()})
    first = runs[0]
    return {
        "format": SUBMISSION_FORMAT,
        "benchmark": "SmolDataEnvs",
        "model": model or first.model,
        "model_ids": sorted({run.model for run in runs}),
        "framework": _one_or_many(run.framework for run in runs),
        "versions": dict(sorted(versions.items())),
        "report_generator": {"smoldataenvs_tasks": _package_version()},
        "variant": first.variant,
        "protocol": first.protocol,
        "split": first.split,
        "dataset": first.dataset,
        "dataset_revision": first.dataset_revision,
        "tables_manifest_digest": _one_or_many(run.tables_manifest_digest for run in runs),
        "grader_version": first.grader_version,
        "grader_profile": profile_of_version(first.grader_version),
        "sandbox": _one_or_many(run.sandbox for run in runs),
        "epochs": _one_or_many(run.epochs for run in runs),
        "sampling": _sampling(runs),
        # Runs pool only with identical settings (check_combinable): the first's are all's.
        "protocol_settings": normal_settings(first.settings),
        "split_sha256": _one_or_many(run.split_sha256 for run in runs),
        "train_tables": train_tables.copy(),
    }


def _sampling(runs: Sequence[Run]) -> Sampling:
    """How the attempts were sampled, labelled as the frameworks name it: the temperature and
    Inspect's epoch reducers (e.g. pass_at_4 from -T pass_k=4)."""
    reducers = sorted({r for run in runs for r in run.sampling["reducers"] or []})
    return {
        "temperature": _one_or_many(run.sampling["temperature"] for run in runs),
        "reducers": reducers or None,
    }


def run_record(run: Run) -> RunRecord:
    """What a submission keeps of one run: where it came from and its coverage inputs."""
    return {
        "source": run.source,
        "framework": run.framework,
        "framework_version": run.framework_version,
        "model": run.model,
        "task": run.task_name,
        "run_id": run.run_id,
        "created": run.created,
        "sandbox": run.sandbox,
        "epochs": run.epochs,
        "wall_seconds": run.wall_seconds,
        "coverage_inputs": {
            "split_tasks": run.split_tasks,
            "filters": run.filters,
            "n_selected": run.n_selected,
            "limit": run.limit,
            "sample_ids": run.sample_ids,
            "finished": run.finished,
        },
    }


def run_record_of(entry: RunEntry) -> RunRecord:
    """A submission's run entry as `run_record` made it: its fields and coverage inputs."""
    coverage = entry["coverage"]
    return {
        **_run_fields(entry),
        "coverage_inputs": {
            "split_tasks": coverage["split_tasks"],
            "filters": coverage["filters"],
            "n_selected": coverage["n_selected"],
            "limit": coverage["limit"],
            "sample_ids": coverage["sample_ids"],
            "finished": coverage["finished"],
        },
    }


def header_of(submission: Submission) -> Header:
    """The header of a submission: what was measured, in submission.json's order."""
    fields = cast(Mapping[str, Any], submission)
    # `prices` and `metadata` are optional: absent, they stay absent
    return cast(Header, {name: fields[name] for name in HEADER_FIELDS if name in fields})


def build_submission(
    runs: Sequence[Run],
    *,
    model: str | None = None,
    table_in_train: Mapping[str, bool | None] | None = None,
    train_tables: TrainTables | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    metadata: SubmissionMetadata | None = None,
) -> Submission:
    """The submission for one model on one split: one run, or several seeds of it.

    `model` labels the submission (`report --name`) when the frameworks spelled the model
    differently; without it every run must name the same model. `table_in_train` and
    `train_tables` are the contamination lookup (results/figures/contamination.py); by default it is
    made here, from the train split on this machine if there is one. `prices` is a price
    table (results/figures/cost.py: its entries for these runs' models are recorded); `metadata` what
    the submitter states (results/render/submitter.py).
    """
    check_combinable(runs, same_model=model is None)
    if train_tables is None:
        from smoldataenvs_tasks.results.figures.contamination import lookup_train_tables

        table_in_train, train_tables = lookup_train_tables(runs)
    header = header_from_runs(runs, model=model, train_tables=train_tables)
    if prices is not None:
        header["prices"] = prices_for(prices, header["model_ids"])
    if metadata is not None:
        header["metadata"] = metadata
    records = [run_record(run) for run in runs]
    return assemble(header, records, outcomes_from_runs(runs, table_in_train))


def recompute(submission: Submission) -> Submission:
    """The submission rebuilt from its own header, run records and per-task outcomes (it must
    be shape-checked: `schema.check_submission`); equal to the original when no figure was
    edited. Outcomes that are not verdicts, or name a run the submission lacks, raise
    RunLoadError."""
    records = [run_record_of(run) for run in submission["runs"]]
    tasks = outcomes_from_entries(submission["tasks"])
    for task in tasks:
        for attempt in task.attempts:
            if not 0 <= attempt.run < len(records):
                raise RunLoadError(
                    f"task {task.task_id}: an attempt of run {attempt.run}, but the submission "
                    f"lists {len(records)} run(s)"
                )
    rebuilt = assemble(header_of(submission), records, tasks)
    # a submission without the field is rebuilt with it; the comparison then names the difference
    by_mode = submission.get("pass@1_by_reward_mode")
    if (
        isinstance(by_mode, dict)
        and OLD_EMPTY_REWARD_MODE in by_mode
        and EMPTY_REWARD_MODE not in by_mode
    ):
        # Written before the empty mode was named `empty` everywhere: its figures are read
        # under the name it was written with, so an old submission still verifies.
        rebuilt["pass@1_by_reward_mode"] = {
            OLD_EMPTY_REWARD_MODE if mode == EMPTY_REWARD_MODE else mode: value
            for mode, value in rebuilt["pass@1_by_reward_mode"].items()
        }
        rebuilt["sha256"] = submission_sha256(rebuilt)
    return rebuilt
