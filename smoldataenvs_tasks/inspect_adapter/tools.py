"""The agentic variant's tools: the SFT data's schema, `bash(command)` (not Inspect's built-in
`bash(cmd)`), and `python(code)`; each call a fresh process in the sample's sandbox, in /workdir.

`program_gate` limits how many programs and tool commands run at once on this machine; the
program scorer takes its slot from the same gate.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import concurrency, store
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.inspect_adapter._compat import (
    DockerSandboxEnvironment,
    LocalSandboxEnvironment,
)
from smoldataenvs_tasks.inspect_adapter.program_host import local_sandbox_env
from smoldataenvs_tasks.inspect_adapter.provider_base import SessionSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.setup import PATHS_KEY, is_provider, sample_paths
from smoldataenvs_tasks.pipeline import default_concurrency


def _combined_output(stdout: str, stderr: str) -> str:
    if stdout and stderr:
        return f"{stdout.rstrip()}\n{stderr}" if not stdout.endswith("\n") else stdout + stderr
    return stdout or stderr


def program_gate(
    max_programs: int | None = None,
) -> Callable[[], AbstractAsyncContextManager[Any]] | None:
    """A limit on programs (and tool commands) running at once, shared by every sample of the
    process, when this sample's sandbox runs on this machine (ours, Docker, local); None for
    remote sandboxes (k8s), whose programs do not compete for this machine's CPUs.

    Inspect keeps many samples in flight (adaptive model connections start at 20) so that model
    calls overlap; their programs should not all run at once on a 2-core machine, where each
    would take ~10x its time (nearer its time limit) for no gain in throughput.
    """
    env = current_sandbox()
    local = (SessionSandboxEnvironment, DockerSandboxEnvironment, LocalSandboxEnvironment)
    if not any(is_provider(env, provider) for provider in local):
        return None
    slots = max_programs or default_concurrency()
    return lambda: concurrency("smoldataenvs/programs", slots)


async def _gated_exec(argv: list[str], **options: Any) -> Any:
    gate = program_gate()
    if store().get(PATHS_KEY):  # `local`: the locked env's python, as in every real sandbox
        options["env"] = local_sandbox_env()
    async with gate() if gate is not None else contextlib.nullcontext():
        return await current_sandbox().exec(argv, **options)


def bash_tool(*, timeout: float) -> Tool:
    async def execute(command: str) -> str:
        result = await _gated_exec(
            ["bash", "-c", command], cwd=sample_paths()["workdir"], timeout=timeout
        )
        return _combined_output(result.stdout, result.stderr)

    return ToolDef(
        execute,
        name="bash",
        description=(
            "Run a shell command in the sandbox and return its combined stdout and stderr. The "
            "shell is not stateful between calls (each call is a fresh `bash -c`), so use "
            "absolute paths or `cd` first. Use it to explore files, run Python, and write the "
            'final answer with `echo -n "<value>" > /workdir/answer.txt`.'
        ),
        parameters={"command": "The shell command to run."},
    ).as_tool()


def python_tool(*, timeout: float) -> Tool:
    async def execute(code: str) -> str:
        result = await _gated_exec(
            ["python3", "-"], input=code, cwd=sample_paths()["workdir"], timeout=timeout
        )
        return _combined_output(result.stdout, result.stderr)

    return ToolDef(
        execute,
        name="python",
        description=(
            "Run a Python 3 program (given as source text) in the sandbox and return its "
            "combined stdout and stderr. Each call is a fresh interpreter; print what you need."
        ),
        parameters={"code": "The Python source to run."},
    ).as_tool()
