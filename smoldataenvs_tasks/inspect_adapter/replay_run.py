"""Run the agentic task in-process over a replay file (recorded trajectories), for callers that
certify an environment without a model (`smoldataenvs validate --replay <agentic.jsonl>`).

    from smoldataenvs_tasks.inspect_adapter.replay_run import replay_agentic
    log = replay_agentic("gold_agentic.jsonl", log_dir="logs", split="sample", sandbox="bwrap")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from smoldataenvs_tasks.errors import SmolDataEnvsError


class AgenticRunFailed(SmolDataEnvsError, RuntimeError):
    """The in-process Inspect run did not finish (no log, or an errored eval)."""


def replay_agentic(
    replay: str | Path,
    *,
    log_dir: str | Path,
    split: str,
    sandbox: str,
    mirror: str | None = None,
    revision: str | None = None,
    task_ids: Sequence[str] | None = None,
    max_samples: int | None = None,
) -> str:
    """Evaluate `smoldataenvs` with the `replay` model playing `replay`; the log's location."""
    from inspect_ai import eval as inspect_eval

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs

    task = smoldataenvs(
        split=split,
        mirror=mirror,
        revision=revision,
        sandbox=sandbox,
        task_ids=list(task_ids) if task_ids is not None else None,
    )
    logs = inspect_eval(
        task,
        model="replay/validate",
        model_args={"path": str(replay)},
        log_dir=str(log_dir),
        display="none",
        fail_on_error=False,
        max_samples=max_samples,
    )
    if not logs or logs[0].location is None:
        raise AgenticRunFailed("the Inspect agentic run produced no log")
    if logs[0].status != "success":
        error = logs[0].error.message if logs[0].error else logs[0].status
        raise AgenticRunFailed(f"the Inspect agentic run failed: {error}")
    return logs[0].location
