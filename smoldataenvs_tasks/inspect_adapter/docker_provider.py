"""Inspect sandbox provider `smoldataenvs-docker`: each sample in its own `DockerSession`.

What `-T sandbox=docker` runs (and `auto` where bwrap cannot): a container per sample with the
contract's limits, each command through the container's keeper (else a CLI `docker exec`), and
none of `docker compose`'s per-sample calls or Inspect's fairness sleep (docs/performance.md).
Containers come from spares (sandboxes/docker/spares.py, through sandboxes/opening.SessionSource
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
The lifecycle and the Inspect API over the session are `provider_base`'s, shared with the other
providers; what Inspect's conformance checks it does not pass, and why, is in docs/sandboxes.md.
Importing this module (the entry point does, to register the provider) loads no Docker module:
they load when a task first uses the provider, so a bwrap run never imports them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from inspect_ai.util import SandboxConnection, sandboxenv
from typing_extensions import override

from smoldataenvs_tasks.inspect_adapter.provider_base import (
    LimitsConfig,
    SessionSandboxEnvironment,
)
from smoldataenvs_tasks.sandboxes.kinds import KINDS
from smoldataenvs_tasks.sandboxes.opening import SessionSource

if TYPE_CHECKING:
    from smoldataenvs_tasks.sandboxes.docker import DockerSession

PROVIDER = KINDS["docker"].provider


class DockerSandboxConfig(LimitsConfig, frozen=True):
    """The Docker sandbox's settings: the contract's limits, and the image (default: the one this
    package's Dockerfile and lock define, `smoldataenvs-sandbox:<content hash>`)."""

    image: str | None = None
    # Reset a finished sample's container and give it to a later sample (sandboxes/docker/
    # spares.py) instead of removing it. None: SMOLDATAENVS_DOCKER_REUSE=1 turns it on (off by
    # default: docs/threat-model.md says what a reset cannot give back).
    reuse: bool | None = None


@sandboxenv(name=PROVIDER)
class DockerSessionSandboxEnvironment(SessionSandboxEnvironment):
    kind = KINDS["docker"]
    config_model = DockerSandboxConfig
    session: DockerSession

    @property
    def sandbox_users(self) -> frozenset[str]:  # type: ignore[override]
        # The contract's names of the sandbox user, and the container's own uid it runs as.
        session = self.session
        return frozenset({"user", "1000", str(session.sandbox_uid), session.sandbox_user})

    @classmethod
    async def check_prerequisites(cls, settings: LimitsConfig) -> None:
        # At task_init, where Inspect's display steps aside: this package's image is built here
        # when missing (its steps on stderr, as Inspect's compose builds), once per process.
        from smoldataenvs_tasks.sandboxes.docker.image import resolve_image

        await resolve_image(_docker(settings).image)

    @classmethod
    def source_key(cls, settings: LimitsConfig) -> Any:
        # One source per image, limits and reuse setting, shared by the tasks of this process.
        docker = _docker(settings)
        return (docker.image, docker.limits(), docker.reuse)

    @classmethod
    def new_source(cls, settings: LimitsConfig) -> SessionSource:
        docker = _docker(settings)
        return SessionSource(
            cls.kind.name,
            limits=docker.limits(),
            settings={"image": docker.image, "reuse": docker.reuse},
        )

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup smoldataenvs-docker [ID]`: one container, or every one whose
        eval process is gone."""
        if id is not None:
            from smoldataenvs_tasks.sandboxes.docker.engine import docker

            await docker("rm", "--force", "--volumes", id)
        else:
            await asyncio.to_thread(cls.kind.sweep)

    @override
    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        container = self.session.container_id
        return SandboxConnection(
            type=PROVIDER,
            command=f"docker exec -it --user {self.session.sandbox_user} {container} bash -l",
            container=container,
        )


def _docker(settings: LimitsConfig) -> DockerSandboxConfig:
    # `settings()` builds the provider's config_model, so this is a DockerSandboxConfig.
    return cast(DockerSandboxConfig, settings)
