"""Fixtures of the real-model tier (`pytest -m realmodel`): SmolLM2-135M-Instruct served by
llama-cpp-python on loopback (tests/realmodel/server.py), started once per session and stopped at
its end, and the runs a user makes against it, each made once and shared by the tests that read it.

The tier runs only when asked for (`-m realmodel`, as .ci/run does after scripts/realmodel-setup.sh):
its runs take minutes of a real model's generation, which a default `scripts/test` must not wait
for. Asked for without the build, it skips saying how to build it; under CI (CI=true) it fails,
so CI cannot pass with the tier silently gone.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.journeys import standin
from tests.journeys.standin import BIN, Result, User, ensure_shared_sandbox_env
from tests.realmodel.server import (
    ALIAS,
    N_CTX,
    Exchange,
    LlamaServer,
    RecordingProxy,
    missing_build,
)

SPLIT = "sample"
PROGRAM_SCORER = "program_scorer"
AGENTIC_SCORER = "answer_file_scorer"
# llama.cpp's generic tool-calling template: SmolLM2's own chat template drops `tools=`, so the
# model would never see `bash` (docs/local-models.md "Tool calls").
TOOLS_CHAT_FORMAT = "chatml-function-calling"
# llama-cpp-python 0.3.16's chatml-function-calling ignores the request's max_tokens when the
# model may choose (tool_choice auto): each part of a reply (the choice, a call's arguments, a
# message) generates up to the context window. SmolLM2's unclosed argument strings ran 279 s (3,054
# tokens) at a window of 4,096 and over 10 minutes at 8,192. The window is the only bound the
# server keeps: 2,048 holds the agentic task's first turns (~1,050 tokens with the tool schema)
# and bounds a runaway to ~1,000 tokens; a conversation that outgrows it ends its sample as the
# model's (the server says context_length_exceeded, Inspect stops with model_length), never as an
# error (docs/local-models.md "Tool calls").
TOOLS_N_CTX = 2048
# The agentic task's bound per reply on this server (docs/local-models.md "Max tokens"): a reply
# is one tool call or a short answer; an unbounded one runs to the context window.
AGENTIC_MAX_TOKENS = 512
# The agentic task runs 17 turns per task: on one CPU thread that is ~4 minutes a task, so the tier
# runs two of the sample's tasks (a partial run, reported as such), not ten.
AGENTIC_TASKS = ("sample/0001/orders.ipynb_qa_1", "sample/0002/survey.ipynb_qa_1")
# Nothing is served from the Hub in this tier: the sample split is bundled.
NO_HUB = "http://127.0.0.1:9"


def _asked_for(config: pytest.Config) -> bool:
    return "realmodel" in (config.getoption("markexpr", "") or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _asked_for(config):
        return
    skip = pytest.mark.skip(
        reason="the real-model tier runs when asked for: scripts/realmodel-setup.sh, then "
        "pytest -m realmodel (.ci/run does both)"
    )
    for item in items:
        if item.get_closest_marker("realmodel") is not None:
            item.add_marker(skip)


@dataclass(frozen=True)
class Run:
    """One user command against the model and what it wrote."""

    result: Result
    out: Path  # the Inspect log dir, or lm-eval's --output_path
    exchanges: list[Exchange]

    def describe(self) -> str:
        return self.result.describe()


class World:
    """The servers, the proxies and a user's runs, each made on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.user = User(root / "machine", NO_HUB)
        self._servers: list[LlamaServer] = []
        self._proxies: list[RecordingProxy] = []

    def _serve(self, chat_format: str | None, n_ctx: int) -> tuple[LlamaServer, RecordingProxy]:
        name = chat_format or "own-template"
        log = self.root / f"server-{name}.log"
        server = LlamaServer(log, chat_format=chat_format, n_ctx=n_ctx).start()
        self._servers.append(server)
        proxy = RecordingProxy(server.port).start()
        self._proxies.append(proxy)
        return server, proxy

    @functools.cached_property
    def own_template(self) -> tuple[LlamaServer, RecordingProxy]:
        return self._serve(None, N_CTX)

    @functools.cached_property
    def tool_template(self) -> tuple[LlamaServer, RecordingProxy]:
        return self._serve(TOOLS_CHAT_FORMAT, TOOLS_N_CTX)

    def close(self) -> None:
        for proxy in self._proxies:
            proxy.stop()
        for server in self._servers:
            server.stop()

    def _inspect(
        self, task: str, tag: str, served: tuple[LlamaServer, RecordingProxy], *options: str
    ) -> Run:
        server, proxy = served
        logs = self.root / "runs" / tag
        result = self.user.run(
            BIN / "inspect", "eval", f"smoldataenvs_tasks/{task}", "-T", f"split={SPLIT}",
            "--model", f"openai-api/llamacpp/{ALIAS}",
            # One request at a time: the server generates one at a time anyway.
            "--max-connections", "1",
            *options,
            "--log-dir", logs, "--display", "plain",
            LLAMACPP_BASE_URL=proxy.base_url(tag), LLAMACPP_API_KEY=server.api_key,
        )  # fmt: skip
        return Run(result, logs, proxy.tagged(tag))

    @functools.cached_property
    def program_inspect(self) -> Run:
        return self._inspect("smoldataenvs_program", "inspect-program", self.own_template)

    @functools.cached_property
    def agentic_inspect(self) -> Run:
        return self._inspect(
            "smoldataenvs",
            "inspect-agentic",
            self.tool_template,
            "--max-tokens",
            str(AGENTIC_MAX_TOKENS),
            "-T",
            "task_ids=" + ",".join(AGENTIC_TASKS),
        )

    @functools.cached_property
    def program_lm_eval(self) -> Run:
        server, proxy = self.own_template
        tag = "lm-eval-program"
        out = self.root / "runs" / tag
        model_args = ",".join(
            [
                f"model={ALIAS}",
                f"base_url={proxy.base_url(tag)}/chat/completions",
                "num_concurrent=1",
                "max_retries=1",
                "timeout=900",
            ]
        )
        result = self.user.run(
            BIN / "smoldataenvs-lm-eval", "--tasks", f"smoldataenvs_program_{SPLIT}",
            "--model", "local-chat-completions", "--model_args", model_args,
            "--apply_chat_template", "--confirm_run_unsafe_code", "--output_path", out,
            OPENAI_API_KEY=server.api_key,
        )  # fmt: skip
        return Run(result, out, proxy.tagged(tag))


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    why = missing_build()
    if why is not None:
        message = f"{why}: run scripts/realmodel-setup.sh first"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and the real-model tier cannot run: {message}")
        pytest.skip(message)
    ensure_shared_sandbox_env()
    # A journey command's 10-minute bound (tests/journeys/standin.py) is too short for a real
    # model's run on a loaded CPU; this process runs only the tier (it is skipped elsewhere).
    standin.COMMAND_TIMEOUT_S = 3000
    world = World(tmp_path_factory.mktemp("realmodel"))
    try:
        yield world
    finally:
        world.close()


def lm_eval_samples(out: Path) -> list[dict[str, Any]]:
    [samples] = list(out.rglob(f"samples_smoldataenvs_program_{SPLIT}_*.jsonl"))
    return [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
