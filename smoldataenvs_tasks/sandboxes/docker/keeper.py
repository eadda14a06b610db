"""Commands through the container's keeper (keeper_script.py) instead of one `docker exec` each.

Where the engine is local (api.local_socket()), a sandbox container's main process is the keeper.
The host attaches to it once (`POST /containers/{id}/attach`, a hijacked connection carrying the
container's stdin one way and its multiplexed stdout and stderr the other) and sends it each
command as a frame; the keeper forks it as the sandbox user and streams its output back. A
command then costs a fork and an exec in the container, not the ~0.075 s of engine CPU of a
`docker exec`, and a reused container's reset is one more such command (docs/performance.md).

Elsewhere (a remote engine, SMOLDATAENVS_DOCKER_API=0) the container keeps `sleep` as its keeper
and every command stays a `docker exec` through the CLI. Both give identical results
(tests/sandboxes/test_docker_keeper.py runs the same commands each way).

    flags, command = run_flags(), keeper_command()   # docker run ... <flags> image <command>
    register(container_id, socket_path)               # after `docker run`
    running = await start_command(container_id, argv, workdir="/", env=[], input=None,
                                  on_output=lambda stream, chunk: ...)
    rc, refusal = await running.wait()
    await forget(container_id)                        # when the container is removed
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import quote

from smoldataenvs_tasks.sandboxes import seccomp
from smoldataenvs_tasks.sandboxes.docker import api

logger = logging.getLogger(__name__)

KEEPER_SCRIPT = Path(__file__).with_name("keeper_script.py").read_text()
# "0" runs every command as a `docker exec` again (the containers keep `sleep` as their keeper).
KEEPER_ENV = "SMOLDATAENVS_DOCKER_KEEPER"
# The one user the keeper runs commands as (image.SANDBOX_USER); others go through `docker exec`.
RUNS_AS = "1000:1000"
# The keeper's privileges: root with only these capabilities (keeper_script.py says why each).
CAPABILITIES = ("SETUID", "SETGID", "SETPCAP")

_START, _STDIN, _STDIN_END, _FORGET, _KILL = b"S"[0], b"I"[0], b"E"[0], b"F"[0], b"K"[0]
_OUT, _ERR, _EXIT, _DIED = b"O"[0], b"R"[0], b"X"[0], b"D"[0]
_HEADER_SIZE = 9
_STDIN_PIECE = 256 * 1024
# Command numbers are unique in this process, so a channel never mistakes another's frames.
_numbers = itertools.count(1)


def _header(kind: int, number: int, size: int) -> bytes:
    return bytes([kind]) + number.to_bytes(4, "big") + size.to_bytes(4, "big")


def run_flags() -> list[str]:
    """`docker run` flags of a keeper container, after container.container_args (which drops
    every capability first)."""
    caps = [arg for cap in CAPABILITIES for arg in ("--cap-add", cap)]
    return ["--user", "0:0", "--interactive", "--entrypoint", "/bin/sh", *caps]


# The container's main process: a root shell running the keeper (isolated from anything in the
# container), then, should the keeper die, telling the host so (a "D" frame) and keeping the
# container alive. It is a few hundred KB, never the out-of-memory killer's pick.
KEEPER_SHELL = (
    'python3 -I -S -c "$1" "$2"; '
    'printf "D\\000\\000\\000\\000\\000\\000\\000\\000"; exec sleep infinity'
)
# The argv the keeper takes as "kill every process of the sandbox user" (keeper_script.py).
KILL_SANDBOX_USER = "smoldataenvs-keeper:kill-sandbox-user"


def keeper_command() -> list[str]:
    """The container's command (after the `/bin/sh` entrypoint of `run_flags`): the keeper's
    source and the seccomp filter it installs on itself before any command."""
    source = seccomp.INSTALL_SOURCE + KEEPER_SCRIPT
    return ["-c", KEEPER_SHELL, "keeper", source, seccomp.filter_program().hex()]


class KeeperExec:
    """One command running through a keeper; the interface of engine's other exec runners."""

    def __init__(
        self, channel: Channel | None, number: int, on_output: Callable[[int, bytes], None]
    ) -> None:
        self._channel = channel
        self.number = number
        self.on_output = on_output
        self.result: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        # The keeper died while this ran (the caller tells a memory blow-up from a broken sandbox).
        self.keeper_died = False
        # The channel closed while this ran (the container was removed or stopped): no outcome of
        # the command's own, whatever it printed before.
        self.channel_lost = False

    async def wait(self) -> tuple[int, bytes]:
        """(exit code, b"") or, when the command could not run, (1, why) as the CLI gives it."""
        return await asyncio.shield(self.result)

    def kill_group(self) -> bool:
        """Have the keeper SIGKILL this command's process group (it leads its own), leaving the
        container's other commands running. False when there is no keeper to ask."""
        if self._channel is None:
            return False  # refused before it started
        return self.result.done() or self._channel.kill_command(self.number)

    async def stop(self, *, drain: bool = True) -> None:
        """After the caller killed the command in the container: take in what is still on the
        way (`drain`, up to api.DRAIN_S), then stop listening (the keeper still reaps it)."""
        if drain:
            await asyncio.wait({self.result}, timeout=api.DRAIN_S)
        if not self.result.done():
            if self._channel is not None:
                self._channel.forget_command(self.number)
            self.result.set_result((-1, b""))

    @classmethod
    def refused(cls, why: str) -> KeeperExec:
        running = cls(None, 0, lambda stream, chunk: None)
        running.result.set_result((1, f"{why}\n".encode()))
        return running


class Channel:
    """One attached connection to a container's keeper, shared by all its commands."""

    def __init__(
        self, container_id: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.container_id = container_id
        self._writer = writer
        self._running: dict[int, KeeperExec] = {}
        self._inbox = bytearray()
        self._closed: str | None = None
        self._reading = asyncio.create_task(self._read(reader))

    @classmethod
    async def attach(cls, socket_path: str, container_id: str) -> Channel:
        reader, writer = await api.open_connection(socket_path)
        try:
            path = f"/containers/{quote(container_id, safe='')}/attach"
            await api.upgrade(reader, writer, f"{path}?stream=1&stdin=1&stdout=1&stderr=1")
        except BaseException:
            writer.close()
            raise
        return cls(container_id, reader, writer)

    async def start(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        env: Sequence[str],
        input: bytes | None,
        on_output: Callable[[int, bytes], None],
    ) -> KeeperExec:
        if self._closed is not None:
            return KeeperExec.refused(self._closed)
        number = next(_numbers) & 0xFFFFFFFF
        running = KeeperExec(self, number, on_output)
        self._running[number] = running
        request = {
            "argv": list(argv), "env": list(env), "workdir": workdir, "stdin": input is not None
        }  # fmt: skip
        self._send(_START, number, json.dumps(request).encode())
        if input is not None:
            for offset in range(0, len(input), _STDIN_PIECE):
                self._send(_STDIN, number, input[offset : offset + _STDIN_PIECE])
            self._send(_STDIN_END, number)
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()
        return running

    def kill_command(self, number: int) -> bool:
        if self._closed is not None:
            return False
        self._send(_KILL, number)
        return True

    def forget_command(self, number: int) -> None:
        if self._running.pop(number, None) is not None and self._closed is None:
            self._send(_FORGET, number)

    def _send(self, kind: int, number: int, payload: bytes = b"") -> None:
        self._writer.write(_header(kind, number, len(payload)) + payload)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        why = (
            f"the sandbox container {self.container_id[:12]} is gone (its keeper's channel closed)"
        )
        try:
            await api.demultiplex(reader, self._on_stream)
        except asyncio.CancelledError:
            why = "the sandbox container's keeper channel was closed"
            raise
        except Exception as error:  # every running command learns why
            why = f"{why}: {error}"
        finally:
            self._end(why)

    def _on_stream(self, stream: int, chunk: bytes) -> None:
        if stream == 2:  # the keeper's own stderr: a crash report
            logger.warning(
                f"sandbox keeper {self.container_id[:12]}: {chunk.decode(errors='replace')}"
            )
            return
        self._inbox += chunk
        inbox, at = self._inbox, 0
        while len(inbox) - at >= _HEADER_SIZE:
            size = int.from_bytes(inbox[at + 5 : at + 9], "big")
            if len(inbox) - at < _HEADER_SIZE + size:
                break
            kind = inbox[at]
            number = int.from_bytes(inbox[at + 1 : at + 5], "big")
            payload = bytes(inbox[at + _HEADER_SIZE : at + _HEADER_SIZE + size])
            at += _HEADER_SIZE + size
            self._dispatch(kind, number, payload)
        del inbox[:at]  # once per chunk: frames are small, chunks are not

    def _dispatch(self, kind: int, number: int, payload: bytes) -> None:
        if kind == _DIED:
            self._keeper_died()
            return
        running = self._running.get(number)
        if running is None:
            return  # a command we stopped listening to
        if kind == _OUT:
            running.on_output(1, payload)
        elif kind == _ERR:
            running.on_output(2, payload)
        elif kind == _EXIT:
            del self._running[number]
            outcome = json.loads(payload)
            if "rc" in outcome:
                running.result.set_result((int(outcome["rc"]), b""))
            else:
                message = f"the sandbox keeper could not start the command: {outcome['error']}"
                running.result.set_result((126, f"{message}\n".encode()))

    def _keeper_died(self) -> None:
        logger.warning(
            f"the keeper of sandbox container {self.container_id[:12]} died; its commands go "
            "through `docker exec` from now on and it will not be reused"
        )
        _keepers.pop(self.container_id, None)
        _lost.add(self.container_id)
        for running in self._running.values():
            running.keeper_died = True
        self._end(f"the keeper of sandbox container {self.container_id[:12]} died")

    def _end(self, why: str) -> None:
        if self._closed is None:
            self._closed = f"Error response from daemon: {why}"
        for running in self._running.values():
            if not running.result.done():
                running.channel_lost = not running.keeper_died
                running.result.set_result((1, f"{self._closed}\n".encode()))
        self._running.clear()

    async def close(self) -> None:
        self._end("the sandbox container's keeper channel was closed")
        self._reading.cancel()
        with contextlib.suppress(BaseException):
            await self._reading
        # Aborted, not closed: frames still unsent are for a container going away (close()
        # would wait until they were taken, by a keeper that may be gone).
        self._writer.transport.abort()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


# Containers whose keeper takes commands (socket path by container id), and their channels: one
# per event loop, since a connection belongs to the loop that opened it.
_keepers: dict[str, str] = {}
_channels: dict[tuple[str, asyncio.AbstractEventLoop], asyncio.Future[Channel]] = {}
_lost: set[str] = set()


def register(container_id: str, socket_path: str) -> None:
    _keepers[container_id] = socket_path


def enabled() -> bool:
    """Whether commands go through keepers (unless SMOLDATAENVS_DOCKER_KEEPER=0); the engine
    must also be local (api.local_socket()) for a container to get one."""
    return os.environ.get(KEEPER_ENV, "1").strip() != "0"


def takes_commands(container_id: str, user: str) -> bool:
    """Whether `user`'s commands in `container_id` go through its keeper."""
    return user == RUNS_AS and container_id in _keepers and enabled()


async def start_command(
    container_id: str,
    argv: Sequence[str],
    *,
    workdir: str,
    env: Sequence[str],
    input: bytes | None,
    on_output: Callable[[int, bytes], None],
) -> KeeperExec:
    """Start `argv` through `container_id`'s keeper (attached on first use in this event loop).
    Never raises for the engine's part: a container that is gone gives a command whose `wait()`
    says so, as a refused `docker exec` would."""
    try:
        channel = await connect(container_id)
    except (api.EngineRefused, ConnectionError) as error:
        return KeeperExec.refused(str(error))
    return await channel.start(argv, workdir=workdir, env=env, input=input, on_output=on_output)


async def connect(container_id: str) -> Channel:
    """This event loop's channel to the container's keeper, attaching once (commands started
    at the same moment share one attach). EngineRefused or ConnectionError if it cannot."""
    key = (container_id, asyncio.get_running_loop())
    attaching = _channels.get(key)
    if attaching is None or (attaching.done() and attaching.exception() is not None):
        attaching = asyncio.ensure_future(Channel.attach(_keepers[container_id], container_id))
        _channels[key] = attaching
    return await asyncio.shield(attaching)


def lost(container_id: str) -> bool:
    """Whether the container was started with a keeper that has died since."""
    return container_id in _lost


async def forget(container_id: str) -> None:
    """The container is being removed: close its channels."""
    _keepers.pop(container_id, None)
    _lost.discard(container_id)
    for key in [key for key in _channels if key[0] == container_id]:
        attaching = _channels.pop(key)
        if key[1] is not asyncio.get_running_loop():
            continue  # another loop's connection: it goes with that loop
        if not attaching.done():
            attaching.cancel()
        with contextlib.suppress(BaseException):
            await (await attaching).close()
