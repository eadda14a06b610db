"""How a command reaches a sandbox container: one `Transport` per session, chosen when its
container starts (DockerSession._start), never per call.

Two transports, and only two (docs/performance.md "Docker transports" has the measurements):

- `keeper.KeeperTransport`: where the engine is local (api.local_socket()), the container's main
  process is a keeper that forks each command as the sandbox user; the host attaches to it once.
  A command costs a fork in the container, not an engine call.
- `CliTransport` (here): `docker exec` through the docker CLI. For what the keeper cannot serve: a
  remote engine or a docker context (the CLI knows how to reach them), a container started with
  `SMOLDATAENVS_DOCKER_KEEPER=0`, and a container whose keeper died (its session switches to the
  CLI once: commands.py).

A `Command` is one command started through a transport. Its output goes to the `on_output(stream,
bytes)` given at its start as it comes (1 = stdout, 2 = stderr); `wait()` gives its exit;
`kill_group()` ends it alone in the container; `stop()` stops listening to it.

    transport = CliTransport(container_id, user="<uid>:<gid>")
    command = await transport.start(argv, workdir="/", env=[], input=None, on_output=keep)
    rc, refusal = await command.wait()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol

from smoldataenvs_tasks.sandboxes.docker.engine import CONTROL_TIMEOUT_S, docker, docker_binary

# After a command ends or is killed, its output still on the way is waited for this long.
DRAIN_S = 10.0

OnOutput = Callable[[int, bytes], None]


class Command(Protocol):
    """One command running in the container as the sandbox user."""

    # The container's keeper died while it ran (commands.py then tells a memory blow-up of the
    # sample from a broken sandbox). Only a keeper's command can report it.
    keeper_died: bool
    # The container went away while it ran: no outcome of its own, whatever it printed.
    channel_lost: bool

    async def wait(self) -> tuple[int, bytes]:
        """(exit code, b""), or (1, why) when the command could not run, worded as the docker
        CLI words the engine's refusals (engine.engine_error reads both)."""
        ...

    async def kill_group(self, pid: int | None) -> bool:
        """SIGKILL the command's process group (every command leads its own), leaving the
        container's other commands running. `pid` is the group's id from the command's marker
        line (None before it arrived). False when this transport cannot tell the group."""
        ...

    async def stop(self, *, drain: bool = True) -> None:
        """Once the command was killed in the container: take in what is still on the way
        (`drain`, up to DRAIN_S), then stop listening. Ending the command is the caller's."""
        ...


class Transport(Protocol):
    """Starts one container's commands as the sandbox user (uid and gid 1000)."""

    name: str
    # Commands inherit the sandbox's seccomp filter from what starts them (the keeper installed it
    # on itself); otherwise the exec wrapper (commands.py) loads it before the command.
    inherits_filter: bool

    async def start(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        env: Sequence[str],
        input: bytes | None,
        on_output: OnOutput,
    ) -> Command:
        """Start `argv`. Never raises for the engine's part: a container that is gone gives a
        command whose `wait()` says so."""
        ...

    async def container_up(self) -> bool:
        """Whether the container is still running, as far as this transport can tell."""
        ...

    async def close(self) -> None:
        """The container is being removed: let go of what this transport holds."""
        ...


class CliCommand:
    """A `docker exec` running through the docker CLI."""

    keeper_died = channel_lost = False  # a keeper's command's to report

    def __init__(
        self,
        transport: CliTransport,
        proc: asyncio.subprocess.Process,
        tasks: list[asyncio.Task[None]],
    ) -> None:
        self._transport = transport
        self._proc = proc
        self._tasks = tasks

    async def wait(self) -> tuple[int, bytes]:
        await self._proc.wait()
        # Drain what is left in the pipes (bounded by the caller's cap) once the client exited.
        await asyncio.wait(self._tasks, timeout=DRAIN_S)
        return self._proc.returncode if self._proc.returncode is not None else -1, b""

    async def kill_group(self, pid: int | None) -> bool:
        # The CLI's stream cannot signal the command: another exec kills its group, known by
        # its marker line only.
        if pid is None:
            return False
        with contextlib.suppress(Exception):  # the container or engine gone: nothing to kill
            await run_to_end(
                self._transport, ["/bin/sh", "-c", f"kill -KILL -{pid} 2>/dev/null; true"],
                timeout=30,
            )  # fmt: skip
        return True

    async def stop(self, *, drain: bool = True) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        await self._proc.wait()
        if drain:  # what the client read before it died is still in the pipes
            await asyncio.wait(self._tasks, timeout=DRAIN_S)
        for task in self._tasks:
            task.cancel()


class CliTransport:
    """`docker exec --user <uid>:<gid>` through the docker CLI, one client process per command;
    `user` is the container's sandbox user (session.py gives each container its own)."""

    name = "cli"
    inherits_filter = False

    def __init__(self, container_id: str, user: str) -> None:
        self.container_id = container_id
        self.user = user

    async def start(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        env: Sequence[str],
        input: bytes | None,
        on_output: OnOutput,
    ) -> CliCommand:
        env_args = [arg for variable in env for arg in ("--env", variable)]
        proc = await asyncio.create_subprocess_exec(
            docker_binary(), "exec", *(["--interactive"] if input is not None else []),
            "--user", self.user, "--workdir", workdir, *env_args, self.container_id, *argv,
            stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

        async def pump(stream: asyncio.StreamReader, number: int) -> None:
            while chunk := await stream.read(256 * 1024):
                on_output(number, chunk)

        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(input or b"")
                await proc.stdin.drain()
            proc.stdin.close()

        assert proc.stdout is not None and proc.stderr is not None
        tasks = [
            asyncio.create_task(pump(proc.stdout, 1)),
            asyncio.create_task(pump(proc.stderr, 2)),
        ]
        if input is not None:
            tasks.append(asyncio.create_task(feed()))
        return CliCommand(self, proc, tasks)

    async def container_up(self) -> bool:
        rc, out, _ = await docker(
            "inspect", "--format", "{{.State.Running}}", self.container_id, timeout=30
        )
        return rc == 0 and out.strip() == b"true"

    async def close(self) -> None:
        pass  # each command's client is its own


async def run_to_end(
    transport: Transport,
    argv: Sequence[str],
    *,
    workdir: str = "/",
    input: bytes | None = None,
    timeout: float = CONTROL_TIMEOUT_S,
) -> tuple[int, bytes, bytes]:
    """A short command of ours (a kill, a reset, a file read): (rc, stdout, stderr), with the
    engine's refusals in stderr and rc 1 as the CLI gives them. TimeoutError after `timeout`
    (the command may still run in the container: callers remove or reset it)."""
    output = {1: bytearray(), 2: bytearray()}
    command = await transport.start(
        argv, workdir=workdir, env=(), input=input,
        on_output=lambda stream, chunk: output[stream].extend(chunk),
    )  # fmt: skip
    try:
        rc, refusal = await asyncio.wait_for(command.wait(), timeout)
    except BaseException:
        await asyncio.shield(command.stop(drain=False))
        raise
    return rc, bytes(output[1]), bytes(output[2]) + refusal
