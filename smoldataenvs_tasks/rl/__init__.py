"""Train on the reward you evaluate with: TRL and verifiers on the pipeline our evals grade with.

    pip install 'smoldataenvs_tasks[rl]'

- `rl_dataset(split="train")`: the program task's prompts (what Inspect and lm-eval send), with
  `task_id`, `split`, `difficulty_tier`, `reward_mode`; never the gold; `test`/`eval` refused
  unless `allow_heldout=True`;
- `program_reward` / `make_program_reward(profile, sandbox=, concurrency=)`: TRL's reward
  function, each completion's program run in a sandbox, 1.0 / 0.0 / None (the data cannot grade
  it) by our evals' rules, the verdict categories through TRL's `log_metric`;
- `DataAnalysisEnv`: TRL's `environment_factory` for the agentic variant (`bash` tool,
  /workdir/answer.txt graded as the Inspect scorer grades it); `check_tool_calling(tokenizer)`
  says, before training, whether TRL can parse the model's tool calls;
- `ProvenanceCallback`: logs the rewards' `RunProvenance` (data, grader, sandbox) into TRL's
  log history, as evaluations record it (`ProgramReward` also does it itself);
- `load_environment(split="train")`: a verifiers `SingleTurnEnv` on the same reward.

Every row names its split, mirror and revision; rewards and environments grade each row against
the data it names.

Importing this package imports neither trl nor verifiers (only `load_environment` needs
verifiers); torch is TRL's.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.rl.dataset import HeldOutSplitError, rl_dataset
from smoldataenvs_tasks.rl.reward import (
    ProgramReward,
    RewardInfrastructureError,
    SourceMismatchError,
    make_program_reward,
    program_reward,
)
from smoldataenvs_tasks.rl.tool_calling import ToolCallingError, check_tool_calling

__all__ = [
    "DataAnalysisEnv",
    "HeldOutSplitError",
    "ProgramReward",
    "ProvenanceCallback",
    "RewardInfrastructureError",
    "SourceMismatchError",
    "ToolCallingError",
    "check_tool_calling",
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
    if name == "ProvenanceCallback":
        from smoldataenvs_tasks.rl.provenance import callback_class

        return callback_class()
    if name == "load_environment":
        from smoldataenvs_tasks.rl.verifiers_env import load_environment

        return load_environment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
