"""The agent tools as each framework shows them to a model, held to a golden (issue 47): the
schemas Inspect sends, the schema TRL builds from `DataAnalysisEnv.bash`'s docstring
(transformers' `get_json_schema`, as TRL's `environment_factory` does), how a recorded call is
replayed (`pipeline.tool_command`) and the messages TRL's tool answers a timeout or an output
flood with. All are made from `variants.py`; the golden was dumped from the code before they
were, with one intended change: TRL's `bash` description is Inspect's (a model trained with
`DataAnalysisEnv` and evaluated with Inspect sees the same tool)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.tool import Tool, ToolDef

from smoldataenvs_tasks.inspect_adapter.tools import bash_tool, python_tool
from smoldataenvs_tasks.pipeline import tool_command
from smoldataenvs_tasks.results.verify.transcript import TOOL_ARGUMENT
from smoldataenvs_tasks.rl.environment import DataAnalysisEnv
from smoldataenvs_tasks.variants import AGENT_TOOLS, BASH

pytestmark = pytest.mark.unit

GOLDEN = json.loads((Path(__file__).parent / "tools_golden.json").read_text(encoding="utf-8"))


def _inspect_info(tool: Tool) -> dict[str, Any]:
    definition = ToolDef(tool)
    return {
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters.model_dump(exclude_none=True),
    }


def test_inspect_tools_are_unchanged() -> None:
    tools = [bash_tool(timeout=30.0), python_tool(timeout=30.0)]
    assert [_inspect_info(tool) for tool in tools] == GOLDEN["inspect"]


def test_trl_sees_inspects_bash() -> None:
    # transformers comes with the rl extra, which the fast tier right after scripts/run-sample
    # lacks (it installs only dev): the rest of this module holds there.
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    schema = get_json_schema(DataAnalysisEnv().bash)
    assert [schema] == GOLDEN["trl"]
    inspect_bash = GOLDEN["inspect"][0]
    assert schema["function"]["description"] == inspect_bash["description"]
    assert (
        schema["function"]["parameters"]["properties"] == (inspect_bash["parameters"]["properties"])
    )


def test_trl_exposes_only_the_declared_tools() -> None:
    # TRL makes a tool of every public method (environment_factory): only `bash` may be one.
    public = {
        name
        for name, member in vars(DataAnalysisEnv).items()
        if callable(member) and not name.startswith("_") and name not in ("reset", "get_reward")
    }
    assert public == {BASH.name}


@pytest.mark.parametrize("case", GOLDEN["replay"], ids=lambda case: repr(case["text"]))
def test_replay_runs_a_call_as_the_task_did(case: dict[str, Any]) -> None:
    command = tool_command(case["tool"], case["text"])
    assert command.argv == case["argv"]
    assert command.input == case["input"]
    refused = command.refused
    assert (
        None if refused is None else [refused.returncode, refused.stdout, refused.stderr]
    ) == case["refused"]


def test_replay_reads_each_tools_declared_argument() -> None:
    assert TOOL_ARGUMENT == {"bash": "command", "python": "code"}
    assert set(TOOL_ARGUMENT) == set(AGENT_TOOLS)


def test_trl_messages_are_unchanged() -> None:
    assert BASH.timeout_message() == GOLDEN["messages"]["timeout"]
    assert BASH.output_cap_message(1024) == GOLDEN["messages"]["output_cap_1024"]
