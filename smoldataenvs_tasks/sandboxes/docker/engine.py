"""The Docker engine, as the sandbox calls it: the CLI for managing containers, `start_exec` and
`exec_in` for commands (through the container's keeper, keeper.py, or a `docker exec` over the
Engine API's socket when the engine is local, api.py, else the CLI), one reading of errors.

Every container the package starts carries `LABEL_SESSION` and an owner label (host and pid), so
`cleanup.py` can find the ones a killed harness process left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence

from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import api, keeper

LABEL_CONTENT = "org.smoldataenvs.content-hash"
LABEL_SESSION = "org.smoldataenvs.session"
LABEL_OWNER = "org.smoldataenvs.owner"
# Docker CLI calls that manage containers (not user commands) must finish within this.
CONTROL_TIMEOUT_S = 120.0


def docker_binary() -> str:
    """Path of the docker CLI, or SandboxUnavailable saying how to get one."""
    found = shutil.which("docker")
    if found is None:
        raise SandboxUnavailable(
            "the docker sandbox needs Docker: the `docker` command was not found. Install Docker "
            "Engine >= 24 with Compose v2 (https://docs.docker.com/engine/install/; on Debian "
            "without a registry, scripts/provision-docker.sh), or use -T sandbox=bwrap."
        )
    return found


def engine_error(stderr: str) -> SandboxUnavailable | None:
    text = stderr.lower()
    if "cannot connect to the docker daemon" in text or "is the docker daemon running" in text:
        return SandboxUnavailable(
            "no Docker engine answers (`docker info` fails): start it (e.g. `sudo systemctl start "
            "docker`, or scripts/provision-docker.sh) or use -T sandbox=bwrap."
        )
    if "permission denied" in text and "docker.sock" in text:
        return SandboxUnavailable(
            "the Docker engine refused this user (permission denied on docker.sock): add the user "
            "to the `docker` group or run as root."
        )
    return None


def docker_sync(*args: str, timeout: float = CONTROL_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        [docker_binary(), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


async def docker(
    *args: str, input: bytes | None = None, timeout: float = CONTROL_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    """Run one docker CLI command (not a sandboxed program) and return (rc, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        docker_binary(),
        *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(input), timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    return proc.returncode if proc.returncode is not None else -1, out, err


class _ApiExec:
    """A `docker exec` running through the Engine API (api.py)."""

    # What only a command through a keeper can report (keeper.KeeperExec).
    keeper_died = channel_lost = False

    def __init__(self, task: asyncio.Task[int]) -> None:
        self._task = task

    async def wait(self) -> tuple[int, bytes]:
        """(exit code, b"") or, when the engine would not run it, (1, its refusal) as the CLI."""
        try:
            return await asyncio.shield(self._task), b""
        except (api.EngineRefused, ConnectionError) as error:
            return 1, f"{error}\n".encode()

    def kill_group(self) -> bool:
        """A `docker exec` cannot be killed through its stream: the caller kills the command's
        process group in the container (keeper.KeeperExec can)."""
        return False

    async def stop(self, *, drain: bool = True) -> None:
        """After the caller killed the command in the container: take in what is still on the
        way (`drain`, up to api.DRAIN_S), then cut the stream."""
        if drain:
            await asyncio.wait({self._task}, timeout=api.DRAIN_S)
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task


class _CliExec:
    """A `docker exec` running through the CLI, for engines the API path does not reach."""

    keeper_died = channel_lost = False  # as _ApiExec

    def __init__(self, proc: asyncio.subprocess.Process, tasks: list[asyncio.Task[None]]) -> None:
        self._proc = proc
        self._tasks = tasks

    async def wait(self) -> tuple[int, bytes]:
        await self._proc.wait()
        # Drain what is left in the pipes (bounded by the caller's cap) once the client exited.
        await asyncio.wait(self._tasks, timeout=api.DRAIN_S)
        return self._proc.returncode if self._proc.returncode is not None else -1, b""

    def kill_group(self) -> bool:
        return False  # as _ApiExec

    async def stop(self, *, drain: bool = True) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        await self._proc.wait()
        if drain:  # what the client read before it died is still in the pipes
            await asyncio.wait(self._tasks, timeout=api.DRAIN_S)
        for task in self._tasks:
            task.cancel()


# What start_exec returns: wait(), stop(), kill_group(), keeper_died, channel_lost.
ExecRunner = _ApiExec | _CliExec | keeper.KeeperExec


async def start_exec(
    container_id: str,
    argv: Sequence[str],
    *,
    user: str,
    workdir: str = "/",
    env: Sequence[str] = (),
    input: bytes | None = None,
    on_output: Callable[[int, bytes], None],
) -> ExecRunner:
    """Start `docker exec` of `argv` (over the engine's socket when it is local, api.py; else the
    CLI); its output goes to `on_output(stream, bytes)` (1 = stdout, 2 = stderr) as it comes.
    `await running.wait()` gives (exit code, the engine's refusal or b""); `running.stop()` cuts
    it off (the command itself keeps running in the container: callers kill it there, or have
    `running.kill_group()` do it where it can).
    A container run with a keeper (keeper.py) takes its sandbox user's commands through it."""
    if keeper.takes_commands(container_id, user):
        return await keeper.start_command(
            container_id, argv, workdir=workdir, env=env, input=input, on_output=on_output
        )
    socket_path = api.local_socket()
    if socket_path is not None:
        return _ApiExec(
            asyncio.create_task(
                api.exec_streamed(
                    socket_path, container_id, argv, user=user, workdir=workdir, env=env,
                    stdin=input, on_output=on_output,
                )
            )
        )  # fmt: skip
    env_args = [arg for variable in env for arg in ("--env", variable)]
    proc = await asyncio.create_subprocess_exec(
        docker_binary(), "exec", *(["--interactive"] if input is not None else []),
        "--user", user, "--workdir", workdir, *env_args, container_id, *argv,
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
    return _CliExec(proc, tasks)


async def exec_in(
    container_id: str,
    argv: Sequence[str],
    *,
    user: str,
    workdir: str = "/",
    input: bytes | None = None,
    timeout: float = CONTROL_TIMEOUT_S,
) -> tuple[int, bytes, bytes]:
    """`docker exec` of a short command of ours (a reset, a file read): (rc, stdout, stderr),
    with the engine's refusals in stderr and rc 1 as the CLI gives them. TimeoutError after
    `timeout` (the command may still run in the container: callers remove or reset it)."""
    output = {1: bytearray(), 2: bytearray()}
    running = await start_exec(
        container_id, argv, user=user, workdir=workdir, input=input,
        on_output=lambda stream, chunk: output[stream].extend(chunk),
    )  # fmt: skip
    try:
        rc, refusal = await asyncio.wait_for(running.wait(), timeout)
    except BaseException:
        await asyncio.shield(running.stop(drain=False))
        raise
    return rc, bytes(output[1]), bytes(output[2]) + refusal


def owner_label() -> str:
    """`LABEL_OWNER=<host>:<pid>`: which process on which machine a container or volume is for."""
    return f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"
