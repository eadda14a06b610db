"""Few-shot runs of SmolDataEnvs are refused, in one line, wherever lm-eval could start one
(`--num_fewshot`, a task config, `simple_evaluate(num_fewshot=...)`).

The dataset has no shot split: lm-eval would draw shots from the evaluated split itself, with
their gold answers as assistant turns, and one shot was once the very question being asked.
"""

from __future__ import annotations

from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError


class FewShotRefused(SmolDataEnvsError, ValueError):
    """A few-shot run of SmolDataEnvs, which has no split to draw shots from."""


def fewshot_refusal(value: Any) -> str | None:
    """Why `num_fewshot` = `value` cannot run, or None for 0 / unset. The dataset has no shot
    split: lm-eval would draw shots from the evaluated split, gold answers as assistant turns,
    and one shot was once the very question being asked."""
    try:
        count = int(value) if value is not None else 0
    except (TypeError, ValueError):
        return f"--num_fewshot {value!r} is not a number; SmolDataEnvs runs with 0 shots"
    if count <= 0:
        return None
    return (
        f"--num_fewshot {count} is refused: SmolDataEnvs has no few-shot split, so the shots "
        "would come from the evaluated split with their gold answers (leaking the gold); "
        "run with --num_fewshot 0"
    )
