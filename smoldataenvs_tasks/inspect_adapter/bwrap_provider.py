"""Inspect sandbox provider `bwrap`: each sample in its own `BwrapSession`.

Registered through the package's `inspect_ai` entry point (`_registry.py` imports this module),
so a task can say `sandbox=("bwrap", BwrapSandboxConfig(...))` or `sandbox="bwrap"`. The sample's
tables come from sample metadata key `stage_dir` (a host directory of the sample's tables; an
empty one is used when absent).

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T sandbox=bwrap --model ...

The lifecycle (prerequisites: bwrap runs here and the locked environment is built; cleanup:
`inspect sandbox cleanup bwrap` sweeps what dead eval processes left) comes from the kind's
record (`sandboxes/kinds.py`), the Inspect API over the session from `provider_base`, shared with
the other providers; what Inspect's conformance checks this provider does not pass, and why, is
listed in docs/sandboxes.md.
"""

from __future__ import annotations

from typing import ClassVar

from inspect_ai.util import sandboxenv

from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
)
from smoldataenvs_tasks.sandboxes.bwrap import SANDBOX_UID, BwrapSession
from smoldataenvs_tasks.sandboxes.kinds import KINDS


class BwrapSandboxConfig(LimitsConfig, frozen=True):
    """The bwrap sandbox's settings: the contract's limits."""


@sandboxenv(name=KINDS["bwrap"].provider)
class BwrapSandboxEnvironment(SessionSandboxEnvironment):
    kind = KINDS["bwrap"]
    config_model = BwrapSandboxConfig
    sandbox_users: ClassVar[frozenset[str]] = frozenset({"user", str(SANDBOX_UID)})
    session: BwrapSession
