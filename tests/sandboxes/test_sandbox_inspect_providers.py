"""Our Inspect providers, `bwrap` and `smoldataenvs-docker`, under a real `inspect_ai.eval` (no
model calls are made).

python -m pytest tests/sandboxes/test_sandbox_inspect_providers.py -q
"""

from __future__ import annotations

from collections.abc import Iterator
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
from smoldataenvs_tasks.inspect_adapter.docker_provider import PROVIDER, DockerSandboxConfig
from smoldataenvs_tasks.inspect_adapter.program_host import as_program_host
from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes import hostuid
from tests.sandboxes.docker_support import leftovers_guard
from tests.sandboxes.helpers import SMALL_LIMITS, TABLE_NAME, make_stage, require_kind

PROVIDERS = [
    pytest.param("bwrap", id="bwrap"),
    pytest.param("docker", id="docker", marks=pytest.mark.docker),
]


@pytest.fixture(params=PROVIDERS)
def provider_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    require_kind(request.param)
    if request.param != "docker":
        yield request.param
        return
    guard = leftovers_guard()  # fails the test if a container outlives the eval
    next(guard)
    yield request.param
    next(guard, None)


def provider_spec(kind: str) -> SandboxEnvironmentSpec:
    if kind == "bwrap":
        return SandboxEnvironmentSpec("bwrap", BwrapSandboxConfig.from_limits(SMALL_LIMITS))
    return SandboxEnvironmentSpec(PROVIDER, DockerSandboxConfig.from_limits(SMALL_LIMITS))


# A file in each writable directory and a process that would outlive the sample.
LEAVE_TRACES = (
    "for d in /tmp /workdir /dev/shm $HOME; do echo x > $d/trace; done; "
    "setsid nohup sleep 600 >/dev/null 2>&1 &"
)
FIND_TRACES = (
    "ls /tmp/trace /workdir/trace /dev/shm/trace $HOME/trace 2>/dev/null; "
    "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -o 'sleep 60[0]' || true"
)


@solver
def _probe_sandbox():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = sandbox()
        listing = await env.exec(["sh", "-c", "id -u; pwd; ls"])
        state.metadata["listing"] = listing.stdout
        # What an earlier sample left (below) must not be here, even in a reused container.
        state.metadata["found"] = (await env.exec(["sh", "-c", FIND_TRACES])).stdout
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
        state.metadata["host"] = (await env.exec(["cat", "/proc/sys/kernel/hostname"])).stdout
        await env.exec(["sh", "-c", LEAVE_TRACES])
        return state

    return solve


@pytest.mark.slow
def test_provider_runs_samples_with_their_own_tables(provider_kind: str, tmp_path: Path) -> None:
    # Siblings, as a task's stage dirs are (a pool of containers serves one parent dir).
    stages = tmp_path / "stages"
    stages.mkdir()
    stage_one, stage_two, stage_three = (stages / name for name in ("one", "two", "three"))
    make_stage(tmp_path / "one")[1].rename(stage_one)
    make_stage(tmp_path / "two", name="other.csv")[1].rename(stage_two)
    make_stage(tmp_path / "three")[1].rename(stage_three)
    task = Task(
        dataset=[
            Sample(input="a", id="one", metadata={"stage_dir": str(stage_one)}),
            Sample(input="b", id="two", metadata={"stage_dir": str(stage_two)}),
            Sample(input="d", id="three", metadata={"stage_dir": str(stage_three)}),
            Sample(input="c", id="none"),
        ],
        solver=_probe_sandbox(),
        sandbox=provider_spec(provider_kind),
    )
    [log] = inspect_eval(
        task,
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,  # in turn: each sample after the first may get a used sandbox
    )
    assert log.status == "success", log.error
    samples = {sample.id: sample.metadata for sample in log.samples}
    uids = {}
    for sample_id, metadata in samples.items():
        uids[sample_id], _, metadata["listing"] = metadata["listing"].partition("\n")
    # bwrap's user namespace shows uid 1000; a Docker container, its own host uid (never root).
    if provider_kind == "docker":
        assert all(int(uid) >= hostuid.uid_base() for uid in uids.values()), uids
    else:
        assert set(uids.values()) == {"1000"}
    assert samples["one"]["listing"] == f"/home/user/input\n{TABLE_NAME}\n"
    assert samples["two"]["listing"] == "/home/user/input\nother.csv\n"
    assert samples["none"]["listing"] == "/home/user/input\n"
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
        assert metadata["found"] == ""
    assert samples["one"]["program"]["stdout"] == "1\n"
    assert samples["three"]["listing"] == samples["one"]["listing"]
    if provider_kind == "docker":  # reuse is off by default: a container per sample
        assert len({samples[name]["host"] for name in ("one", "two", "three")}) == 3


def test_config_round_trips_the_limits() -> None:
    config = BwrapSandboxConfig.from_limits(SMALL_LIMITS)
    assert config.limits() == SMALL_LIMITS
    assert BwrapSandboxConfig().limits().program_timeout_s == 90.0
    with pytest.raises(ValueError):
        BwrapSandboxConfig(memory_bytes="lots")
    docker_config = DockerSandboxConfig.from_limits(SMALL_LIMITS, image="example:tag")
    assert (docker_config.limits(), docker_config.image) == (SMALL_LIMITS, "example:tag")
    # What Inspect does with a task's sandbox spec in a log: a dict, back through the provider.
    spec = SandboxEnvironmentSpec.model_validate(provider_spec("docker").model_dump())
    assert spec.config == DockerSandboxConfig.from_limits(SMALL_LIMITS)


@pytest.mark.slow
@pytest.mark.anyio
async def test_adapter_over_inspects_local_provider(tmp_path: Path) -> None:
    """Another provider's TimeoutError and output overflow become results, not exceptions."""
    from smoldataenvs_tasks.inspect_adapter._compat import registry_find_sandboxenv

    env = registry_find_sandboxenv("local")()  # Inspect's own: a provider that is not ours
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


_HANGING_EVAL = """
import pathlib, sys, time
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import solver
from inspect_ai.util import sandbox
import smoldataenvs_tasks._registry  # noqa: F401  (the entry point registers it too)

@solver
def hang():
    async def solve(state, generate):
        await sandbox().exec(["sh", "-c", "sleep 1000 &"])
        pathlib.Path(sys.argv[1]).write_text("started")
        time.sleep(600)  # holds the event loop: the process is killed in here
        return state
    return solve

eval(Task(dataset=[Sample(input="x")], solver=hang(), sandbox="smoldataenvs-docker"),
     model="mockllm/model", display="none", log_dir=sys.argv[2])
"""


@pytest.mark.docker
@pytest.mark.parametrize(
    "cleanup",
    [
        ["-m", "smoldataenvs_tasks", "sandbox", "cleanup"],
        ["-m", "inspect_ai", "sandbox", "cleanup", "smoldataenvs-docker"],
    ],
    ids=["smoldataenvs", "inspect"],
)
def test_containers_of_a_killed_eval_are_removed_by_cleanup(
    tmp_path: Path, cleanup: list[str]
) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from smoldataenvs_tasks.sandboxes.docker import LABEL_OWNER
    from tests.sandboxes.docker_support import docker_lines

    require_kind("docker")
    started = tmp_path / "started"
    script = tmp_path / "hang.py"
    script.write_text(_HANGING_EVAL, encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(script), str(started), str(tmp_path / "logs")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while not started.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the eval never started its sample"
            time.sleep(0.2)
        owner = f"label={LABEL_OWNER}={os.uname().nodename}:{child.pid}"
        for _ in range(100):  # the sample's container, and the spare started for the next one
            left = docker_lines("ps", "--quiet", "--filter", owner)
            if len(left) == 2:
                break
            time.sleep(0.2)
        assert len(left) == 2
    finally:
        child.send_signal(signal.SIGKILL)  # a crash: no sample or task cleanup runs
        child.wait()
    assert docker_lines("ps", "--quiet", "--filter", owner) == left  # outlived its eval
    done = subprocess.run(
        [sys.executable, *cleanup], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert docker_lines("ps", "--all", "--quiet", "--filter", owner) == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_sessions_full_result_comes_back_with_the_call(tmp_path: Path) -> None:
    """The limit a command hit reaches the runner in the exec's own result or error, never
    through state kept on the provider between calls."""
    from smoldataenvs_tasks.inspect_adapter.bwrap_provider import BwrapSandboxEnvironment
    from smoldataenvs_tasks.inspect_adapter.program_host import InspectSandboxHost
    from smoldataenvs_tasks.inspect_adapter.provider_base import SessionExecResult

    require_kind("bwrap")
    _, stage = make_stage(tmp_path)
    config = BwrapSandboxConfig.from_limits(SMALL_LIMITS)
    environments = await BwrapSandboxEnvironment.sample_init("t", config, {"stage_dir": str(stage)})
    environment = environments["default"]
    too_big = ["sh", "-c", f"head -c {SMALL_LIMITS.max_file_bytes + 1} /dev/zero > /tmp/big"]
    try:
        done = await environment.exec(too_big)
        assert isinstance(done, SessionExecResult)
        assert (done.success, done.session_result.limit) == (False, "file_size")
        with pytest.raises(TimeoutError) as caught:
            await environment.exec(["sleep", "30"], timeout=1)
        assert caught.value.session_result.timed_out  # type: ignore[attr-defined]
        host = InspectSandboxHost(environment)
        assert (await host.exec(too_big)).limit == "file_size"
        slow = await host.exec(["sleep", "30"], timeout=1)
        assert (slow.timed_out, slow.returncode) == (True, None)
    finally:
        await BwrapSandboxEnvironment.sample_cleanup("t", config, environments, False)
