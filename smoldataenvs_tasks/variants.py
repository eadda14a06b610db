"""The agent's tools, declared once (issue 47): a `ToolSpec` per tool says its name, its one
parameter, the description a model reads, how a call's text reaches a sandbox (argv, stdin) and
the messages a timed-out or flooding call answers with.

Inspect's `ToolDef`s (`inspect_adapter/tools.py`), `DataAnalysisEnv.bash` (`rl/environment.py`,
whose docstring TRL turns into the tool schema) and the replay of recorded calls
(`pipeline.tool_command`, `results/verify/transcript.py`) are all made from these records, so a
model trained with TRL and evaluated with Inspect sees the same tool, and a replay runs a call as
the task ran it. At the bottom layer beside `replay.py`: every framework's room reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Inspect's wording for a tool call that ran out of time (`inspect_ai.model._call_tools`), which
# TRL's environment repeats so the two frameworks answer alike.
TIMEOUT_MESSAGE = "Command timed out before completing."


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool: `name(parameter)`, run as `argv` with the text as its last argument, or
    on stdin when `stdin` is set."""

    name: str
    parameter: str
    parameter_description: str
    description: str
    argv: tuple[str, ...]
    stdin: bool
    # What the text is called in the message refusing a call whose text holds a NUL.
    text_noun: str
    # The result, as TRL's schema describes it (Inspect's schema has no result entry).
    returns: str = "The command's combined stdout and stderr."

    def command_argv(self, text: str) -> list[str]:
        return list(self.argv) if self.stdin else [*self.argv, text]

    def nul_refusal(self) -> str:
        return (
            f"{self.name}: the {self.text_noun} holds a NUL character, which it may not; "
            "it was not run\n"
        )

    def timeout_message(self) -> str:
        return f"Error: {TIMEOUT_MESSAGE}"

    def output_cap_message(self, limit_bytes: int) -> str:
        return f"Error: The tool exceeded its output limit of {limit_bytes} bytes."

    def docstring(self) -> str:
        """The Google-style docstring from which transformers' `get_json_schema` (what TRL calls
        on an environment's methods) reads this tool's description and parameter."""
        return (
            f"{self.description}\n\n"
            f"Args:\n    {self.parameter}: {self.parameter_description}\n\n"
            f"Returns:\n    {self.returns}\n"
        )


BASH = ToolSpec(
    name="bash",
    parameter="command",
    parameter_description="The shell command to run.",
    description=(
        "Run a shell command in the sandbox and return its combined stdout and stderr. The "
        "shell is not stateful between calls (each call is a fresh `bash -c`), so use "
        "absolute paths or `cd` first. Use it to explore files, run Python, and write the "
        'final answer with `echo -n "<value>" > /workdir/answer.txt`.'
    ),
    argv=("bash", "-c"),
    stdin=False,
    text_noun="command",
)

PYTHON = ToolSpec(
    name="python",
    parameter="code",
    parameter_description="The Python source to run.",
    description=(
        "Run a Python 3 program (given as source text) in the sandbox and return its "
        "combined stdout and stderr. Each call is a fresh interpreter; print what you need."
    ),
    # The source on stdin: no argv limit, and `-` runs it as a script.
    argv=("python3", "-"),
    stdin=True,
    text_noun="program",
    returns="The program's combined stdout and stderr.",
)

AGENT_TOOLS = {spec.name: spec for spec in (BASH, PYTHON)}
