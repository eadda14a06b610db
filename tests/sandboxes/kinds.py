"""Sandbox kinds opened the way their users open them (the hostile-program tests in tests/security
run against each; the parity test compares their verdicts).

- "bwrap", "docker": our sessions directly (`sandboxes.opening.open_session`), as lm-eval and
  `smoldataenvs validate` run programs;
- "inspect-bwrap", "inspect-docker": through the Inspect providers (`bwrap`,
  `smoldataenvs-docker`), as an Inspect eval runs them: the provider's `sample_init` with the
  sample's `stage_dir`, commands through `inspect_adapter.program_host.InspectSandboxHost` (the program
  scorer's path), files through the provider's `read_file`/`write_file` (the answer-file
  scorer's path), and the provider's `sample_cleanup` at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import ExecResult, SandboxLimits
from smoldataenvs_tasks.inspect_adapter.program_host import InspectSandboxHost
from smoldataenvs_tasks.sandboxes.base import SandboxSession
from smoldataenvs_tasks.sandboxes.opening import open_session
from tests.sandboxes.helpers import SMALL_LIMITS

KIND_NAMES = ("bwrap", "docker", "inspect-bwrap", "inspect-docker")


def engine_of(kind: str) -> str:
    """The sandbox technology behind `kind` ("bwrap" or "docker"), for skips and marks."""
    return kind.removeprefix("inspect-")


class InspectProviderSession:
    """One sample's sandbox opened through an Inspect provider, with the session methods the tests
    call; every call goes through the provider's Inspect API."""

    def __init__(self, kind: str, provider: Any, config: Any, environments: dict) -> None:
        self.kind = kind
        self.provider = provider
        self.config = config
        self.environments = environments
        self.environment = environments["default"]
        self.host = InspectSandboxHost(self.environment)

    @classmethod
    async def open(
        cls, kind: str, stage_dir: Path, limits: SandboxLimits
    ) -> InspectProviderSession:
        if kind == "inspect-bwrap":
            from smoldataenvs_tasks.inspect_adapter.bwrap_provider import (
                BwrapSandboxConfig as Config,
            )
            from smoldataenvs_tasks.inspect_adapter.bwrap_provider import (
                BwrapSandboxEnvironment as Provider,
            )
        else:
            from smoldataenvs_tasks.inspect_adapter.docker_provider import (
                DockerSandboxConfig as Config,
            )
            from smoldataenvs_tasks.inspect_adapter.docker_provider import (
                DockerSessionSandboxEnvironment as Provider,
            )
        config = Config.from_limits(limits)
        await Provider.task_init("security", config)
        environments = await Provider.sample_init("security", config, {"stage_dir": str(stage_dir)})
        return cls(kind, Provider, config, environments)

    @property
    def root(self) -> Path | None:
        """bwrap: the session's host directory (a test looks for it from another sandbox)."""
        return getattr(self.environment.session, "root", None)

    async def exec(self, argv: list[str], **options: Any) -> ExecResult:
        return await self.host.exec(argv, **options)

    async def write_file(self, path: str, contents: str | bytes) -> None:
        await self.environment.write_file(path, contents)

    async def read_file(self, path: str) -> bytes:
        return await self.environment.read_file(path, text=False)

    async def close(self) -> None:
        # Inspect's lifecycle, both ends: task_cleanup also waits for the background removal of
        # Docker containers and removes the spares no sample took.
        await self.provider.sample_cleanup("security", self.config, self.environments, False)
        await self.provider.task_cleanup("security", self.config, True)


def sandbox_uid(sandbox: Any) -> int:
    """The uid a sandbox's commands see themselves run as: 1000 in bwrap (its user namespace
    maps the session's host uid to it), the container's own host uid under our Docker provider
    (docs/sandboxes.md)."""
    session = getattr(sandbox, "environment", None)
    session = session.session if session is not None else sandbox
    return int(getattr(session, "sandbox_uid", 1000))


async def open_sandbox(
    kind: str, stage_dir: Path, *, limits: SandboxLimits = SMALL_LIMITS
) -> SandboxSession | InspectProviderSession:
    """A started sandbox of `kind` over `stage_dir`; the caller must `await sandbox.close()`."""
    if kind.startswith("inspect-"):
        return await InspectProviderSession.open(kind, stage_dir, limits)
    return await open_session(kind, stage_dir, limits=limits)
