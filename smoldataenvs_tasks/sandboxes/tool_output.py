"""What an agent's tool call shows the model: one text from a command's stdout and stderr, cut to
the size Inspect gives a tool result.

Inspect's agentic task (`inspect_adapter/tools.py`) and TRL's `DataAnalysisEnv`
(`rl/environment.py`) both build their `bash` tool's reply here, so an agent trained in one sees
what it is evaluated with in the other.
"""

from __future__ import annotations

# Inspect's default `max_tool_output` (16 KiB), which the agentic task does not change; a
# longer result keeps its first and last halves (Inspect's middle truncation).
TOOL_RESULT_BYTES = 16 * 1024


def combined_output(stdout: str, stderr: str) -> str:
    if stdout and stderr:
        return f"{stdout.rstrip()}\n{stderr}" if not stdout.endswith("\n") else stdout + stderr
    return stdout or stderr


def shown_to_model(tool: str, output: str, limit: int = TOOL_RESULT_BYTES) -> str:
    """`output` as the model sees it: whole when it fits in `limit` UTF-8 bytes, else its first
    and last halves inside a note saying it was cut (the wording of Inspect's note)."""
    encoded = output.encode("utf-8", errors="replace")
    if len(encoded) <= limit:
        return output
    half = limit // 2
    kept = (encoded[:half] + encoded[len(encoded) - (limit - half) :]).decode(
        "utf-8", errors="ignore"
    )
    return (
        f"\nThe output of your call to {tool} was too long to be displayed.\n"
        f"Here is a truncated version:\n<START_TOOL_OUTPUT>\n{kept}\n<END_TOOL_OUTPUT>\n"
    )
