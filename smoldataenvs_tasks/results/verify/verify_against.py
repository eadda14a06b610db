"""The checks of `smoldataenvs verify` against the verifier's own data and gold
(`VerifierData`): what a submission says of its tasks and tables against the verifier's copy
(`data`, `tables_manifest_digest`), and every answer its logs record graded again (`regrade`).

Kept apart from verifier.py, which compares the submission with itself and with its logs: these
read the maintainer's data, the one thing a submitter does not control.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from smoldataenvs_tasks.results.figures.task_outcomes import (
    TaskOutcomes,
    outcomes_from_entries,
    ungraded_reason,
)
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.model.schema import Submission
from smoldataenvs_tasks.results.verify.checks import FAIL, NOTE, OK, SKIP, Check
from smoldataenvs_tasks.results.verify.verifier_data import VerifierData
from smoldataenvs_tasks.sandboxes.kinds import KINDS, Staging
from smoldataenvs_tasks.scorers.verdict import Verdict

if TYPE_CHECKING:
    from smoldataenvs_tasks.data.rows import TaskRecord

# Sandbox kinds whose stager fetches the tables inside the sandbox: the harness never sees their
# bytes, so their runs record no table digests (docs/cluster.md). Read from the kinds' records.
REMOTE_STAGING_KINDS = tuple(
    name for name, record in KINDS.items() if record.staging is Staging.IN_SANDBOX
)


def check_manifest_digest(sub: Submission, data: VerifierData | None) -> Check:
    from smoldataenvs_tasks.data.source import filter_tasks
    from smoldataenvs_tasks.data.tables import tables_manifest_digest

    recorded = sub["tables_manifest_digest"]
    recorded_set = set(recorded) if isinstance(recorded, list) else {recorded}
    if data is None:
        return Check(
            "tables_manifest_digest",
            SKIP,
            f"the rows of split {sub['split']} at revision {sub['dataset_revision']} are not "
            "on this machine",
        )
    expected: set[str | None] = set()
    for run in sub["runs"]:
        filters = run["coverage"]["filters"]
        try:
            kept = filter_tasks(
                list(data.records.values()),
                tiers=filters["tiers"],
                reward_modes=filters["reward_modes"],
                task_ids=filters["task_ids"],
            )
        except ValueError as exc:
            return Check("tables_manifest_digest", FAIL, f"the runs' filters: {exc}")
        expected.add(tables_manifest_digest(kept, data.source))
    kind = getattr(data.source, "kind", "")
    if kind == "sample":
        status = OK if recorded_set == expected else FAIL
        words = "matches" if status == OK else f"differs from {sorted(map(str, expected))}"
        return Check("tables_manifest_digest", status, f"{words} the bundled sample's tables")
    if None in expected:
        return Check(
            "tables_manifest_digest",
            SKIP,
            "the package pins no digest for Hub splits and this machine holds no manifests of "
            "these tables",
        )
    same = "matches" if recorded_set == expected else "differs from"
    return Check(
        "tables_manifest_digest",
        NOTE,
        f"the package pins no digest for Hub splits; {same} the tables in this machine's "
        f"{kind} (buckets are mutable; each table's own sha256 is checked under `data`)",
    )


def check_data(sub: Submission, data: VerifierData) -> Check:
    """The submission against the verifier's own data (see the module docstring)."""
    pinned = data.pinned_rows
    if pinned is not None and data.n_rows != pinned:
        return Check(
            "data",
            FAIL,
            f"the verifier's copy ({data.where}) has {data.n_rows} rows of {data.split}, not the "
            f"pinned {pinned}: verify against the real split",
        )
    recorded = sub["split_sha256"]
    recorded_set = set(recorded) if isinstance(recorded, list) else {recorded}
    if recorded_set != {data.split_sha256}:
        return Check(
            "data",
            FAIL,
            f"the runs read split {data.split} from a parquet with sha256 {_shown(recorded)}, "
            f"not the verifier's {data.split_sha256[:12]}… (other rows or golds)",
        )
    n_tables = n_ungradable = 0
    remote = {
        index for index, run in enumerate(sub["runs"]) if run["sandbox"] in REMOTE_STAGING_KINDS
    }
    for task in outcomes_from_entries(sub["tasks"]):
        if task.task_id not in data.records:
            return Check(
                "data",
                FAIL,
                f"task {task.task_id}: not in the verifier's split {data.split} "
                f"({data.n_rows} tasks)",
            )
        problem, counted = _task_against_data(task, data, remote)
        if problem is not None:
            return Check("data", FAIL, f"task {task.task_id}: {problem}")
        n_tables += counted
        n_ungradable += task.ungradable
    unchecked = (
        f" ({', '.join(sub['runs'][i]['source'] for i in sorted(remote))} staged its tables "
        "inside the sandbox and records no digests)"
        if remote
        else ""
    )
    return Check(
        "data",
        OK,
        f"against {data.where}: the split's sha256 matches, every task id is in it, "
        f"{n_tables} attempt(s)' table digests match{unchecked}, and the {n_ungradable} "
        "ungradable task(s) are ungradable in the verifier's data too",
    )


def _shown(value: str | list[str] | None) -> str:
    if isinstance(value, str):
        return value[:12] + "…"
    return json.dumps(value)[:80]


def _task_against_data(
    task: TaskOutcomes, data: VerifierData, remote: set[int]
) -> tuple[str | None, int]:
    """Why a task's outcomes disagree with the verifier's data (None when they agree), and
    how many attempts' table digests were compared (the runs in `remote` staged their tables
    inside the sandbox, where no digest is taken)."""
    reason, digests = data.table_state(task.task_id)
    if task.ungradable:
        if reason is None:
            return (
                f"left out of the headline as {ungraded_reason(task)}, but the verifier's data "
                "grades it: it counts (as 0 for every attempt the run left ungraded)",
                0,
            )
        return None, 0
    if reason is not None:
        return (
            f"the verifier's data cannot grade it ({reason}), but the run counted it: get the "
            "task's data, then verify again",
            0,
        )
    compared = 0
    for attempt in task.attempts:
        if attempt.table_sha256 is None:
            if attempt.reward is not None and attempt.run not in remote:
                return (
                    f"attempt {attempt.epoch} of run {attempt.run} was graded but recorded no "
                    "table digests",
                    compared,
                )
            continue
        if dict(attempt.table_sha256) != digests:
            return (
                f"attempt {attempt.epoch} of run {attempt.run} was given tables "
                f"{_digest_text(attempt.table_sha256)}, the verifier's are "
                f"{_digest_text(digests)}",
                compared,
            )
        compared += 1
    return None, compared


def _digest_text(digests: Mapping[str, str] | None) -> str:
    if not digests:
        return "none"
    return ", ".join(f"{name} {sha[:12]}…" for name, sha in sorted(digests.items()))


def rederived_reward(verdict: Verdict, gold: TaskRecord) -> float | None:
    """The reward this package's grader gives the answer a verdict recorded, with `gold` (a
    TaskRecord: its answer, reward mode and tolerances); None when the verdict is ungraded
    (nothing to re-grade: a dataset defect is checked against the data, any other reason
    counts as 0). An answer that was never recorded (no program, a shell block, nothing
    printed) can only have earned 0."""
    from smoldataenvs_tasks.scorers.decide import verdict_for_answer

    if not verdict.graded:
        return None
    if verdict.prediction is None:
        return 0.0
    return verdict_for_answer(
        verdict.prediction,
        gold=gold.answer,
        reward_mode=gold.reward_mode,
        atol=gold.atol,
        rtol=gold.rtol,
        profile=verdict.profile,
    ).reward


def check_regrade(runs: Sequence[Run], data: VerifierData) -> Check:
    n_attempts = 0
    for run in runs:
        for task_id in sorted(run.tasks):
            record = data.records.get(task_id)
            if record is None:
                return Check("regrade", FAIL, f"task {task_id}: not in the verifier's split")
            for attempt in run.tasks[task_id].attempts:
                for verdict in (attempt.verdict, *attempt.regraded.values()):
                    if not verdict.graded:
                        continue
                    if record.invalid_row is not None:
                        return Check(
                            "regrade",
                            FAIL,
                            f"task {task_id}: graded by the run, but its row is invalid in the "
                            f"verifier's data ({record.invalid_row[:80]})",
                        )
                    expected = rederived_reward(verdict, record)
                    n_attempts += 1
                    if expected != verdict.reward:
                        return Check(
                            "regrade",
                            FAIL,
                            f"task {task_id} ({run.source}, epoch {attempt.epoch}, "
                            f"{verdict.profile} grader): the logs record reward "
                            f"{verdict.reward} ({verdict.category.value}) for the answer "
                            f"{_answer(verdict.prediction)}, which this package's grader with "
                            f"the verifier's gold scores {expected}",
                        )
    return Check(
        "regrade",
        OK,
        f"{n_attempts} recorded answer(s) re-graded with the verifier's gold: every reward matches",
    )


def _answer(prediction: str | None) -> str:
    if prediction is None:
        return "(none)"
    return repr(prediction if len(prediction) <= 60 else prediction[:57] + "...")
