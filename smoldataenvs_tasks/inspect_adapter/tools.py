"""The agentic variant's tools: the SFT data's schema, `bash(command)` (not Inspect's built-in
`bash(cmd)`), and `python(code)`; each call a fresh process in the sample's sandbox, in /workdir.
Their names, parameters and descriptions are declared once, in `variants.py`.

Each call takes a program slot (`program_slots.program_gate`), as the program scorer's run does.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.contract import WORKDIR
from smoldataenvs_tasks.inspect_adapter.program_host import sandbox_death
from smoldataenvs_tasks.inspect_adapter.program_slots import program_gate
from smoldataenvs_tasks.pipeline import tool_command
from smoldataenvs_tasks.sandboxes.tool_output import combined_output
from smoldataenvs_tasks.variants import BASH, PYTHON, ToolSpec


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


async def _run_tool(spec: ToolSpec, text: str, timeout: float) -> str:
    command = tool_command(spec.name, text)
    result = command.refused or await _gated_exec(
        command.argv, input=command.input, cwd=WORKDIR, timeout=timeout
    )
    return combined_output(result.stdout, result.stderr)


def _tool(spec: ToolSpec, timeout: float) -> Tool:
    """The Inspect tool of `spec`: its name, description and one string parameter. A timed-out
    or flooding call raises in `exec`, and Inspect answers the model with its own messages (the
    wording `variants.TIMEOUT_MESSAGE` and `ToolSpec.output_cap_message` repeat for TRL)."""

    async def execute(**arguments: str) -> str:
        return await _run_tool(spec, arguments[spec.parameter], timeout)

    # Inspect reads the parameter's name from the signature and calls with it as a keyword.
    execute.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                spec.parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str
            )
        ],
        return_annotation=str,
    )
    execute.__annotations__ = {spec.parameter: str, "return": str}
    return ToolDef(
        execute,
        name=spec.name,
        description=spec.description,
        parameters={spec.parameter: spec.parameter_description},
    ).as_tool()


def bash_tool(*, timeout: float) -> Tool:
    return _tool(BASH, timeout)


def python_tool(*, timeout: float) -> Tool:
    return _tool(PYTHON, timeout)
