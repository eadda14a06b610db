"""The `bwrap` Inspect provider under a real `inspect_ai.eval` (no model calls are made).

python -m pytest tests/sandboxes/test_sandbox_inspect_bwrap.py -q
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import (
    OutputLimitExceededError,
    SandboxEnvironmentSpec,
    SandboxUserUnsupportedError,
    sandbox,
)

from smoldataenvs_tasks.inspect_adapter.bwrap_provider import BwrapSandboxConfig
from smoldataenvs_tasks.inspect_adapter.host import as_program_host
from smoldataenvs_tasks.pipeline import run_program_outcome
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_NAME, make_stage, require_kind


@solver
def _probe_sandbox():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = sandbox()
        listing = await env.exec(["sh", "-c", "id -u; pwd; ls"])
        state.metadata["listing"] = listing.stdout
        state.metadata["program"] = (
            await run_program_outcome(
                as_program_host(env), "import os\nprint(len(os.listdir('.')))\n"
            )
        ).to_dict()
        state.metadata["fork_bomb"] = (
            await run_program_outcome(
                as_program_host(env),
                "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                "        pass\n",
                timeout=2,
            )
        ).to_dict()
        try:
            await env.exec(["sleep", "30"], timeout=1)
            state.metadata["timeout"] = "not raised"
        except TimeoutError:
            state.metadata["timeout"] = "raised"
        try:
            await env.exec(["yes"], timeout=30)
            state.metadata["output"] = "not raised"
        except OutputLimitExceededError as error:
            state.metadata["output"] = f"raised {len(error.truncated_output or '')}"
        try:
            await env.exec(["id"], user="root")
            state.metadata["root"] = "allowed"
        except SandboxUserUnsupportedError:
            state.metadata["root"] = "unsupported"
        await env.write_file("answer.txt", "42\r\n")
        state.metadata["answer"] = await env.read_file("answer.txt")
        state.metadata["env"] = (await env.exec(["printenv", "EXTRA"], env={"EXTRA": "x"})).stdout
        return state

    return solve


def test_bwrap_provider_runs_samples_with_their_own_tables(tmp_path: Path) -> None:
    require_kind("bwrap")
    _, stage_one = make_stage(tmp_path / "one")
    _, stage_two = make_stage(tmp_path / "two", name="other.csv")
    config = BwrapSandboxConfig.from_limits(SMALL_LIMITS)
    task = Task(
        dataset=[
            Sample(input="a", id="one", metadata={"stage_dir": str(stage_one)}),
            Sample(input="b", id="two", metadata={"stage_dir": str(stage_two)}),
            Sample(input="c", id="none"),
        ],
        solver=_probe_sandbox(),
        sandbox=SandboxEnvironmentSpec("bwrap", config),
    )
    [log] = inspect_eval(
        task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success", log.error
    samples = {sample.id: sample.metadata for sample in log.samples}
    assert samples["one"]["listing"] == f"1000\n/home/user/input\n{TABLE_NAME}\n"
    assert samples["two"]["listing"] == "1000\n/home/user/input\nother.csv\n"
    assert samples["none"]["listing"] == "1000\n/home/user/input\n"
    for metadata in samples.values():
        assert metadata["program"]["failure"] is None
        # The session's full result reached the runner through Inspect's proxy.
        assert metadata["fork_bomb"]["failure"] == "resource_limit"
        assert metadata["fork_bomb"]["failure_detail"] == "processes"
        assert metadata["timeout"] == "raised"
        assert metadata["output"] == f"raised {SMALL_LIMITS.max_output_bytes}"
        assert metadata["root"] == "unsupported"
        assert metadata["answer"] == "42\r\n"
        assert metadata["env"] == "x\n"
    assert samples["one"]["program"]["stdout"] == "1\n"


def test_config_round_trips_the_limits() -> None:
    config = BwrapSandboxConfig.from_limits(SMALL_LIMITS)
    assert config.limits() == SMALL_LIMITS
    assert BwrapSandboxConfig().limits().program_timeout_s == 90.0
    with pytest.raises(ValueError):
        BwrapSandboxConfig(memory_bytes="lots")


@pytest.mark.anyio
async def test_adapter_over_inspects_local_provider(tmp_path: Path) -> None:
    """Another provider's TimeoutError and output overflow become results, not exceptions."""
    from smoldataenvs_tasks.inspect_adapter._compat import LocalSandboxEnvironment

    env = LocalSandboxEnvironment()
    try:
        host = as_program_host(env)
        root = env.directory.name
        outcome = await run_program_outcome(
            host, "import os\nprint(os.getcwd())\n", program_path=f"{root}/solve.py", cwd=root
        )
        assert (outcome.failure, outcome.stdout) == (None, f"{root}\n")
        slow = await host.exec(["sleep", "10"], timeout=1)
        assert slow.timed_out and slow.returncode is None
        loud = await host.exec(["sh", "-c", "yes | head -c 20000000"], timeout=60)
        assert loud.limit == "output"
    finally:
        env.directory.cleanup()
