"""`docker exec` over the Engine API socket (sandboxes/docker/api.py) against the CLI it replaces.

Three parts: which engines the API path is used for (no engine needed); the protocol's edges
(frames cut anywhere, an exit code recorded late, a refusal, a dead socket) against a small
unix-socket server speaking the same routes; and a real engine, where every command must give
the same ExecResult through the API as through the CLI.

    python -m pytest tests/sandboxes/test_docker_api.py -q
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import struct
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import DockerSession, api, keeper
from smoldataenvs_tasks.sandboxes.docker.engine import exec_in
from tests.sandboxes.helpers import SMALL_LIMITS

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
    (config / "config.json").write_text(json.dumps({"currentContext": "build-box"}))
    assert api.local_socket() is None
    (config / "config.json").write_text(json.dumps({"currentContext": "default"}))
    monkeypatch.setattr(api, "DEFAULT_SOCKET", str(clean_engine_env))
    assert api.local_socket() == str(clean_engine_env)


def test_the_api_can_be_turned_off(clean_engine_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{clean_engine_env}")
    monkeypatch.setenv(api.API_ENV, "0")
    assert api.local_socket() is None


# -- the protocol's edges, against a unix-socket server speaking the engine's routes ----------


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


class FakeEngine:
    """Answers exec create/start/inspect like the engine. `stream` is the raw bytes sent after
    the upgrade, in `pieces` writes; `running_polls` inspect answers still say Running."""

    def __init__(self, stream: bytes, *, pieces: int = 1, running_polls: int = 0) -> None:
        self.stream = stream
        self.pieces = pieces
        self.running_polls = running_polls
        self.stdin = b""
        self.created: dict | None = None
        self.refuse: tuple[int, str] | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode().split("\r\n")
        method, path, _ = request_line.split(" ")
        headers = dict(line.split(": ", 1) for line in header_lines if ": " in line)
        body = await reader.readexactly(int(headers.get("Content-Length", 0)))
        if method == "POST" and path.endswith("/exec") and self.refuse:
            status, message = self.refuse
            payload = json.dumps({"message": message}).encode()
            writer.write(
                f"HTTP/1.1 {status} Refused\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                + payload
            )
        elif method == "POST" and path.endswith("/exec"):
            self.created = json.loads(body)
            payload = b'{"Id":"e1"}'
            # chunked, as the engine may answer
            writer.write(
                b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
                + f"{len(payload):x}\r\n".encode()
                + payload
                + b"\r\n0\r\n\r\n"
            )
        elif path == "/exec/e1/start":
            writer.write(b"HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
            self.stdin = await reader.read()  # until our half-close
            size = -(-len(self.stream) // self.pieces) or 1
            for start in range(0, len(self.stream), size):
                writer.write(self.stream[start : start + size])
                await writer.drain()
                await asyncio.sleep(0)
        elif path == "/exec/e1/json":
            running = self.running_polls > 0
            self.running_polls -= 1
            payload = json.dumps({"Running": running, "ExitCode": 0 if running else 3}).encode()
            writer.write(
                f"HTTP/1.1 200 OK\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload
            )
        await writer.drain()
        writer.close()


async def exec_against(engine: FakeEngine, tmp_path: Path, stdin: bytes | None = None):
    path = str(tmp_path / "fake.sock")
    server = await asyncio.start_unix_server(engine.handle, path)
    got: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
    try:
        code = await api.exec_streamed(
            path, "c1", ["cat"], user="1000:1000", workdir="/", env=["A=1"], stdin=stdin,
            on_output=lambda stream, chunk: got[stream].extend(chunk),
        )  # fmt: skip
    finally:
        server.close()
    return code, bytes(got[1]), bytes(got[2])


@pytest.mark.anyio
@pytest.mark.parametrize("pieces", [1, 7, 1000])
async def test_frames_split_anywhere_are_put_back_together_per_stream(
    tmp_path: Path, pieces: int
) -> None:
    big = os.urandom(600 * 1024)  # past one read's 256 KiB
    stream = frame(1, b"out-1 ") + frame(2, b"err-1 ") + frame(1, big) + frame(2, b"err-2")
    engine = FakeEngine(stream, pieces=pieces)
    code, out, err = await exec_against(engine, tmp_path, stdin=b"the input")
    assert (code, out, err) == (3, b"out-1 " + big, b"err-1 err-2")
    assert engine.stdin == b"the input"
    assert engine.created is not None
    assert engine.created["AttachStdin"] is True
    assert engine.created["Cmd"] == ["cat"] and engine.created["Env"] == ["A=1"]
    assert engine.created["User"] == "1000:1000"


@pytest.mark.anyio
async def test_without_input_stdin_is_not_attached(tmp_path: Path) -> None:
    engine = FakeEngine(frame(1, b"x"))
    assert await exec_against(engine, tmp_path) == (3, b"x", b"")
    assert engine.created is not None and engine.created["AttachStdin"] is False


@pytest.mark.anyio
async def test_an_exit_code_recorded_after_the_stream_ends_is_waited_for(tmp_path: Path) -> None:
    engine = FakeEngine(frame(1, b"done"), running_polls=3)
    assert await exec_against(engine, tmp_path) == (3, b"done", b"")
    assert engine.running_polls < 0  # asked again until it stopped running


@pytest.mark.anyio
async def test_a_frame_cut_short_is_an_error_not_a_short_output(tmp_path: Path) -> None:
    engine = FakeEngine(frame(1, b"0123456789")[:-3])
    with pytest.raises(ConnectionError, match="cut an output frame short"):
        await exec_against(engine, tmp_path)


@pytest.mark.anyio
async def test_a_refusal_reads_like_the_cli(tmp_path: Path) -> None:
    engine = FakeEngine(b"")
    engine.refuse = (409, "container c1 is not running")
    with pytest.raises(api.EngineRefused) as refused:
        await exec_against(engine, tmp_path)
    assert refused.value.status == 409
    assert str(refused.value) == "Error response from daemon: container c1 is not running"


@pytest.mark.anyio
async def test_a_socket_nobody_listens_on_is_an_unreachable_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dead.sock"
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))  # bound, never listening: connections are refused
    try:
        monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
        monkeypatch.delenv(api.API_ENV, raising=False)
        rc, _, err = await exec_in("c1", ["true"], user="1000:1000")
        assert rc == 1 and b"Cannot connect to the Docker daemon" in err
        session = DockerSession("c1", image="unused", limits=SMALL_LIMITS)
        with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
            await session.exec(["true"])
    finally:
        dead.close()


# -- a real engine: the API and the CLI give the same results ---------------------------------


@pytest.fixture
def api_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's own settings, under which its execs must take the API path (else skip);
    containers without a keeper, so every command is a `docker exec` (test_docker_keeper.py
    compares the keeper with both)."""
    monkeypatch.delenv(api.API_ENV, raising=False)
    monkeypatch.setenv(keeper.KEEPER_ENV, "0")
    if api.local_socket() is None:
        pytest.skip("the engine is not on a local socket: the API path is not used")


COMMANDS: list[tuple[str, list[str], dict]] = [
    ("stdin round trip", ["python3", "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
     {"input": "x" * 3_000_000}),
    ("both streams and an exit code", ["sh", "-c", "echo out; echo err >&2; exit 7"], {}),
    ("environment", ["sh", "-c", "echo $SMOL_X; echo $HOME"], {"env": {"SMOL_X": "1"}}),
    ("cwd", ["pwd"], {"cwd": "sub"}),
    ("missing cwd", ["pwd"], {"cwd": "nowhere"}),
    ("command not found", ["no-such-command"], {}),
    ("timeout", ["sleep", "30"], {"timeout": 1}),
    ("output before a timeout is kept", ["sh", "-c", "echo partial; echo half >&2; sleep 30"],
     {"timeout": 1}),
    ("output flood", ["python3", "-c", "print('y' * 50_000_000)"], {}),
    ("binary output", ["python3", "-c",
                       "import sys; sys.stdout.buffer.write(bytes(range(256)) * 1000)"], {}),
]  # fmt: skip


@pytest.mark.docker
@pytest.mark.anyio
async def test_every_command_gives_the_same_result_through_the_api_and_the_cli(
    stage_dir: Path, no_leftovers: None, api_in_use: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await DockerSession.start(stage_dir, limits=SMALL_LIMITS) as session:
        await session.exec(["mkdir", "-p", "sub"])
        for name, argv, options in COMMANDS:
            results = {}
            for transport in ("1", "0"):
                monkeypatch.setenv(api.API_ENV, transport)
                result = await session.exec(argv, **options)
                results[transport] = dataclasses.replace(result, duration_s=0.0)
            assert results["1"] == results["0"], name
            if name == "output flood":  # both capped it and said so
                assert results["1"].limit == "output"
            if name == "output before a timeout is kept":
                assert results["1"].timed_out and results["1"].stdout == "partial\n"


@pytest.mark.docker
@pytest.mark.anyio
async def test_a_removed_container_is_a_sandbox_failure_through_the_api(
    stage_dir: Path, no_leftovers: None, api_in_use: None
) -> None:
    session = await DockerSession.start(stage_dir, limits=SMALL_LIMITS)
    await session.exec(["true"])
    gone = DockerSession(session.container_id, image=session.image, limits=SMALL_LIMITS)
    gone._needs_init = False
    await session.close()
    with pytest.raises(SandboxFailure, match=r"(?i)no such container"):
        await gone.exec(["true"])
