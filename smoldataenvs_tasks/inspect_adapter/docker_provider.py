"""Inspect sandbox provider `smoldataenvs-docker`: each sample in its own `DockerSession`.

What `-T sandbox=docker` runs (and `auto` where bwrap cannot): a container per sample with the
contract's limits, each command through the container's keeper (else a CLI `docker exec`), and none
of `docker compose`'s per-sample calls or Inspect's fairness sleep (docs/performance.md).
Containers come from spares (sandboxes/docker/spares.py, through sandboxes/session.SessionSource
as lm-eval's do): started ahead of their sample and removed after it. `SMOLDATAENVS_DOCKER_REUSE=1`
(or `DockerSandboxConfig(reuse=True)`) resets a finished sample's container instead (every
process killed by the keeper, every writable place emptied, then checked) and hands it to a later
sample, or removes it when the reset cannot prove it clean; off by default (docs/threat-model.md).
`-T sandbox=docker-compose` keeps Inspect's own docker provider with `resources/compose.yaml`.

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T sandbox=docker --model ...
    Task(..., sandbox=("smoldataenvs-docker", DockerSandboxConfig(memory_bytes=2**31)))

The sample's tables come from sample metadata key `stage_dir` (bind-mounted read-only at
/mnt/tables; an empty directory when absent). The reset or removal at a sample's end finishes
while the next sample starts (off every sample's path; the task's cleanup waits for all of them).
Every container carries our session label and its owner (host and pid):
containers a killed eval left behind are removed by the next run's first sandbox, by
`smoldataenvs sandbox cleanup`, or by `inspect sandbox cleanup smoldataenvs-docker`.
The Inspect API over the session is `provider_base`'s, shared with the bwrap provider; what
Inspect's conformance checks it does not pass, and why, is in docs/sandboxes.md.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from inspect_ai.util import (
    SandboxConnection,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import override

from smoldataenvs_tasks.contract import SandboxLimits
from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
    config_of,
    start_over_stage_dir,
    unavailable,
)
from smoldataenvs_tasks.sandboxes import base
from smoldataenvs_tasks.sandboxes.docker import SANDBOX_USER, DockerSession, cleanup_stale
from smoldataenvs_tasks.sandboxes.docker.engine import docker
from smoldataenvs_tasks.sandboxes.docker.image import resolve_image
from smoldataenvs_tasks.sandboxes.session import SessionSource

PROVIDER = "smoldataenvs-docker"


class DockerSandboxConfig(LimitsConfig, frozen=True):
    """The Docker sandbox's settings: the contract's limits, and the image (default: the one this
    package's Dockerfile and lock define, `smoldataenvs-sandbox:<content hash>`)."""

    image: str | None = None
    # Reset a finished sample's container and give it to a later sample (sandboxes/docker/
    # spares.py) instead of removing it. None: SMOLDATAENVS_DOCKER_REUSE=1 turns it on (off by
    # default: docs/threat-model.md says what a reset cannot give back).
    reuse: bool | None = None


def _config(config: SandboxEnvironmentConfigType | None) -> DockerSandboxConfig:
    return config_of(config, DockerSandboxConfig, PROVIDER)  # type: ignore[return-value]


@sandboxenv(name=PROVIDER)
class DockerSessionSandboxEnvironment(SessionSandboxEnvironment):
    sandbox_users = frozenset({"user", "1000", SANDBOX_USER})

    # Sessions this process started and has not closed (task_cleanup closes what is left). One
    # registry per process, as containers are: their owner label is this process.
    _open: set[DockerSession] = set()  # noqa: RUF012
    # Where sessions come from and go back to (spares, resets, removals in the background): one
    # source per image, limits and reuse setting, shared by the tasks of this process.
    _sources: dict[tuple[str | None, SandboxLimits, bool], SessionSource] = {}  # noqa: RUF012

    def __init__(
        self, session: DockerSession, owned_stage_dir: Path | None, source: SessionSource
    ) -> None:
        super().__init__(session)
        self.session: DockerSession = session
        self.owned_stage_dir = owned_stage_dir
        self.source = source  # where the session came from (told when it ends)

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return DockerSandboxConfig(**config)

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        settings = _config(config)  # a bad config fails at task start, not per sample
        try:
            await resolve_image(settings.image)
        except base.SandboxUnavailable as error:
            raise unavailable("docker", error) from error

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        source = cls._source_for(_config(config))

        async def take(stage_dir: Path) -> DockerSession:
            return await source.open(stage_dir)  # type: ignore[return-value]

        session, owned = await start_over_stage_dir(metadata, "docker", take)
        cls._open.add(session)
        return {"default": cls(session, owned, source)}

    @classmethod
    def _source_for(cls, settings: DockerSandboxConfig) -> SessionSource:
        key = (settings.image, settings.limits(), settings.reuse)
        if key not in cls._sources:
            cls._sources[key] = SessionSource(
                "docker", limits=key[1], image=settings.image, reuse=settings.reuse
            )
        return cls._sources[key]

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
            ours = environment.as_type(DockerSessionSandboxEnvironment)
            cls._open.discard(ours.session)
            owned = ours.owned_stage_dir

            def remove_owned(owned: Path | None = owned) -> None:
                if owned is not None:
                    shutil.rmtree(owned, ignore_errors=True)

            if interrupted:  # cancelled: Inspect shields this call, so finish here (no reset)
                await ours.source.end_now(ours.session, reuse=False, then=remove_owned)
            else:  # reset and kept for a later sample, or removed: off the sample's path
                ours.source.end(ours.session, then=remove_owned)

    @override
    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        sources = list(cls._sources.values())
        cls._sources.clear()
        # Every finished sample's reset or removal, then the spares no sample took.
        await asyncio.gather(*(source.aclose() for source in sources), return_exceptions=True)
        # Samples whose cleanup could not run (or failed): close them now, unless the user asked
        # to keep sandboxes (--no-sandbox-cleanup; `smoldataenvs sandbox cleanup` removes them).
        if not cleanup:
            return
        left = list(cls._open)
        cls._open.clear()
        await asyncio.gather(*(session.close() for session in left), return_exceptions=True)

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup smoldataenvs-docker [ID]`: one container, or every one whose
        eval process is gone."""
        if id is not None:
            await docker("rm", "--force", "--volumes", id)
        else:
            await asyncio.to_thread(cleanup_stale)

    @override
    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        container = self.session.container_id
        return SandboxConnection(
            type=PROVIDER,
            command=f"docker exec -it --user {SANDBOX_USER} {container} bash -l",
            container=container,
        )
