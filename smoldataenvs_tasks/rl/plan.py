"""The RL room's run options: checked and planned by `run_plan`, as Inspect's and lm-eval's are.

A mistake gets the one line the other frameworks give, spelled for Python callers
(`rl sandbox=podman is not valid: choose bwrap, docker, local, auto`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from smoldataenvs_tasks.run_plan import Framework, RunOptions, RunPlan, plan_run
from smoldataenvs_tasks.sandboxes.kinds import SESSION_KINDS

# It runs the kinds with a session of ours, as lm-eval does.
RL = Framework("rl", "rl", sandboxes=SESSION_KINDS)
# The sandbox kind rewards and environments use unless told (`bwrap` when unset).
SANDBOX_ENV = "SMOLDATAENVS_SANDBOX"
DEFAULT_SANDBOX = "bwrap"


def configured_sandbox(sandbox: str | None = None) -> str:
    chosen = sandbox or os.environ.get(SANDBOX_ENV, "").strip() or DEFAULT_SANDBOX
    RL.choice("sandbox", chosen, RL.sandboxes)
    return chosen


def plan_split(
    split: str,
    *,
    sandbox: str | None = None,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
) -> RunPlan:
    """`plan_run` over `split` with this room's options: its rows, filtered, and provenance."""
    return plan_run(
        RunOptions.parse(
            RL,
            split=split,
            sandbox=configured_sandbox(sandbox),
            mirror=os.fspath(mirror) if mirror is not None else None,
            revision=revision,
            tiers=tiers,
            reward_modes=reward_modes,
            task_ids=task_ids,
        )
    )
