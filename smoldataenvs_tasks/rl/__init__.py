"""Train on the reward you evaluate with: TRL and verifiers on the pipeline our evals grade with.

    pip install 'smoldataenvs_tasks[rl]'

- `rl_dataset(split="train")`: the program task's prompts (what Inspect and lm-eval send), with
  `task_id`, `split`, `difficulty_tier`, `reward_mode`; never the gold; `test`/`eval` refused
  unless `allow_heldout=True`;
- `program_reward` / `make_program_reward(profile, sandbox=, concurrency=)`: TRL's reward
  function, each completion's program run in a sandbox, 1.0 / 0.0 / None (the data cannot grade
  it) by our evals' rules, the verdict categories through TRL's `log_metric`;
- `DataAnalysisEnv`: TRL's `environment_factory` for the agentic variant (`bash` tool,
  /workdir/answer.txt graded as the Inspect scorer grades it);
- `load_environment(split="train")`: a verifiers `SingleTurnEnv` on the same reward.

Importing this package imports neither trl nor verifiers (only `load_environment` needs
verifiers); torch is TRL's.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.rl.dataset import HeldOutSplitError, rl_dataset
from smoldataenvs_tasks.rl.reward import (
    ProgramReward,
    RewardInfrastructureError,
    make_program_reward,
    program_reward,
)

__all__ = [
    "DataAnalysisEnv",
    "HeldOutSplitError",
    "ProgramReward",
    "RewardInfrastructureError",
    "load_environment",
    "make_program_reward",
    "program_reward",
    "rl_dataset",
]


def __getattr__(name: str) -> Any:
    # The environment starts a thread on first use and verifiers is optional: both load on use.
    if name == "DataAnalysisEnv":
        from smoldataenvs_tasks.rl.environment import DataAnalysisEnv

        return DataAnalysisEnv
    if name == "load_environment":
        from smoldataenvs_tasks.rl.verifiers_env import load_environment

        return load_environment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
