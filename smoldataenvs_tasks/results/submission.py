"""Build `submission.json`: the one file that stands behind a SmolDataEnvs number.

pass@1 is the mean over tasks of each task's mean reward over its graded attempts; ungraded
attempts (infrastructure failures) never count, and a task with no graded attempt is left out and
counted by reason. Several runs of one model and split (seeds) combine over the tasks graded in
every run: the pooled pass@1 with its bootstrap CI, plus mean ± standard error of the per-run
pass@1. The `sha256` field is the SHA-256 of the canonical JSON of everything else
(docs/design.md "Reports"): keys sorted, separators "," and ":", UTF-8, no NaN.

    from smoldataenvs_tasks.results.load import load_runs
    from smoldataenvs_tasks.results.submission import build_submission, verify_submission
    sub = build_submission(load_runs(["logs/"]))
    assert verify_submission(sub)
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata as importlib_metadata
from typing import Any

from smoldataenvs_tasks._pins import KNOWN_REWARD_MODES, TIERS
from smoldataenvs_tasks.results.runs import Run, TaskAttempts, check_combinable
from smoldataenvs_tasks.results.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    bootstrap_ci,
    mean_and_se,
    pass_at_k,
    pass_k_values,
)
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES, Category, profile_of_version

SUBMISSION_FORMAT = "smoldataenvs-submission/1"
UNSPECIFIED_MODE = "unspecified"  # the empty reward_mode, named as lm-eval's metrics name it
NOT_IN_EVERY_RUN = "not_in_every_run"
_PREDICTION_CHARS = 200


# -- hashing -----------------------------------------------------------------------------------
def canonical_json(data: Any) -> bytes:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def submission_sha256(submission: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the submission without its `sha256` field."""
    body = {k: v for k, v in submission.items() if k != "sha256"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def verify_submission(submission: dict[str, Any]) -> bool:
    """True when the submission's `sha256` matches its content (nothing edited since)."""
    return submission.get("sha256") == submission_sha256(submission)


# -- grouping ----------------------------------------------------------------------------------
def mode_label(reward_mode: str) -> str:
    return reward_mode or UNSPECIFIED_MODE


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


class _TaskView:
    """One task across every run: its attempts tagged with the run index."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.difficulty_tier = "unknown"
        self.reward_mode = ""
        self.per_run: dict[int, TaskAttempts] = {}

    def add(self, run_index: int, attempts: TaskAttempts) -> None:
        self.per_run[run_index] = attempts
        if self.difficulty_tier == "unknown":
            self.difficulty_tier = attempts.difficulty_tier
        self.reward_mode = self.reward_mode or attempts.reward_mode

    def graded_in(self, run_index: int) -> bool:
        entry = self.per_run.get(run_index)
        return entry is not None and bool(entry.graded)

    def rewards(self) -> list[float]:
        return [
            a.verdict.reward
            for entry in self.per_run.values()
            for a in entry.attempts
            if a.verdict.reward is not None
        ]

    def pass1(self) -> float | None:
        rewards = self.rewards()
        return sum(rewards) / len(rewards) if rewards else None


def _ungraded_reason(view: _TaskView) -> str:
    details = Counter(
        a.verdict.detail or "unknown"
        for index, entry in view.per_run.items()
        if not view.graded_in(index)
        for a in entry.attempts
        if not a.verdict.graded
    )
    if not details:
        return NOT_IN_EVERY_RUN
    top = max(details.values())
    return min(reason for reason, count in details.items() if count == top)


def _estimates_by(
    views: Sequence[_TaskView], key: Callable[[_TaskView], str], order: Sequence[str]
) -> dict[str, Any]:
    groups: dict[str, list[float]] = {}
    for view in views:
        value = view.pass1()
        if value is not None:
            groups.setdefault(key(view), []).append(value)
    return {name: bootstrap_ci(groups[name]).to_dict() for name in _ordered(groups, order)}


def _pass_k(views: Sequence[_TaskView]) -> dict[str, Any]:
    counts = [(len(r), int(sum(r))) for r in (v.rewards() for v in views)]
    if not counts:
        return {}
    out: dict[str, Any] = {}
    for k in pass_k_values(max(n for n, _ in counts)):
        values = [pass_at_k(n, c, k) for n, c in counts if n >= k]
        entry = bootstrap_ci(values).to_dict()
        entry["n_tasks_excluded"] = len(counts) - len(values)  # fewer than k graded attempts
        out[str(k)] = entry
    return out


def _by_grader(views: Sequence[_TaskView]) -> dict[str, Any]:
    """pass@1 under each grader profile every attempt has a verdict for (a run graded under
    one profile and regraded under another has both; `smoldataenvs regrade`)."""
    attempts = [a for view in views for entry in view.per_run.values() for a in entry.attempts]
    if not attempts:
        return {}
    profiles = [p for p in GRADER_PROFILES if all(a.under(p) is not None for a in attempts)]
    out: dict[str, Any] = {}
    for profile in profiles:
        values = []
        for view in views:
            rewards = [
                verdict.reward
                for entry in view.per_run.values()
                for a in entry.attempts
                if (verdict := a.under(profile)) is not None and verdict.reward is not None
            ]
            if rewards:
                values.append(sum(rewards) / len(rewards))
        out[profile] = bootstrap_ci(values).to_dict()
    return out


def _failures(runs: Sequence[Run]) -> dict[str, Any]:
    by_category = Counter({category.value: 0 for category in Category})
    crashes: Counter[str] = Counter()
    limits: Counter[str] = Counter()
    ungraded: Counter[str] = Counter()
    n_attempts = 0
    for run in runs:
        for entry in run.tasks.values():
            for attempt in entry.attempts:
                verdict = attempt.verdict
                n_attempts += 1
                by_category[verdict.category.value] += 1
                if verdict.category is Category.CRASH:
                    crashes[verdict.detail or "unknown"] += 1
                elif verdict.category is Category.RESOURCE_LIMIT:
                    limits[verdict.detail or "unknown"] += 1
                elif verdict.category is Category.UNGRADED:
                    ungraded[verdict.detail or "unknown"] += 1
    return {
        "n_attempts": n_attempts,
        "by_category": dict(by_category),
        "crash_by_exception": dict(sorted(crashes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "resource_limit_by_limit": dict(sorted(limits.items())),
        "ungraded_by_reason": dict(sorted(ungraded.items())),
    }


def _task_entry(view: _TaskView, included: bool) -> dict[str, Any]:
    attempts = []
    for run_index in sorted(view.per_run):
        for attempt in view.per_run[run_index].attempts:
            verdict = attempt.verdict
            prediction = verdict.prediction
            if prediction is not None and len(prediction) > _PREDICTION_CHARS:
                prediction = prediction[:_PREDICTION_CHARS] + "…"
            attempts.append(
                {
                    "run": run_index,
                    "epoch": attempt.epoch,
                    "reward": verdict.reward,
                    "category": verdict.category.value,
                    "detail": verdict.detail,
                    "method": verdict.method,
                    "prediction": prediction,
                }
            )
    rewards = view.rewards()
    pass1 = view.pass1()
    return {
        "task_id": view.task_id,
        "difficulty_tier": view.difficulty_tier,
        "reward_mode": view.reward_mode,
        "in_pass1": included,
        "pass@1": None if pass1 is None else round(pass1, 6),
        "n_attempts": len(attempts),
        "n_graded": len(rewards),
        "n_correct": int(sum(rewards)),
        "attempts": attempts,
    }


def _package_version() -> str | None:
    try:
        return importlib_metadata.version("smoldataenvs_tasks")
    except importlib_metadata.PackageNotFoundError:
        return None


# -- the submission ----------------------------------------------------------------------------
def build_submission(runs: Sequence[Run]) -> dict[str, Any]:
    """The submission for one model on one split: one run, or several seeds of it."""
    check_combinable(runs)
    n_runs = len(runs)
    views: dict[str, _TaskView] = {}
    for index, run in enumerate(runs):
        for task_id, attempts in run.tasks.items():
            views.setdefault(task_id, _TaskView(task_id)).add(index, attempts)
    ordered = [views[k] for k in sorted(views)]
    included = [v for v in ordered if all(v.graded_in(i) for i in range(n_runs))]
    included_ids = {v.task_id for v in included}
    excluded = [v for v in ordered if v.task_id not in included_ids]
    ungraded_reasons = Counter(_ungraded_reason(v) for v in excluded)

    versions: dict[str, str] = {}
    for run in runs:
        versions.update({k: str(v) for k, v in run.package_versions.items()})
    first = runs[0]
    overall = bootstrap_ci([v.pass1() for v in included])  # type: ignore[misc]
    seeds = None
    if n_runs > 1:
        summary = mean_and_se([run.pass1(included_ids) for run in runs])
        seeds = {"n_runs": n_runs, "n_tasks": len(included), "pass@1": summary.to_dict()}

    submission: dict[str, Any] = {
        "format": SUBMISSION_FORMAT,
        "benchmark": "SmolDataEnvs",
        "model": first.model,
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
        "n_runs": n_runs,
        "runs": [
            {
                "source": run.source,
                "framework": run.framework,
                "framework_version": run.framework_version,
                "task": run.task_name,
                "run_id": run.run_id,
                "created": run.created,
                "sandbox": run.sandbox,
                "epochs": run.epochs,
                "n_tasks": len(run.tasks),
                "n_graded": len(run.graded_task_ids()),
                "pass@1": _round(run.pass1()),
            }
            for run in runs
        ],
        "n_tasks": len(ordered),
        "n_graded": len(included),
        "n_ungraded": len(excluded),
        "ungraded_by_reason": dict(sorted(ungraded_reasons.items())),
        "pass@1": overall.to_dict(),
        "pass@1_by_tier": _estimates_by(included, lambda v: v.difficulty_tier, TIERS),
        "pass@1_by_reward_mode": _estimates_by(
            included,
            lambda v: mode_label(v.reward_mode),
            [mode_label(m) for m in KNOWN_REWARD_MODES],
        ),
        "pass@1_by_grader": _by_grader(included),
        "pass@k": _pass_k(included),
        "seeds": seeds,
        "failures": _failures(runs),
        "statistics": {
            "pass@1": "mean over tasks of each task's mean reward over its graded attempts",
            "ci": "percentile bootstrap over tasks",
            "confidence": CONFIDENCE,
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "pass@k": "unbiased estimator (Chen et al. 2021) over each task's graded attempts",
            "seeds": "mean ± standard error of per-run pass@1 over the tasks graded in every run",
        },
        "tasks": [_task_entry(v, v.task_id in included_ids) for v in ordered],
    }
    submission["sha256"] = submission_sha256(submission)
    return submission


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
