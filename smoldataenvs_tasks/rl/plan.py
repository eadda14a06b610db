"""The RL room's run options: checked and planned by `run_plan`, as Inspect's and lm-eval's are.

A mistake gets the one line the other frameworks give, spelled for Python callers
(`rl sandbox=podman is not valid: choose bwrap, docker, local, auto`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.run_plan import RL, RunOptions, RunPlan, plan_run
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE
from smoldataenvs_tasks.variants import PROGRAM

# The sandbox kind rewards and environments use unless told (`bwrap` when unset).
ENV_SANDBOX = "SMOLDATAENVS_SANDBOX"
DEFAULT_SANDBOX = "bwrap"


def configured_sandbox(sandbox: str | None = None) -> str:
    chosen = sandbox or os.environ.get(ENV_SANDBOX, "").strip() or DEFAULT_SANDBOX
    RL.choice("sandbox", chosen, RL.sandboxes)
    return chosen


def plan_split(
    split: str,
    *,
    variant: str = PROGRAM.name,
    sandbox: str | None = None,
    mirror: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    tiers: str | Sequence[str] | None = None,
    reward_modes: str | Sequence[str] | None = None,
    task_ids: str | Sequence[str] | None = None,
    grader: str = DEFAULT_PROFILE,
) -> RunPlan:
    """`plan_run` over `split` with this room's options: its rows, filtered, its provenance and
    the protocol `variant` (a name in `variants.VARIANTS`) declares."""
    options = RunOptions.parse(
        RL,
        variant=variant,
        split=split,
        sandbox=configured_sandbox(sandbox),
        mirror=os.fspath(mirror) if mirror is not None else None,
        revision=revision,
        tiers=tiers,
        reward_modes=reward_modes,
        task_ids=task_ids,
        grader=grader,
    )
    try:
        return plan_run(options)
    except SmolDataEnvsError as error:
        spelled = _for_python(error)
        if spelled is error:
            raise
        raise spelled from None


# How the layers below tell Inspect's and lm-eval's users to name a mirror or a sandbox; a Python
# caller of this room passes either as an argument instead.
_FRAMEWORK_MIRROR_HINT = (
    "`-T mirror=DIR` (lm-eval: `--metadata mirror=DIR`; or SMOLDATAENVS_MIRROR=DIR)"
)
_PYTHON_MIRROR_HINT = (
    "`mirror=DIR` to rl_dataset and to the reward or DataAnalysisEnv (or SMOLDATAENVS_MIRROR=DIR)"
)
_FRAMEWORK_SANDBOX_HINT = "-T sandbox=bwrap"
_PYTHON_SANDBOX_HINT = f'sandbox="bwrap" (or {ENV_SANDBOX}=bwrap)'
_PYTHON_SPELLINGS = (
    (_FRAMEWORK_MIRROR_HINT, _PYTHON_MIRROR_HINT),
    (_FRAMEWORK_SANDBOX_HINT, _PYTHON_SANDBOX_HINT),
)


def spelled_for_python(text: str) -> str:
    """`text` with its advice spelled for this room's callers (`mirror=DIR`, `sandbox="bwrap"`,
    not `-T`)."""
    for framework_hint, python_hint in _PYTHON_SPELLINGS:
        text = text.replace(framework_hint, python_hint)
    return text


def _for_python(error: SmolDataEnvsError) -> SmolDataEnvsError:
    """The same error, its advice spelled for this room's callers."""
    text = str(error)
    spelled = spelled_for_python(text)
    if spelled == text:
        return error
    try:
        return type(error)(spelled)
    except TypeError:  # an error class that is not built from its message alone
        return error
