"""`DockerSession`: one sample's Docker sandbox, for lm-eval and validate directly and for Inspect
through the `smoldataenvs-docker` provider (inspect_adapter/docker_provider.py). This module is its
lifecycle: the container's start, a spare's table slot, the reset for another sample, removal.
Its commands and files are commands.py's (`ContainerCommands`, which it builds on).

One container per session, started from the sandbox image with the contract's limits; each
command goes through the container's keeper (keeper.py) where the engine is local, else it is a
`docker exec` through the CLI (transport.py: chosen here, once per container). Inspect can also
run the same image through its own docker provider with `resources/compose.yaml` (bind-mounted
tables) or `resources/compose.remote.yaml` (a stager fetches them: docs/cluster.md).

    async with await DockerSession.start(stage_dir) as session:
        result = await session.exec(["python3", "-c", "print(1)"], timeout=30)

Design notes (why, not what):
* Each container's sandbox user is a host uid of its own, claimed from the pool bwrap's sessions
  use (hostuid.py: a lock per uid, dropped when this process dies) and held until the container
  is removed: the kernel counts some things per host uid (inotify instances and watches,
  processes for RLIMIT_NPROC, pipe buffer pages, POSIX message queue bytes), and with one uid
  for every container a sample that took them all starved every other sample running beside it
  (issue 32). The in-container uid is therefore that number, not 1000 (docs/sandboxes.md);
  Inspect's stock compose provider cannot follow and stays uid 1000.
* The container's keeper process (keeper_script.py as root, or `sleep infinity` as uid 65534
  without one) is another uid than every command's, so a program's `kill -9 -1` cannot
  take the sandbox down and turn its own 0 into an ungraded sample; the same trick lets the host
  kill every user process after a timeout or an output overflow without losing the container.
* The root filesystem is read-only; /tmp, /workdir, /home/user and /home/user/input are tmpfs
  mounts (sizes in `contract.writable_dir_sizes`). Their pages count against the container's
  memory limit, so a program's files can never fill the host's disk.
* The image's init script (links the tables into the input dir, seeds Matplotlib's font cache)
  runs in the session's first command, not in an exec of its own: under Inspect the tables are
  staged after the container starts, and one command less is one fewer round trip per sample.
* A spare (spares.py: started before its sample is known) mounts an empty "slot" directory of its
  own; `use_tables(stage_dir)` names the sample's stage dir, whose tables are hard-linked into the
  slot on the host just before the first command. Read-only inside either way.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import stat
import uuid
from pathlib import Path

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, TABLES_DIR, SandboxLimits
from smoldataenvs_tasks.sandboxes import hostuid
from smoldataenvs_tasks.sandboxes.base import SandboxFailure
from smoldataenvs_tasks.sandboxes.docker import api, keeper
from smoldataenvs_tasks.sandboxes.docker.cleanup import sweep_once
from smoldataenvs_tasks.sandboxes.docker.commands import ContainerCommands
from smoldataenvs_tasks.sandboxes.docker.container import (
    container_args,
    mount_field,
    shelter_init,
)
from smoldataenvs_tasks.sandboxes.docker.engine import (
    LABEL_SESSION,
    docker,
    docker_sync,
    engine_error,
    owner_label,
)
from smoldataenvs_tasks.sandboxes.docker.image import KEEPER_USER, resolve_image
from smoldataenvs_tasks.sandboxes.docker.reset import reset_container
from smoldataenvs_tasks.sandboxes.docker.transport import CliTransport, Transport

logger = logging.getLogger(__name__)


class DockerSession(ContainerCommands):
    """One sample's Docker sandbox for callers without Inspect (kind "docker").

    `async with await DockerSession.start(stage_dir) as session:` then
    `await session.exec(["python3", "-c", "print(1)"], timeout=30)`.
    """

    kind = "docker"

    def __init__(
        self,
        container_id: str,
        *,
        image: str,
        limits: SandboxLimits,
        host_uid: hostuid.HostUid,
        transport: Transport | None = None,
    ) -> None:
        """A session over a running container whose sandbox user is `host_uid` (released when
        the container is removed); `transport` carries its commands (default: the docker CLI).
        `start` is how a container is made."""
        user = f"{host_uid.uid}:{host_uid.gid}"
        super().__init__(
            container_id,
            limits=limits,
            transport=transport or CliTransport(container_id, user),
            sandbox_uid=host_uid.uid,
        )
        self.host_uid = host_uid
        self.image = image
        # A spare's slot dir (mounted at /mnt/tables; removed at close) and the stage dir whose
        # tables go into it before the first command.
        self.slot_dir: Path | None = None
        self._tables_from: Path | None = None
        # Samples this container served before this session (recycle).
        self.uses = 0

    @classmethod
    async def start(
        cls,
        stage_dir: Path,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        image: str | None = None,
    ) -> DockerSession:
        """Start a container with `stage_dir` read-only at /mnt/tables, linked into the input dir."""
        stage_dir = Path(stage_dir).resolve()
        if not stage_dir.is_dir():
            raise SandboxFailure(f"stage dir {stage_dir} does not exist")
        mount = f"type=bind,{mount_field('source', str(stage_dir))},target={TABLES_DIR},readonly"
        image = await resolve_image(image)
        # Containers of a dead harness process go first: the uids they ran as are free again.
        await sweep_once()
        try:
            claimed = await asyncio.to_thread(hostuid.claim)
        except OSError as error:
            raise SandboxFailure(f"no host uid for the sandbox user: {error}") from error
        try:
            return await cls._run(mount, image, limits, claimed)
        except BaseException:
            claimed.release()
            raise

    @classmethod
    async def _run(
        cls,
        mount: str,
        image: str,
        limits: SandboxLimits,
        claimed: hostuid.HostUid,
    ) -> DockerSession:
        name = f"smoldataenvs-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        # The transport is chosen here, for every command of the container's life.
        socket_path = api.local_socket() if keeper.enabled() else None
        if socket_path is not None:  # commands through the keeper (keeper.py), no exec each
            keeper_flags, command = keeper.run_flags(), keeper.keeper_command(claimed.uid)
        else:
            keeper_flags = ["--user", KEEPER_USER, "--entrypoint", "/bin/sleep"]
            command = ["infinity"]
        rc, out, err = await docker(
            # No `--rm`: a container that stopped is kept until `close` removes it, so the
            # engine's record of why (container.died_of_memory) can still be read.
            "run", "--detach", "--pull", "never",
            "--name", name,
            "--label", f"{LABEL_SESSION}=1",
            "--label", owner_label(),
            "--mount", mount,
            *container_args(limits, sandbox_uid=claimed.uid),
            *keeper_flags,
            image, *command,
        )  # fmt: skip
        if rc != 0:
            message = err.decode(errors="replace").strip()
            raise engine_error(message) or SandboxFailure(f"docker run failed: {message}")
        container_id = out.decode().strip()
        try:
            sheltered = await asyncio.to_thread(shelter_init, container_id)
        except OSError as error:
            await docker("rm", "--force", container_id)
            raise SandboxFailure(
                f"cannot place the keeper in the container's cgroup: {error}"
            ) from error
        if sheltered is not None:
            logger.debug(f"container {container_id[:12]}: init not sheltered: {sheltered}")
        if socket_path is None:
            return cls(container_id, image=image, limits=limits, host_uid=claimed)
        transport = keeper.KeeperTransport(container_id, socket_path)
        session = cls(
            container_id, image=image, limits=limits, host_uid=claimed, transport=transport
        )
        try:  # attached now, while the container is a spare, not at its first command
            await transport.connect()
        except BaseException:
            await asyncio.shield(session._remove(release_uid=False))  # start() releases it
            raise
        return session

    def use_tables(self, stage_dir: Path) -> None:
        """A spare's sample: the tables of `stage_dir` appear at /mnt/tables from the first
        command on (staging may still be filling it now)."""
        if self.slot_dir is None or self._tables_from is not None or not self._needs_init:
            raise SandboxFailure("use_tables is for a spare session before its first command")
        self._tables_from = Path(stage_dir)

    def _link_tables(self) -> None:
        """Hard-link the stage dir's tables into the slot (same filesystem: siblings)."""
        assert self.slot_dir is not None and self._tables_from is not None
        for entry in os.scandir(self._tables_from):
            if not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                continue  # stage dirs hold regular files only (data/staging.py)
            target = self.slot_dir / entry.name
            try:
                os.link(entry.path, target, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as error:
                if error.errno != errno.EXDEV:
                    raise SandboxFailure(f"cannot place table {entry.name}: {error}") from error
                shutil.copyfile(entry.path, target)  # another filesystem: a read-only copy
                os.chmod(target, 0o444)

    async def _before_first_command(self) -> None:
        if self._tables_from is not None:
            await asyncio.to_thread(self._link_tables)

    async def close(self) -> None:
        """Remove the container (every process in it dies). Idempotent;
        nothing after `recycle` (the container is no longer this session's)."""
        if self._closed:
            return
        self._closed = True
        await self._remove()

    def close_sync(self) -> None:
        """`close` without an event loop (base.SandboxSession.close_sync): the container removed
        by a blocking `docker rm`. Its command channels are the event loop's: removing the
        container ends them from the other side."""
        if self._closed:
            return
        self._closed = True
        try:
            done = docker_sync("rm", "--force", "--volumes", self.container_id)
            if done.returncode != 0 and "no such container" not in done.stderr.lower():
                raise SandboxFailure(f"docker rm failed: {done.stderr.strip()}")
            self.host_uid.release()  # as _remove: only once the container is gone
        finally:
            if self.slot_dir is not None:
                shutil.rmtree(self.slot_dir, True)

    async def recycle(self) -> DockerSession | None:
        """End this session and hand its container, wiped of every trace of it (reset.py), to a
        new session for another sample; None when it cannot be proven clean (then it is removed,
        as `close` would). Only a spare's container (its tables in a slot) can be recycled.

        This session is closed from the start of the call: a late command of the old sample
        raises SandboxFailure instead of running in the next sample's sandbox."""
        if self._closed:
            return None
        self._closed = True
        reason = "its tables are a bind mount of their own" if self.slot_dir is None else None
        if self.keeper_lost:
            reason = "its keeper died"
        try:
            reason = reason or await reset_container(self.transport)
            if reason is None:
                await asyncio.to_thread(_empty_dir, self.slot_dir)
        except Exception as error:  # the engine gone, the slot unwritable: not reused
            reason = f"{type(error).__name__}: {error}"
        except BaseException:  # cancelled mid-reset: a half-wiped container is never kept
            await asyncio.shield(self._remove())
            raise
        if reason is not None:
            logger.info(f"not reusing sandbox container {self.container_id[:12]}: {reason}")
            await self._remove()
            return None
        # The container, and so its uid, passes to the next sample's session (one at a time).
        fresh = DockerSession(
            self.container_id,
            image=self.image,
            limits=self.limits,
            host_uid=self.host_uid,
            transport=self.transport,
        )
        fresh.slot_dir = self.slot_dir
        fresh.uses = self.uses + 1
        return fresh

    async def _remove(self, *, release_uid: bool = True) -> None:
        try:
            await self._close_transports()
            rc, _, err = await docker("rm", "--force", "--volumes", self.container_id)
            if rc != 0 and b"no such container" not in err.lower():
                raise SandboxFailure(f"docker rm failed: {err.decode(errors='replace').strip()}")
            # Only once the container (every process of its uid) is gone may another claim it;
            # a failed removal keeps the uid until this process ends.
            if release_uid:
                self.host_uid.release()
        finally:
            if self.slot_dir is not None:
                await asyncio.to_thread(shutil.rmtree, self.slot_dir, True)

    async def __aenter__(self) -> DockerSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def info(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "container": self.container_id[:12],
            "image": self.image,
            "enforcement": (
                f"docker cgroup limits, uid {self.sandbox_uid}, no network, read-only root"
            ),
            "oom_detection": "cgroup counter" if self._memory_events else "docker inspect",
        }


def _empty_dir(path: Path | None) -> None:
    """Unlink the entries of a table slot (hard links and read-only copies; no subdirectories)."""
    assert path is not None
    for entry in os.scandir(path):
        os.unlink(entry.path)
