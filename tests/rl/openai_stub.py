"""A stand-in for a remote OpenAI-compatible server (vLLM, an API) that answers each chat
completion with a recorded reply: the bundled gold program of the task whose prompt it was sent.

It speaks only what a chat client needs (`POST /v1/chat/completions`, streamed when asked, and
`GET /v1/models`), on 127.0.0.1, in a thread of the test process. A prompt that is no sample
task's gets an empty reply.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from smoldataenvs_tasks.rl import rl_dataset
from tests.report.replays import gold_completions


def gold_by_prompt() -> dict[str, str]:
    gold = gold_completions()
    return {row["prompt"][-1]["content"]: gold[row["task_id"]] for row in rl_dataset("sample")}


class _Handler(BaseHTTPRequestHandler):
    # Set per server by `serving_gold` (a subclass each).
    replies: ClassVar[dict[str, str]] = {}
    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:  # quiet: the test reads the requests list
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "gold", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        type(self).requests.append(request)
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        prompt = users[-1]["content"] if users else ""
        if isinstance(prompt, list):
            prompt = "".join(part.get("text", "") for part in prompt)
        text = type(self).replies.get(prompt, "")
        reply_id = f"chatcmpl-{len(type(self).requests)}"
        if request.get("stream"):
            self._stream(reply_id, request.get("model", "gold"), text)
            return
        self._send(
            200,
            {
                "id": reply_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model", "gold"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _stream(self, reply_id: str, model: str, text: str) -> None:
        # verifiers 0.4's harness programs stream (`stream: true`): the reply as one chunk, the
        # finish and usage, then `[DONE]`, which its relay waits for.
        chunk = {"id": reply_id, "object": "chat.completion.chunk", "created": int(time.time())}
        events = [
            {
                **chunk,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            for delta in ({"role": "assistant", "content": ""}, {"content": text})
        ]
        events.append(
            {
                **chunk,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
        body = b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events)
        body += b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serving_gold() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(base URL ending in /v1, the requests received), while the server runs."""
    handler = type("GoldHandler", (_Handler,), {"replies": gold_by_prompt(), "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler.requests
    finally:
        server.shutdown()
        server.server_close()
