"""SmolDataEnvs as native Inspect AI and lm-evaluation-harness tasks.

The Inspect tasks, for Python:

    from inspect_ai import eval
    from smoldataenvs_tasks import smoldataenvs_program
    eval(smoldataenvs_program(split="sample"), model="replay/gold",
         model_args={"path": "smoldataenvs_tasks/sample/replays/gold_program.jsonl"})

`grade` is a drop-in for the dataset's own `grader.grade`:

    >>> from smoldataenvs_tasks import grade
    >>> grade("5768.04", "5768", reward_mode="numeric", abs_tol=0.05, rel_tol=0.01).reward
    1.0
"""

import importlib.util
from typing import Any

from smoldataenvs_tasks.scorers.grader import GradeResult, grade
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION, Category, Verdict

__all__ = [
    "GRADER_VERSION",
    "Category",
    "GradeResult",
    "Verdict",
    "grade",
    "smoldataenvs",
    "smoldataenvs_program",
]

_INSPECT_TASKS = ("smoldataenvs", "smoldataenvs_program")

if importlib.util.find_spec("verifiers") is not None:
    # verifiers 0.4's `vf-eval smoldataenvs-tasks` runs the one Taskset subclass this package's
    # `__all__` lists; listed only where verifiers is installed, so `import *` works without it.
    __all__ += ["SmolDataEnvsTaskset"]


def __getattr__(name: str) -> Any:
    # The tasks import Inspect: only when asked for, so `smoldataenvs grade` and lm-eval stay light.
    if name in _INSPECT_TASKS:
        from smoldataenvs_tasks.inspect_adapter import tasks

        return getattr(tasks, name)
    if name == "load_environment":
        # verifiers finds an environment by importing the name its users type
        # (`vf.load_environment("smoldataenvs_tasks")`, `vf-eval smoldataenvs-tasks`) and calling
        # that module's load_environment: the RL room's, loaded only when asked for.
        from smoldataenvs_tasks.rl.verifiers_env import load_environment

        return load_environment
    if name == "SmolDataEnvsTaskset":
        from smoldataenvs_tasks.rl.verifiers_v1 import SmolDataEnvsTaskset

        return SmolDataEnvsTaskset
    raise AttributeError(f"module 'smoldataenvs_tasks' has no attribute {name!r}")
