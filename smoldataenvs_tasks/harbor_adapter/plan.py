"""The Harbor room's export options: checked and planned by `run_plan`, as Inspect's, lm-eval's
and the RL room's are.

A mistake gets the one line the other frameworks give, spelled for this command
(`harbor export grader=lenient is not valid: choose default, strict`).
"""

from __future__ import annotations

from collections.abc import Sequence

from smoldataenvs_tasks.run_plan import HARBOR, RunOptions, RunPlan, plan_run
from smoldataenvs_tasks.variants import AGENTIC


def plan_export(
    split: str,
    *,
    mirror: str | None = None,
    grader: str = "default",
    task_ids: Sequence[str] | None = None,
) -> RunPlan:
    """`plan_run` over `split` with the export's options: its rows, filtered, and provenance.
    Raises OptionError or RunPlanError, one line."""
    options = RunOptions.parse(
        HARBOR,
        variant=AGENTIC.name,
        split=split,
        sandbox="docker",
        mirror=mirror,
        grader=grader,
        task_ids=list(task_ids) if task_ids else None,
    )
    return plan_run(options)
