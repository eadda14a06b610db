"""`docker exec` over the Engine API's unix socket, without starting the docker CLI.

Where a container has no keeper (keeper.py), every command and every reset is a `docker exec`.
Through the CLI each one starts a 42 MB Go binary: ~25 ms of CPU and ~25 ms of latency on top of
the engine's own work (bench/bench_docker.py, docs/performance.md). Speaking the engine's HTTP
API on its socket from this process costs neither. Only `exec` goes this way; `run`, `rm`, `inspect`, `build` and the
rest stay CLI calls (off the samples' path once containers are reused).

The API is used only where the CLI would itself talk straight to a local socket: no DOCKER_HOST
other than `unix://...`, no docker context other than the default, and the socket present.
Anything else (a remote engine, ssh, TLS, a context) keeps the CLI, which knows how to reach it.
SMOLDATAENVS_DOCKER_API=0 forces the CLI everywhere.

The exec protocol (Engine API, "Exec" section): POST /containers/{id}/exec creates the exec,
POST /exec/{id}/start with `Upgrade: tcp` hijacks the connection, which then carries our stdin
one way (half-closed at its end) and the command's output the other, multiplexed in frames of an
8-byte header (stream 1 = stdout, 2 = stderr; big-endian length) and the payload. When the
stream ends, GET /exec/{id}/json gives the exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

API_ENV = "SMOLDATAENVS_DOCKER_API"
DEFAULT_SOCKET = "/var/run/docker.sock"
# An exec whose stream has ended but whose exit code the engine has not recorded yet is asked
# again for this long (the engine records it before closing the stream; this is a safety net).
EXIT_CODE_WAIT_S = 5.0
_FRAME = struct.Struct(">BxxxI")
# After a command ends or is killed, its output still on the way is waited for this long (every
# exec runner: engine.py's and keeper.py's).
DRAIN_S = 10.0


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
        config = json.loads((_docker_config_dir() / "config.json").read_text())
    except (OSError, ValueError):
        return None
    current = config.get("currentContext") if isinstance(config, dict) else None
    return current if isinstance(current, str) and current else None


def local_socket() -> str | None:
    """The engine's unix socket when the docker CLI would talk straight to it; None otherwise
    (a remote or non-default engine, or SMOLDATAENVS_DOCKER_API=0: use the CLI)."""
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


async def _call(socket_path: str, method: str, path: str, body: Any = None) -> Any:
    """One API call on a connection of its own: the decoded JSON answer, or EngineRefused."""
    reader, writer = await open_connection(socket_path)
    try:
        writer.write(_request_bytes(method, path, body, ["Connection: close"]))
        await writer.drain()
        status, headers = await _read_head(reader)
        data = await _read_body(reader, headers)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if status >= 400:
        raise EngineRefused(status, _error_message(data, status))
    return json.loads(data) if data.strip() else None


async def exec_streamed(
    socket_path: str,
    container_id: str,
    argv: Sequence[str],
    *,
    user: str,
    workdir: str,
    env: Sequence[str],
    stdin: bytes | None,
    on_output: Callable[[int, bytes], None],
) -> int:
    """Run `argv` in the container as `docker exec` does; each piece of output goes to
    `on_output(stream, bytes)` (1 = stdout, 2 = stderr) as it arrives. Returns the exit code.

    Cancelling closes the connection; the command keeps running in the container (as after
    killing the CLI), so callers kill it there. EngineRefused when the engine will not run it."""
    created = await _call(
        socket_path,
        "POST",
        f"/containers/{quote(container_id, safe='')}/exec",
        {
            "AttachStdin": stdin is not None,
            "AttachStdout": True,
            "AttachStderr": True,
            "Tty": False,
            "User": user,
            "WorkingDir": workdir,
            "Env": list(env),
            "Cmd": list(argv),
        },
    )
    exec_id = quote(str(created["Id"]), safe="")
    reader, writer = await open_connection(socket_path)
    try:
        await upgrade(reader, writer, f"/exec/{exec_id}/start", {"Detach": False, "Tty": False})
        feeding = asyncio.create_task(_feed(writer, stdin))
        try:
            await demultiplex(reader, on_output)
        finally:
            feeding.cancel()
            with contextlib.suppress(BaseException):
                await feeding
    finally:
        # Aborted, not closed: close() first sends what is left of the stdin, which a command
        # that does not read it never takes (a call cancelled then waited ~2 minutes for the
        # engine to give up). The output has been read to its end, or is no longer wanted.
        writer.transport.abort()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    return await _exit_code(socket_path, exec_id)


async def upgrade(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str, body: Any = None
) -> None:
    """POST `path` asking the engine to hijack the connection (exec start, container attach);
    from its answer on, the connection carries raw streams. EngineRefused if it will not."""
    writer.write(_request_bytes("POST", path, body, ["Connection: Upgrade", "Upgrade: tcp"]))
    await writer.drain()
    status, headers = await _read_head(reader)
    if status not in (101, 200):
        raise EngineRefused(status, _error_message(await _read_body(reader, headers), status))


async def _feed(writer: asyncio.StreamWriter, stdin: bytes | None) -> None:
    # Half-close after the input (none: at once), as the CLI does: the command sees EOF on stdin
    # and the output keeps coming the other way.
    with contextlib.suppress(ConnectionError):
        if stdin:
            writer.write(stdin)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


async def demultiplex(
    reader: asyncio.StreamReader, on_output: Callable[[int, bytes], None]
) -> None:
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


async def _exit_code(socket_path: str, exec_id: str) -> int:
    deadline = asyncio.get_running_loop().time() + EXIT_CODE_WAIT_S
    while True:
        state = await _call(socket_path, "GET", f"/exec/{exec_id}/json")
        code = state.get("ExitCode")
        if not state.get("Running") and code is not None:
            return int(code)
        if asyncio.get_running_loop().time() > deadline:
            raise ConnectionError("the Docker engine reported no exit code for the command")
        await asyncio.sleep(0.01)
