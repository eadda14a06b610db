"""Where the lm-eval task YAMLs live, for `lm_eval --include_path "$(smoldataenvs lm-eval-path)"`.

from smoldataenvs_tasks.lm_eval.paths import task_manager
import lm_eval
results = lm_eval.simple_evaluate(model="hf", model_args="pretrained=...",
                                  tasks=["smoldataenvs_program"], task_manager=task_manager(),
                                  confirm_run_unsafe_code=True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

TASKS_DIR = Path(__file__).parent / "tasks"


def task_manager(*, include_defaults: bool = True, include_path: Any = None, **kwargs: Any):
    """An lm-eval `TaskManager` that knows the SmolDataEnvs tasks (and, by default, lm-eval's).

    `include_defaults=False` skips indexing lm-eval's ~15,000 built-in tasks (seconds faster).
    Also registers the `replay` model.
    """
    from lm_eval.tasks import TaskManager

    import smoldataenvs_tasks.lm_eval.models  # noqa: F401  (registers `replay`)

    extra = (
        []
        if include_path is None
        else ([include_path] if isinstance(include_path, str | Path) else list(include_path))
    )
    return TaskManager(
        include_path=[str(TASKS_DIR), *map(str, extra)],
        include_defaults=include_defaults,
        **kwargs,
    )


@click.command("lm-eval-path")
def lm_eval_path_command() -> None:
    """Print the directory of the lm-eval task YAMLs (for lm_eval --include_path)."""
    click.echo(str(TASKS_DIR))
