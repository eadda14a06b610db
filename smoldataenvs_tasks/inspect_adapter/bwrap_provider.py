"""Inspect sandbox provider `bwrap`: each sample in its own `BwrapSession`.

Registered through the package's `inspect_ai` entry point (`_registry.py` imports this module),
so a task can say `sandbox=("bwrap", BwrapSandboxConfig(...))` or `sandbox="bwrap"`. The sample's
tables come from sample metadata key `stage_dir` (a host directory of the sample's tables; an
empty one is used when absent).

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T sandbox=bwrap --model ...

The Inspect API over the session (timeouts, output cap, users, paths) is `provider_base`'s,
shared with the Docker provider; what Inspect's conformance checks this provider does not pass,
and why, is listed in docs/sandboxes.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from inspect_ai.util import SandboxEnvironment, SandboxEnvironmentConfigType, sandboxenv
from pydantic import BaseModel
from typing_extensions import override

from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
    config_of,
    start_over_stage_dir,
    unavailable,
)
from smoldataenvs_tasks.sandboxes import base
from smoldataenvs_tasks.sandboxes.bwrap import SANDBOX_UID, BwrapSession, probe_bwrap


class BwrapSandboxConfig(LimitsConfig, frozen=True):
    """The bwrap sandbox's settings: the contract's limits."""


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SessionSandboxEnvironment):
    sandbox_users = frozenset({"user", str(SANDBOX_UID)})

    def __init__(self, session: BwrapSession, owned_stage_dir: Path | None = None) -> None:
        super().__init__(session)
        self.session: BwrapSession = session
        self.owned_stage_dir = owned_stage_dir

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return BwrapSandboxConfig(**config)

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        import asyncio

        from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

        config_of(config, BwrapSandboxConfig, "bwrap")  # a bad config fails at task start
        try:
            probe_bwrap()
            await asyncio.to_thread(ensure_env)  # minutes once; then instant
        except base.SandboxUnavailable as error:
            raise unavailable("bwrap", error) from error

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        limits = config_of(config, BwrapSandboxConfig, "bwrap").limits()
        session, owned = await start_over_stage_dir(
            metadata, "bwrap", lambda stage_dir: BwrapSession.start(stage_dir, limits=limits)
        )
        return {"default": cls(session, owned)}

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup bwrap`: what sessions of dead eval processes left (session
        directories and their mounts, cgroups, empty stage dirs; sandboxes/leftovers.py). A
        session of a live process is its own to end; `id` names nothing more here."""
        import asyncio

        from smoldataenvs_tasks.sandboxes import leftovers

        for line in await asyncio.to_thread(leftovers.sweep_stale):
            print(f"removed {line}")

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            ours = environment.as_type(BwrapSandboxEnvironment)
            try:
                await ours.session.close()
            finally:
                if ours.owned_stage_dir is not None:
                    shutil.rmtree(ours.owned_stage_dir, ignore_errors=True)
