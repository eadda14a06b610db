"""`KeeperTransport`: commands through the container's keeper (keeper_script.py) instead of one
`docker exec` each (transport.py has the other transport and the protocol both keep).

Where the engine is local (api.local_socket()), a sandbox container's main process is the keeper.
The host attaches to it once (`POST /containers/{id}/attach`, a hijacked connection carrying the
container's stdin one way and its multiplexed stdout and stderr the other) and sends it each
command as a frame; the keeper forks it as the sandbox user and streams its output back. A
command then costs a fork and an exec in the container, not the ~0.075 s of engine CPU of a
`docker exec`, and a reused container's reset is one more such command (docs/performance.md).

Elsewhere (a remote engine, SMOLDATAENVS_DOCKER_KEEPER=0 or SMOLDATAENVS_DOCKER_API=0) the
container keeps `sleep` as its keeper and every command is a `docker exec` through the CLI. Both
give identical results (tests/sandboxes/test_docker_keeper.py runs the same commands each way).

    flags, command = run_flags(), keeper_command(uid)   # docker run ... <flags> image <command>
    transport = KeeperTransport(container_id, socket_path)   # after `docker run`
    command = await transport.start(argv, workdir="/", env=[], input=None,
                                    on_output=lambda stream, chunk: ...)
    rc, refusal = await command.wait()
    await transport.close()                           # when the container is removed
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
from smoldataenvs_tasks.sandboxes.docker.transport import DRAIN_S, OnOutput

logger = logging.getLogger(__name__)


def container_script(name: str) -> str:
    """The source `python3 -I -S -c` runs in the container for the script `name` of this folder:
    the /proc walk the keeper and the reset share (proc_walk.py), then the script's own."""
    return "\n\n".join(
        Path(__file__).with_name(part).read_text(encoding="utf-8")
        for part in ("proc_walk.py", name)
    )


KEEPER_SCRIPT = container_script("keeper_script.py")
# "0": containers start without a keeper (`sleep` in its place), their commands `docker exec`s.
KEEPER_ENV = "SMOLDATAENVS_DOCKER_KEEPER"
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
    'python3 -I -S -c "$1" "$2" "$3"; '
    'printf "D\\000\\000\\000\\000\\000\\000\\000\\000"; exec sleep infinity'
)
# The argv the keeper takes as "kill every process of the sandbox user" (keeper_script.py).
KILL_SANDBOX_USER = "smoldataenvs-keeper:kill-sandbox-user"


def keeper_command(sandbox_uid: int) -> list[str]:
    """The container's command (after the `/bin/sh` entrypoint of `run_flags`): the keeper's
    source, the seccomp filter it installs on itself before any command, and the uid its
    commands run as (the container's own: session.py)."""
    source = seccomp.INSTALL_SOURCE + KEEPER_SCRIPT
    return ["-c", KEEPER_SHELL, "keeper", source, seccomp.filter_program().hex(), str(sandbox_uid)]


class KeeperCommand:
    """One command running through a keeper (a transport.Command)."""

    def __init__(self, channel: Channel | None, number: int, on_output: OnOutput) -> None:
        self._channel = channel
        self.number = number
        self.on_output = on_output
        self.result: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self.keeper_died = False
        self.channel_lost = False

    async def wait(self) -> tuple[int, bytes]:
        return await asyncio.shield(self.result)

    async def kill_group(self, pid: int | None) -> bool:
        # The keeper knows the group it started; the marker's pid is not needed.
        if self._channel is None:
            return False  # refused before it started
        return self.result.done() or self._channel.kill_command(self.number)

    async def stop(self, *, drain: bool = True) -> None:
        # The keeper still reaps it; only our listening ends here.
        if drain:
            await asyncio.wait({self.result}, timeout=DRAIN_S)
        if not self.result.done():
            if self._channel is not None:
                self._channel.forget_command(self.number)
            self.result.set_result((-1, b""))

    @classmethod
    def refused(cls, why: str) -> KeeperCommand:
        command = cls(None, 0, lambda stream, chunk: None)
        command.result.set_result((1, f"{why}\n".encode()))
        return command


class Channel:
    """One attached connection to a container's keeper, shared by all its commands."""

    def __init__(
        self,
        container_id: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_keeper_died: Callable[[], None],
    ) -> None:
        self.container_id = container_id
        self._on_keeper_died = on_keeper_died
        self._writer = writer
        self._running: dict[int, KeeperCommand] = {}
        self._inbox = bytearray()
        self._closed: str | None = None
        self._reading = asyncio.create_task(self._read(reader))

    @classmethod
    async def attach(
        cls, socket_path: str, container_id: str, on_keeper_died: Callable[[], None]
    ) -> Channel:
        reader, writer = await api.open_connection(socket_path)
        try:
            path = f"/containers/{quote(container_id, safe='')}/attach"
            await api.upgrade(reader, writer, f"{path}?stream=1&stdin=1&stdout=1&stderr=1")
        except BaseException:
            writer.close()
            raise
        return cls(container_id, reader, writer, on_keeper_died)

    async def start(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        env: Sequence[str],
        input: bytes | None,
        on_output: OnOutput,
    ) -> KeeperCommand:
        if self._closed is not None:
            return KeeperCommand.refused(self._closed)
        number = next(_numbers) & 0xFFFFFFFF
        running = KeeperCommand(self, number, on_output)
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
        self._on_keeper_died()
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


def enabled() -> bool:
    """Whether new containers get a keeper (unless SMOLDATAENVS_DOCKER_KEEPER=0); the engine must
    also be local (api.local_socket()). Read when a container starts, never per command."""
    return os.environ.get(KEEPER_ENV, "1").strip() != "0"


class KeeperTransport:
    """A keeper container's commands (a transport.Transport): one attached channel per event
    loop, shared by all its commands, since a connection belongs to the loop that opened it."""

    name = "keeper"
    inherits_filter = True  # the keeper installed the sandbox's seccomp filter on itself

    def __init__(self, container_id: str, socket_path: str) -> None:
        self.container_id = container_id
        self.socket_path = socket_path
        # The keeper died (a "D" frame): its session goes on through `docker exec` (commands.py)
        # and the container is never reset for another sample (reset.py).
        self.died = False
        self._channels: dict[asyncio.AbstractEventLoop, asyncio.Future[Channel]] = {}

    def _keeper_died(self) -> None:
        self.died = True

    async def start(
        self,
        argv: Sequence[str],
        *,
        workdir: str,
        env: Sequence[str],
        input: bytes | None,
        on_output: OnOutput,
    ) -> KeeperCommand:
        """Start `argv` through the keeper (attached on first use in this event loop). Never
        raises for the engine's part: a container that is gone gives a command whose `wait()`
        says so, as a refused `docker exec` would."""
        try:
            channel = await self.connect()
        except (api.EngineRefused, ConnectionError) as error:
            return KeeperCommand.refused(str(error))
        return await channel.start(argv, workdir=workdir, env=env, input=input, on_output=on_output)

    async def connect(self) -> Channel:
        """This event loop's channel to the keeper, attaching once (commands started at the same
        moment share one attach). EngineRefused or ConnectionError if it cannot."""
        loop = asyncio.get_running_loop()
        attaching = self._channels.get(loop)
        if attaching is None or (attaching.done() and attaching.exception() is not None):
            attaching = asyncio.ensure_future(
                Channel.attach(self.socket_path, self.container_id, self._keeper_died)
            )
            self._channels[loop] = attaching
        return await asyncio.shield(attaching)

    async def container_up(self) -> bool:
        # The channel is open: a removed or stopped container closes it, which the command that
        # asks would have reported (channel_lost).
        return True

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for loop, attaching in channels.items():
            if loop is not asyncio.get_running_loop():
                continue  # another loop's connection: it goes with that loop
            if not attaching.done():
                attaching.cancel()
            with contextlib.suppress(BaseException):
                await (await attaching).close()
