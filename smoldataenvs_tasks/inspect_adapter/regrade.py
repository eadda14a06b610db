"""Re-grade a finished Inspect log under another grader profile, with Inspect's own scoring API:
Inspect's side of `smoldataenvs regrade`, in one place (lm-eval's is `lm_eval/regrade.py`).

Nothing runs again (no model, program or sandbox): `regrade_scorer` grades each sample's
recorded answer with the row's gold, and Inspect's `score(..., action="append")` adds its
scores beside the run's own. The new log holds both verdicts per sample, so `smoldataenvs
report` shows pass@1 under both profiles; the original log is left as it was.

    smoldataenvs regrade logs/2026-11-29T13-00-41_smoldataenvs-program_X.eval --grader strict
    python -c "from smoldataenvs_tasks.inspect_adapter.regrade import regrade_inspect_log; \
        print(regrade_inspect_log('logs/x.eval', 'strict'))"
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.inspect_adapter._compat import package_name
from smoldataenvs_tasks.inspect_adapter.scoring import SCORER_METRICS, regrade_recorded
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, GRADER_PROFILES, Verdict, versioned

# Scoring re-runs no model, but Inspect's `score` binds one to the task context: a built-in
# that needs no key, so a log of any provider re-grades offline.
_OFFLINE_MODEL = "mockllm/model"


class RegradeError(SmolDataEnvsError, ValueError):
    """A log that cannot be re-graded; the message says why."""


def verdicts_of(scores: dict[str, Score] | None) -> list[Verdict]:
    """Every SmolDataEnvs verdict among a sample's scores, the run's own first."""
    return [
        Verdict.from_dict(score.metadata)
        for score in (scores or {}).values()
        if score.metadata and "category" in score.metadata
    ]


@scorer(metrics=SCORER_METRICS, name=package_name("regrade_scorer"))
def regrade_scorer(grader: str = DEFAULT_PROFILE) -> Scorer:
    """Re-grade the answer a sample's recorded verdict holds under the `grader` profile.

    Runs no model, program or sandbox: the recorded answer (the program's last printed line, the
    answer file, the submitted value) is graded again with the row's gold, mode and tolerances.
    A sample without a recorded verdict (it errored) stays without one: unscored, no Verdict of
    its own, so the report reads why from the sample's error (docs/reporting.md).

        inspect score LOG --scorer smoldataenvs_tasks/regrade_scorer -S grader=strict \\
            --action append
    """

    async def score(state: TaskState, target: Target) -> Score:
        return await regrade_recorded(state, grader)

    return score


def default_output(log_file: Path, profile: str) -> Path:
    """`<stem>_regraded-<profile><suffix>` beside the input log."""
    return log_file.with_name(f"{log_file.stem}_regraded-{profile}{log_file.suffix}")


def regrade_inspect_log(log_file: str | Path, profile: str, out: str | Path | None = None) -> Path:
    """Write a copy of `log_file` whose samples also hold their verdicts under `profile`."""
    from inspect_ai import score
    from inspect_ai.log import read_eval_log, write_eval_log

    if profile not in GRADER_PROFILES:
        raise RegradeError(f"grader must be one of {', '.join(GRADER_PROFILES)}, not {profile!r}")
    log_file = Path(log_file)
    try:
        log = read_eval_log(str(log_file))
    except Exception as exc:  # Inspect raises several types for unreadable files
        raise RegradeError(f"{log_file.name}: not a readable Inspect log: {exc}") from None
    meta = log.eval.metadata or {}
    if meta.get("benchmark") != "SmolDataEnvs":
        raise RegradeError(f"{log_file.name}: not a SmolDataEnvs log (task {log.eval.task!r})")
    if not log.samples:
        raise RegradeError(f"{log_file.name}: the log holds no samples to re-grade")
    for sample in log.samples:
        held = {verdict.profile for verdict in verdicts_of(sample.scores)}
        if profile in held:
            raise RegradeError(
                f"{log_file.name}: sample {sample.id} already holds a verdict under the "
                f"{profile!r} grader"
            )

    regraded = score(
        log,
        scorers=[regrade_scorer(grader=profile)],
        action="append",
        model=_OFFLINE_MODEL,
        display="none",
    )
    regraded.eval.metadata = {
        **meta,
        "regraded": [
            *meta.get("regraded", []),
            {"grader": profile, "grader_version": versioned(profile)},
        ],
    }
    target = Path(out) if out is not None else default_output(log_file, profile)
    write_eval_log(regraded, str(target))
    return target
