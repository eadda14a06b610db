"""The Engine API over the engine's unix socket, spoken from this process: how the host attaches
to a container's keeper (keeper.py), and whether the engine is local enough to have one.

A keeper is used only where the CLI would itself talk straight to a local socket: no DOCKER_HOST
other than `unix://...`, no docker context other than the default, and the socket present.
Anything else (a remote engine, ssh, TLS, a context) gets no keeper, and its commands go through
the docker CLI, which knows how to reach it (transport.py). SMOLDATAENVS_DOCKER_API=0 keeps this
process off the socket altogether: no keeper, the CLI for every command.

The attach protocol (Engine API, "Attach to a container"): POST /containers/{id}/attach with
`Upgrade: tcp` hijacks the connection, which then carries the container's stdin one way and its
output the other, multiplexed in frames of an 8-byte header (stream 1 = stdout, 2 = stderr;
big-endian length) and the payload.

`docker exec` over this API (a third transport, without a CLI process per command) was removed:
it saved ~25 ms per command only in containers without a keeper (docs/performance.md "Docker
transports").
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

API_ENV = "SMOLDATAENVS_DOCKER_API"
DEFAULT_SOCKET = "/var/run/docker.sock"
_FRAME = struct.Struct(">BxxxI")


class EngineRefused(Exception):
    """The engine answered an API call with an error status (the container is gone, stopped...).

    `str()` reads like the CLI's message ("Error response from daemon: ..."), so one reading of
    engine errors (engine.engine_error) serves both ways of calling it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"Error response from daemon: {message}")
        self.status = status


def _docker_config_dir() -> Path:
    configured = os.environ.get("DOCKER_CONFIG")
    return Path(configured) if configured else Path.home() / ".docker"


def _current_context() -> str | None:
    if os.environ.get("DOCKER_CONTEXT"):
        return os.environ["DOCKER_CONTEXT"]
    try:
        config = json.loads((_docker_config_dir() / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    current = config.get("currentContext") if isinstance(config, dict) else None
    return current if isinstance(current, str) and current else None


def local_socket() -> str | None:
    """The engine's unix socket when the docker CLI would talk straight to it; None otherwise
    (a remote or non-default engine, or SMOLDATAENVS_DOCKER_API=0: no keeper, the CLI)."""
    if os.environ.get(API_ENV, "1").strip() == "0":
        return None
    host = os.environ.get("DOCKER_HOST", "").strip()
    if host:
        if not host.startswith("unix://"):
            return None
        path = host[len("unix://") :]
    else:
        if _current_context() not in (None, "default"):
            return None
        path = DEFAULT_SOCKET
    return path if path and os.path.exists(path) else None


def _cannot_connect(socket_path: str, error: OSError) -> ConnectionError:
    # Worded as the CLI words it, for engine.engine_error.
    if isinstance(error, PermissionError):
        return ConnectionError(
            f"permission denied while trying to connect to the Docker daemon socket at "
            f"unix://{socket_path} (docker.sock)"
        )
    return ConnectionError(
        f"Cannot connect to the Docker daemon at unix://{socket_path}. "
        f"Is the docker daemon running? ({error})"
    )


async def open_connection(socket_path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.open_unix_connection(socket_path, limit=1 << 20)
    except OSError as error:
        raise _cannot_connect(socket_path, error) from error


def _request_bytes(method: str, path: str, body: Any, extra_headers: Sequence[str]) -> bytes:
    payload = b"" if body is None else json.dumps(body).encode()
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: docker",
        "User-Agent: smoldataenvs-tasks",
        *extra_headers,
    ]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ConnectionError(f"the Docker engine sent no HTTP answer: {status_line[:100]!r}")
    headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()  # the blank line after the last chunk (no trailers)
                return bytes(body)
            body += await reader.readexactly(size)
            await reader.readline()
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    return await reader.read()  # Connection: close


def _error_message(body: bytes, status: int) -> str:
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else body.decode(errors="replace").strip() or f"HTTP {status}"


async def upgrade(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, body: Any = None
) -> None:
    """POST `path` asking the engine to hijack the connection (a container attach); from its
    answer on, the connection carries raw streams. EngineRefused if it will not."""
    writer.write(_request_bytes("POST", path, body, ["Connection: Upgrade", "Upgrade: tcp"]))
    await writer.drain()
    status, headers = await _read_head(reader)
    if status not in (101, 200):
        raise EngineRefused(status, _error_message(await _read_body(reader, headers), status))


async def demultiplex(
    reader: asyncio.StreamReader, on_output: Callable[[int, bytes], None]
) -> None:
    """Pass each piece of an upgraded connection's output to `on_output(stream, bytes)` until the
    engine ends it; ConnectionError when it ends inside a frame."""
    while True:
        try:
            header = await reader.readexactly(_FRAME.size)
        except asyncio.IncompleteReadError as end:
            if end.partial:
                raise ConnectionError("the Docker engine cut an output frame short") from end
            return
        stream, size = _FRAME.unpack(header)
        remaining = size
        while remaining:  # large frames are passed on in pieces, never held whole
            chunk = await reader.read(min(remaining, 256 * 1024))
            if not chunk:
                raise ConnectionError("the Docker engine cut an output frame short")
            remaining -= len(chunk)
            if stream in (1, 2):
                on_output(stream, chunk)
