"""The Engine API from this process (sandboxes/docker/api.py): which engines it is spoken to (and so
which containers get a keeper), and the keeper's attached channel (keeper.py) at its edges, against
a small unix-socket server that answers the attach route as the engine does and then plays the
keeper: frames cut anywhere, a refusal, a dead socket, a stream cut inside a frame, the keeper's
death. No engine needed; test_docker_keeper.py runs the real thing.

    python -m pytest tests/sandboxes/test_docker_api.py -q
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import DockerSession, api
from smoldataenvs_tasks.sandboxes.docker.keeper import KeeperTransport
from smoldataenvs_tasks.sandboxes.docker.reset import reset_container
from smoldataenvs_tasks.sandboxes.docker.transport import run_to_end
from smoldataenvs_tasks.sandboxes.hostuid import HostUid
from tests.sandboxes.helpers import SMALL_LIMITS

# A uid no lock holds: these sessions' containers are a fake engine's.
UNCLAIMED = HostUid(0x7FFFFFFF)

# -- which engines ---------------------------------------------------------------------------


@pytest.fixture
def clean_engine_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No DOCKER_* settings; a docker config dir of our own. Returns a socket-like path."""
    for name in ("DOCKER_HOST", "DOCKER_CONTEXT", api.API_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    path = tmp_path / "engine.sock"
    path.touch()
    return path


def test_a_unix_docker_host_is_reached_over_the_api(clean_engine_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{clean_engine_env}")
    assert api.local_socket() == str(clean_engine_env)


@pytest.mark.parametrize(
    "host", ["tcp://10.0.0.1:2376", "ssh://user@build-box", "npipe:////./pipe/docker_engine"]
)
def test_a_remote_docker_host_keeps_the_cli(clean_engine_env: Path, monkeypatch, host) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    assert api.local_socket() is None


def test_a_missing_socket_keeps_the_cli(clean_engine_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{clean_engine_env}.gone")
    assert api.local_socket() is None


def test_a_docker_context_keeps_the_cli(clean_engine_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_CONTEXT", "build-box")
    assert api.local_socket() is None
    monkeypatch.delenv("DOCKER_CONTEXT")
    config = Path(os.environ["DOCKER_CONFIG"])
    config.mkdir()
    (config / "config.json").write_text(
        json.dumps({"currentContext": "build-box"}), encoding="utf-8"
    )
    assert api.local_socket() is None
    (config / "config.json").write_text(json.dumps({"currentContext": "default"}), encoding="utf-8")
    monkeypatch.setattr(api, "DEFAULT_SOCKET", str(clean_engine_env))
    assert api.local_socket() == str(clean_engine_env)


def test_the_api_can_be_turned_off(clean_engine_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{clean_engine_env}")
    monkeypatch.setenv(api.API_ENV, "0")
    assert api.local_socket() is None


# -- the keeper's channel, against a unix-socket server answering as the engine and the keeper --


def engine_frame(stream: int, payload: bytes) -> bytes:
    """What the engine sends on an attached connection: a stream's bytes with their header."""
    return struct.pack(">BxxxI", stream, len(payload)) + payload


def keeper_frame(kind: bytes, number: int, payload: bytes = b"") -> bytes:
    """What the keeper writes on the container's stdout (keeper_script.py's frames)."""
    return kind + number.to_bytes(4, "big") + len(payload).to_bytes(4, "big") + payload


class FakeEngine:
    """Answers `POST /containers/c1/attach` like the engine, then reads the host's frames for one
    command until its input ended and sends `reply(command number)` (the raw bytes after the
    upgrade) in `pieces` writes; the connection stays open until the host closes it, unless
    `hang_up`. `refuse` answers the attach with an error status instead."""

    def __init__(
        self,
        reply: Callable[[int], bytes],
        *,
        pieces: int = 1,
        hang_up: bool = False,
        refuse: tuple[int, str] | None = None,
    ) -> None:
        self.reply = reply
        self.pieces = pieces
        self.hang_up = hang_up
        self.refuse = refuse
        self.path = ""
        self.frames: list[tuple[bytes, int, bytes]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.path = head.decode().split(" ")[1]
        if self.refuse:
            status, message = self.refuse
            payload = json.dumps({"message": message}).encode()
            writer.write(
                f"HTTP/1.1 {status} Refused\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
            writer.close()
            return
        writer.write(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
        while True:  # the host's frames of one command, to the end of its input
            header = await reader.readexactly(9)
            kind, number = header[:1], int.from_bytes(header[1:5], "big")
            payload = await reader.readexactly(int.from_bytes(header[5:9], "big"))
            self.frames.append((kind, number, payload))
            if kind == b"E" or (kind == b"S" and not json.loads(payload)["stdin"]):
                break
        stream = self.reply(number)
        size = -(-len(stream) // self.pieces) or 1
        for start in range(0, len(stream), size):
            writer.write(stream[start : start + size])
            await writer.drain()
            await asyncio.sleep(0)
        if self.hang_up:
            writer.close()
            return
        await reader.read()  # until the host lets go of the channel
        writer.close()


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Callable[[FakeEngine], Awaitable[str]]]:
    """Starts a FakeEngine on a socket of its own; returns the socket's path."""
    servers: list[asyncio.Server] = []

    async def start(engine: FakeEngine) -> str:
        path = str(tmp_path / f"engine-{len(servers)}.sock")
        servers.append(await asyncio.start_unix_server(engine.handle, path))
        return path

    yield start
    for server in servers:
        server.close()


@pytest.mark.anyio
@pytest.mark.parametrize("pieces", [1, 7, 1000])
async def test_frames_split_anywhere_are_put_back_together_per_stream(serve, pieces: int) -> None:
    big = os.urandom(600 * 1024)  # past one read's 256 KiB

    def reply(number: int) -> bytes:
        frames = (
            keeper_frame(b"O", number, b"out-1 ")
            + keeper_frame(b"R", number, b"err-1 ")
            + keeper_frame(b"O", number, big)
            + keeper_frame(b"R", number, b"err-2")
            + keeper_frame(b"X", number, b'{"rc": 3}')
        )
        # The engine cuts the container's stdout into frames of its own, anywhere.
        return b"".join(engine_frame(1, frames[i : i + 5000]) for i in range(0, len(frames), 5000))

    engine = FakeEngine(reply, pieces=pieces)
    transport = KeeperTransport("c1", await serve(engine))
    try:
        rc, out, err = await run_to_end(transport, ["cat"], input=b"the input")
    finally:
        await transport.close()
    assert (rc, out, err) == (3, b"out-1 " + big, b"err-1 err-2")
    assert engine.path == "/containers/c1/attach?stream=1&stdin=1&stdout=1&stderr=1"
    kinds = [kind for kind, _, _ in engine.frames]
    assert kinds == [b"S", b"I", b"E"]
    assert json.loads(engine.frames[0][2])["argv"] == ["cat"]
    assert engine.frames[1][2] == b"the input"


@pytest.mark.anyio
async def test_a_stream_cut_inside_a_frame_loses_the_command_not_a_short_output(serve) -> None:
    def reply(number: int) -> bytes:
        return engine_frame(1, keeper_frame(b"O", number, b"0123456789"))[:-3]

    transport = KeeperTransport("c1", await serve(FakeEngine(reply, hang_up=True)))
    try:
        command = await transport.start(
            ["true"], workdir="/", env=[], input=None, on_output=lambda stream, chunk: None
        )
        rc, why = await command.wait()
    finally:
        await transport.close()
    assert command.channel_lost and not command.keeper_died
    assert rc == 1 and b"cut an output frame short" in why


@pytest.mark.anyio
async def test_a_refused_attach_reads_like_the_cli_and_is_a_lost_sandbox(serve) -> None:
    path = await serve(FakeEngine(lambda number: b"", refuse=(404, "No such container: c1")))
    transport = KeeperTransport("c1", path)
    try:
        assert await run_to_end(transport, ["true"]) == (
            1, b"", b"Error response from daemon: No such container: c1\n"
        )  # fmt: skip
        session = DockerSession(
            "c1", image="unused", limits=SMALL_LIMITS, host_uid=UNCLAIMED, transport=transport
        )
        with pytest.raises(SandboxFailure, match="No such container: c1"):
            await session.exec(["true"])
    finally:
        await transport.close()


@pytest.mark.anyio
async def test_a_socket_nobody_listens_on_is_an_unreachable_engine(tmp_path: Path) -> None:
    path = tmp_path / "dead.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))  # bound, never listening: connections are refused
    transport = KeeperTransport("c1", str(path))
    try:
        rc, _, err = await run_to_end(transport, ["true"])
        assert rc == 1 and b"Cannot connect to the Docker daemon" in err
        session = DockerSession(
            "c1", image="unused", limits=SMALL_LIMITS, host_uid=UNCLAIMED, transport=transport
        )
        with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
            await session.exec(["true"])
    finally:
        await transport.close()
        dead.close()


@pytest.mark.anyio
async def test_when_the_keeper_dies_the_session_switches_to_the_cli_once_and_is_never_reset(
    serve,
) -> None:
    def reply(number: int) -> bytes:
        died = b"D" + bytes(8)  # what the container's main shell sends once the keeper is gone
        return engine_frame(1, keeper_frame(b"R", number, b"partial") + died)

    transport = KeeperTransport("c1", await serve(FakeEngine(reply)))
    session = DockerSession(
        "c1", image="unused", limits=SMALL_LIMITS, host_uid=UNCLAIMED, transport=transport
    )
    try:
        assert session.transport is transport and not session.keeper_lost
        command = await transport.start(
            ["true"], workdir="/", env=[], input=None, on_output=lambda stream, chunk: None
        )
        await command.wait()
        assert command.keeper_died and not command.channel_lost and transport.died
        assert session.keeper_lost
        after = session.transport
        assert after.name == "cli" and not after.inherits_filter
        assert session.transport is after  # switched once, not per call
        assert await reset_container(transport) is not None  # a dead keeper resets nothing
        assert await reset_container(after) is not None  # nor does a container without one
    finally:
        await transport.close()
