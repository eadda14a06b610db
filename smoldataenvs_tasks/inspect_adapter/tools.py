"""The agentic variant's tools: the SFT data's schema, `bash(command)` (not Inspect's built-in
`bash(cmd)`), and `python(code)`; each call a fresh process in the sample's sandbox, in /workdir.

Each call takes a program slot (`program_slots.program_gate`), as the program scorer's run does.
"""

from __future__ import annotations

import contextlib
from typing import Any

from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.contract import WORKDIR
from smoldataenvs_tasks.inspect_adapter.program_host import sandbox_death
from smoldataenvs_tasks.inspect_adapter.program_slots import program_gate
from smoldataenvs_tasks.pipeline import tool_command
from smoldataenvs_tasks.sandboxes.tool_output import combined_output


async def _gated_exec(argv: list[str], **options: Any) -> Any:
    """The sandbox's result of `argv`; a container the agent's own memory took down (the
    engine's record, `program_host.sandbox_death`) answers every call as killed at the memory
    limit instead of erroring the sample, which a retry would re-run (issue 32)."""
    from inspect_ai.util import ExecResult as InspectExecResult
    from inspect_ai.util import SandboxUnavailableError

    environment = current_sandbox()
    gate = program_gate()
    async with gate() if gate is not None else contextlib.nullcontext():
        try:
            return await environment.exec(argv, **options)
        except SandboxUnavailableError:
            death = await sandbox_death(environment)
            if death is None:
                raise
            return InspectExecResult(success=False, returncode=137, stdout="", stderr=death)


async def _run_tool(tool: str, text: str, timeout: float) -> str:
    command = tool_command(tool, text)
    result = command.refused or await _gated_exec(
        command.argv, input=command.input, cwd=WORKDIR, timeout=timeout
    )
    return combined_output(result.stdout, result.stderr)


def bash_tool(*, timeout: float) -> Tool:
    async def execute(command: str) -> str:
        return await _run_tool("bash", command, timeout)

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
        return await _run_tool("python", code, timeout)

    return ToolDef(
        execute,
        name="python",
        description=(
            "Run a Python 3 program (given as source text) in the sandbox and return its "
            "combined stdout and stderr. Each call is a fresh interpreter; print what you need."
        ),
        parameters={"code": "The Python source to run."},
    ).as_tool()
