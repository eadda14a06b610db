"""Inspect sandbox provider `smoldataenvs-local` (`-T sandbox=local`): each sample in its own
`LocalSession`, which isolates NOTHING (it warns; for debugging only).

The session maps the contract's paths to temp dirs of its own and relocates every command's
argv, working directory and `PATH` (sandboxes/local.py), so the tools and scorers call it with
the contract's paths as they call every other kind; the setup step rewrites the prompts with
the session's `prompt_paths`. Inspect's own `local` provider is not used: it has none of this.
"""

from __future__ import annotations

from inspect_ai.util import sandboxenv

from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
)
from smoldataenvs_tasks.sandboxes.kinds import KINDS
from smoldataenvs_tasks.sandboxes.local import LocalSession


class LocalSandboxConfig(LimitsConfig, frozen=True):
    """The local sandbox's settings: the contract's limits (those that need no isolation apply)."""


@sandboxenv(name=KINDS["local"].provider)
class LocalSessionSandboxEnvironment(SessionSandboxEnvironment):
    kind = KINDS["local"]
    config_model = LocalSandboxConfig
    session: LocalSession
