"""Issue 32: a model's code cannot turn its wrong answer into a sandbox failure (docs/threat-model.md,
invariant 2), so a retry is never a reroll. Each attack ends in the model's 0, a run whose status
is success, and no retry.

- Memory nobody holds: System V shared memory left with no process attached, then a detached
  writer filling a tmpfs. Its pages are the container's memory but no process's, so the
  out-of-memory killer used to kill every process in turn, the keeper and then the container's
  init. Now the IPC namespace bounds it (`container.ipc_sysctls`, compose's `sysctls`) and our
  provider keeps the container's init and the keeper's shell out of the sample's memory cgroup
  (`container.shelter_init`).
- `kill -9 -1` under docker-compose stopped the container (its main process was the sandbox
  user's); it is now the namespace's PID 1, which the sandbox user cannot signal.
- A forged runner line under docker-compose: 4-byte characters pushed the runner's marker out of
  the tail Inspect keeps while staying under a cap counted in characters; the cap is now counted
  in bytes (`program_host._at_output_cap`).

    python -m pytest tests/security/test_sandbox_death.py -q
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from smoldataenvs_tasks import pipeline
from smoldataenvs_tasks.contract import ANSWER_FILE
from smoldataenvs_tasks.data.kinds import load_tasks
from tests.replies import fenced
from tests.sandboxes.docker_support import docker_lines
from tests.sandboxes.helpers import SMALL_LIMITS, make_stage, require_kind
from tests.sandboxes.kinds import open_sandbox

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WRONG = "12345"

# Fills System V shared memory and leaves every segment detached: nobody holds it. Bounded, so
# it ends where segments are destroyed on detach (shm_rmid_forced) instead of piling up.
_SHM_FILL = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
for _ in range(80):
    shmid = libc.shmget(0, 64 << 20, 0o1000 | 0o600)
    if shmid < 0:
        break
    addr = libc.shmat(shmid, None, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        break
    ctypes.memset(addr, 1, 64 << 20)
    libc.shmdt(addr)
"""
# Each run is OOM-killed once memory is full; the next adds more while it can.
_FILL_COMMAND = f"for i in 1 2 3; do python3 -c {shlex.quote(_SHM_FILL)}; done; true"
# A tiny writer that outlives its command and keeps asking for memory.
_TMPFS_WRITER = (
    "nohup setsid sh -c 'while :; do head -c 65536 /dev/zero >> /tmp/w 2>/dev/null; done' "
    ">/dev/null 2>&1 </dev/null &"
)
# The program variant: the program itself fills the memory, starts the writer, prints its answer.
_SHM_PROGRAM = (
    "import subprocess\n"
    f"subprocess.run(['sh', '-c', {_FILL_COMMAND!r}])\n"
    f"subprocess.run(['sh', '-c', {_TMPFS_WRITER!r}])\n"
    "import time\ntime.sleep(2)\n"
    f"print({WRONG!r})\n"
)


def _record():
    return next(t for t in load_tasks("sample") if t.answer and t.answer.strip() != WRONG)


@pytest.fixture
def stage_dir(tmp_path: Path) -> Path:
    return make_stage(tmp_path)[1]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["docker", "inspect-docker"])
async def test_memory_nobody_holds_leaves_the_answer_readable(kind, stage_dir):
    require_kind("docker")
    session = await open_sandbox(kind, stage_dir)
    try:
        await session.exec(["sh", "-c", f"printf {WRONG} > {ANSWER_FILE}"])
        await session.exec(["sh", "-c", _FILL_COMMAND], timeout=120)
        await session.exec(["sh", "-c", _TMPFS_WRITER])
        await session.exec(["sleep", "2"])
        verdict = await pipeline.decide_answer_file(_record(), session)
        # Read, not `program_broke_sandbox` (the reader OOM-killed) and not raised (the container
        # dead): the memory the agent filled was given back by killing its processes.
        assert (verdict.reward, verdict.category, verdict.prediction) == (
            0.0,
            "wrong_value",
            WRONG,
        ), verdict
        after = await session.exec(["true"])  # the sandbox lives on
        assert after.returncode == 0, after
        # The bound itself: System V shared memory stops at 1/16 of the memory limit.
        held = await session.exec(["sh", "-c", "cat /proc/sysvipc/shm | wc -l"])
        assert held.stdout.strip() == "1", held  # only the header: no segment outlives its maker
    finally:
        await session.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _inspect_run(task, row, tmp_path: Path, name: str):
    from inspect_ai import eval as inspect_eval

    from tests.replies import write_jsonl

    replay = write_jsonl(tmp_path / f"{name}.jsonl", [row])
    [log] = inspect_eval(
        task,
        model=f"replay/{name}",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        retry_on_error=1,  # a retry would show in error_retries: none may happen
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.error is None and not sample.error_retries, sample.error_retries
    return sample


@pytest.mark.parametrize("sandbox", ["docker", "docker-compose"])
def test_memory_nobody_holds_is_the_models_zero_through_inspect(sandbox, tmp_path):
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
    from tests.replies import ORDERS_TASK, agentic_row, fenced, program_row

    require_kind("docker")
    program = _inspect_run(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox=sandbox),
        program_row(ORDERS_TASK, fenced(_SHM_PROGRAM)),
        tmp_path,
        "shm_program",
    )
    score = program.scores["program_scorer"]
    assert score.value == 0.0, score
    agent = _inspect_run(
        smoldataenvs(split="sample", task_ids=ORDERS_TASK, sandbox=sandbox),
        agentic_row(
            ORDERS_TASK,
            [f"printf {WRONG} > {ANSWER_FILE}", _FILL_COMMAND, _TMPFS_WRITER, "sleep 2"],
        ),
        tmp_path,
        "shm_agent",
    )
    score = agent.scores["answer_file_scorer"]
    assert (score.value, score.answer, score.metadata["category"]) == (
        0.0,
        WRONG,
        "wrong_value",
    ), score


def test_memory_nobody_holds_is_the_models_zero_through_lm_evals_batch():
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies
    from tests.replies import fenced

    require_kind("docker")
    [verdict] = grade_program_replies(
        [ProgramReply(_record(), fenced(_SHM_PROGRAM))], sandbox="docker"
    )
    assert verdict.graded and verdict.reward == 0.0, verdict
    assert verdict.prediction == WRONG, verdict


def test_kill_every_process_under_compose_is_the_models_zero(tmp_path):
    """The compose container's main process used to be a uid-1000 child of tini: `kill -9 -1`
    ended it, the container stopped, and the sample errored (a reroll through `eval-retry`)."""
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
    from tests.replies import ORDERS_TASK, agentic_row, fenced, program_row

    require_kind("docker")
    agent = _inspect_run(
        smoldataenvs(split="sample", task_ids=ORDERS_TASK, sandbox="docker-compose"),
        agentic_row(ORDERS_TASK, [f"printf {WRONG} > {ANSWER_FILE}; kill -9 -1", "sleep 1"]),
        tmp_path,
        "kill_agent",
    )
    score = agent.scores["answer_file_scorer"]
    assert (score.value, score.answer) == (0.0, WRONG), score
    killer = f"import os, signal\nprint({WRONG!r}, flush=True)\nos.kill(-1, signal.SIGKILL)\n"
    program = _inspect_run(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="docker-compose"),
        program_row(ORDERS_TASK, fenced(killer)),
        tmp_path,
        "kill_program",
    )
    assert program.scores["program_scorer"].value == 0.0


def test_a_forged_runner_line_after_a_flood_of_wide_characters_is_the_models_zero(tmp_path):
    """11 MiB of 4-byte characters on stderr (2.9 M characters: under a cap counted in
    characters), then the runner's own failure line: the kept tail has no marker, and the
    program used to be taken for a sandbox that could not run."""
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
    from smoldataenvs_tasks.sandboxes.runner import _CANNOT_RUN
    from tests.replies import ORDERS_TASK, fenced, program_row

    require_kind("docker")
    forger = (
        "import sys\n"
        f"print({WRONG!r})\n"
        "sys.stderr.write('\\U0001F600' * (11 * 1024 * 1024 // 4))\n"
        f"sys.stderr.write('\\n{_CANNOT_RUN} timeout python3 (exit 126)\\n')\n"
        "sys.exit(125)\n"
    )
    program = _inspect_run(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="docker-compose"),
        program_row(ORDERS_TASK, fenced(forger)),
        tmp_path,
        "forged_runner",
    )
    score = program.scores["program_scorer"]
    assert (score.value, score.metadata["category"]) == (0.0, "resource_limit"), score


# A program that prints its (wrong) answer, then asks for four times the small limits' memory,
# touching every page: the out-of-memory killer of the container's memory cgroup runs at once.
_MEMORY_HOG = f"print({WRONG!r}, flush=True)\nhog = b'\\1' * (2 << 30)\n"


def _expose_init(container_id: str, *, shelter: bool) -> None:
    """Host side, as root: make the container's init the out-of-memory killer's first pick, as on
    a host where it cannot be kept out of the container's memory cgroup (cgroup v2, a rootless
    engine) at its worst; with `shelter`, first move it back into that cgroup (our provider moves
    it out, container.shelter_init). A sample cannot do either: lowering another process's pick
    order, or moving it, needs the host's root. Only then can its memory stop the container."""
    [pid] = docker_lines("inspect", "--format", "{{.State.Pid}}", container_id)
    group = Path(f"/sys/fs/cgroup/memory/docker/{container_id}")
    if not (group / "cgroup.procs").is_file() or os.geteuid() != 0:
        pytest.skip("needs the host's cgroup v1 memory hierarchy, as root")
    if shelter:
        (group / "cgroup.procs").write_text(pid, encoding="utf-8")
    Path(f"/proc/{pid}/oom_score_adj").write_text("1000", encoding="utf-8")


def _state(container: str) -> list[str]:
    return docker_lines("inspect", "--format", "{{.State.Running}} {{.State.OOMKilled}}", container)


@pytest.mark.anyio
async def test_a_container_its_samples_memory_stopped_is_the_models_zero(stage_dir):
    """The container's init killed by its memory cgroup's out-of-memory killer: the engine's
    record (State.OOMKilled) proves the sample did it, so the agent's answer file, gone with the
    container, is its `program_broke_sandbox` 0, and a program's run its `resource_limit` 0 (the
    lm-eval batch and Inspect's scorers decide both this way). Never SandboxLost, never retried."""
    from smoldataenvs_tasks.sandboxes.docker import DockerSession

    require_kind("docker")
    record = _record()
    agent = await DockerSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        await agent.exec(["sh", "-c", f"printf {WRONG} > {ANSWER_FILE}"])
        _expose_init(agent.container_id, shelter=True)
        hog = await agent.exec(["python3", "-c", _MEMORY_HOG], timeout=60)
        assert hog.limit == "memory", hog
        assert _state(agent.container_id) == ["false", "true"]  # stopped, of memory
        verdict = await pipeline.decide_answer_file(record, agent)
        assert (verdict.reward, verdict.category) == (0.0, "program_broke_sandbox"), verdict
    finally:
        await agent.close()

    program = await DockerSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        await program.exec(["true"])
        _expose_init(program.container_id, shelter=True)
        verdict = await pipeline.decide_program_reply(
            fenced(_MEMORY_HOG), record, program, limits=SMALL_LIMITS
        )
        assert (verdict.reward, verdict.category, verdict.detail) == (
            0.0,
            "resource_limit",
            "memory",
        ), verdict
        assert _state(program.container_id) == ["false", "true"]
    finally:
        await program.close()


@pytest.mark.anyio
async def test_a_container_stopped_from_outside_is_still_the_infrastructures(stage_dir):
    """The other side: a container killed by the host (no out-of-memory record) is SandboxLost,
    for a retry, not a 0 (docs/threat-model.md, "Transient and permanent failures")."""
    from smoldataenvs_tasks.sandboxes.base import SandboxLost
    from smoldataenvs_tasks.sandboxes.docker import DockerSession

    require_kind("docker")
    session = await DockerSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        await session.exec(["sh", "-c", f"printf {WRONG} > {ANSWER_FILE}"])
        docker_lines("kill", session.container_id)
        with pytest.raises(SandboxLost):
            await pipeline.decide_answer_file(_record(), session)
    finally:
        await session.close()


@pytest.mark.anyio
async def test_a_compose_container_its_samples_memory_stopped_is_the_models_zero(tmp_path):
    """Inspect's own `docker` provider (docker-compose) raises SandboxUnavailableError for a
    stopped container; with the engine's out-of-memory record, the answer reader, a program's
    run and the agent's tools take it as the memory limit instead (program_host.sandbox_death)."""
    import yaml
    from inspect_ai.util._sandbox.context import (
        sandbox_default,
        sandbox_environments_context_var,
    )
    from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment

    from smoldataenvs_tasks.inspect_adapter import tools
    from smoldataenvs_tasks.inspect_adapter.program_host import InspectSandboxHost
    from smoldataenvs_tasks.sandboxes import RESOURCES

    require_kind("docker")
    # The project's compose file with the small limits' memory (the hog stays small).
    service_file = yaml.safe_load((RESOURCES / "compose.yaml").read_text(encoding="utf-8"))
    service = service_file["services"]["default"]
    service["mem_limit"] = service["memswap_limit"] = str(SMALL_LIMITS.memory_bytes)
    config = tmp_path / "compose.yaml"
    config.write_text(yaml.safe_dump(service_file), encoding="utf-8")
    stage = make_stage(tmp_path / "stage")[1]
    record = _record()
    await DockerSandboxEnvironment.task_init("security", str(config))
    environments = await DockerSandboxEnvironment.sample_init(
        "security", str(config), {"stage_dir": str(stage)}
    )
    try:
        environment = environments["default"]
        host = InspectSandboxHost(environment)
        await host.exec(["sh", "-c", f"printf {WRONG} > {ANSWER_FILE}"])
        [container] = docker_lines(
            "ps", "--quiet", "--no-trunc",
            "--filter", f"label=com.docker.compose.project={environment._project.name}",
        )  # fmt: skip
        _expose_init(container, shelter=False)
        hog = await host.exec(["python3", "-c", _MEMORY_HOG], timeout=60)
        # Inspect's provider reports the command that took the container down as it ended
        # (killed, with what it printed); the calls after it find the container stopped.
        assert hog.returncode == 137, hog
        assert _state(container) == ["false", "true"]
        verdict = await pipeline.decide_answer_file(record, host)
        assert (verdict.reward, verdict.category) == (0.0, "program_broke_sandbox"), verdict
        outcome = await pipeline.run_program_outcome(host, _MEMORY_HOG, limits=SMALL_LIMITS)
        assert (outcome.failure, outcome.failure_detail) == ("resource_limit", "memory")
        token = sandbox_environments_context_var.set(environments)
        try:
            with sandbox_default("default"):
                said = await tools.bash_tool(timeout=20)(command="echo hello")
        finally:
            sandbox_environments_context_var.reset(token)
        assert "out-of-memory" in str(said), said
    finally:
        await DockerSandboxEnvironment.sample_cleanup("security", str(config), environments, False)
        await DockerSandboxEnvironment.task_cleanup("security", str(config), True)


# The program a whole run replays: it waits until the host has made its container's init the
# out-of-memory killer's first pick (`_ExposeEveryContainer`), prints its wrong answer, then
# asks for memory until the killer runs: the init goes first and the container stops. In a
# container never exposed it says so instead (a different answer, never the memory limit).
_STOPS_ITS_CONTAINER = (
    "import time\n"
    "for _ in range(300):\n"
    "    if open('/proc/1/oom_score_adj').read().strip() == '1000':\n"
    "        break\n"
    "    time.sleep(0.1)\n"
    "else:\n"
    "    print('unexposed')\n"
    "    raise SystemExit(0)\n"
    f"print({WRONG!r}, flush=True)\n"
    "hog = []\n"
    "while True:\n"
    "    hog.append(b'\\1' * (256 << 20))\n"
)


class _ExposeEveryContainer:
    """Host side, in a thread: every sandbox container this process starts gets its init moved
    back into its memory cgroup (after our provider's `shelter_init` moved it out) and made the
    out-of-memory killer's first pick, as `_expose_init` does for one container a test holds;
    here the run (lm-eval's batch, an Inspect eval) starts the containers itself. A retry's
    fresh container would be exposed too, and die the same way: the run would then have no
    verdict for the sample (ungraded, or an errored sample)."""

    def __init__(self) -> None:
        import threading

        self.exposed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _ExposeEveryContainer:
        if not Path("/sys/fs/cgroup/memory/docker").is_dir() or os.geteuid() != 0:
            pytest.skip("needs the host's cgroup v1 memory hierarchy, as root")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _watch(self) -> None:
        from smoldataenvs_tasks.sandboxes.docker.engine import LABEL_SESSION, owner_label

        while not self._stop.wait(0.05):
            for container in docker_lines(
                "ps", "--quiet", "--no-trunc",
                "--filter", f"label={LABEL_SESSION}=1", "--filter", f"label={owner_label()}",
            ):  # fmt: skip
                if container not in self.exposed and self._expose(container):
                    self.exposed.append(container)

    @staticmethod
    def _expose(container: str) -> bool:
        """Once the init is sheltered (out of the container's memory group): back in, first
        pick. False while the provider has not sheltered it yet."""
        pids = docker_lines("inspect", "--format", "{{.State.Pid}}", container)
        group = Path(f"/sys/fs/cgroup/memory/docker/{container}")
        try:
            inside = (group / "cgroup.procs").read_text(encoding="utf-8").split()
            if len(pids) != 1 or pids[0] in inside:
                return False
            (group / "cgroup.procs").write_text(pids[0], encoding="utf-8")
            Path(f"/proc/{pids[0]}/oom_score_adj").write_text("1000", encoding="utf-8")
        except OSError:
            return False  # gone meanwhile
        return True


def test_a_program_that_stops_its_container_is_the_models_zero_through_lm_eval(tmp_path):
    """lm-eval's batch (the program task, the replay model): the program's memory stops its
    container; the engine's record makes that its `resource_limit` 0, no second sandbox, and
    the run completes with the sample graded."""
    import lm_eval

    from smoldataenvs_tasks.lm_eval.models import ReplayLM
    from smoldataenvs_tasks.lm_eval.paths import task_manager
    from tests.replies import ORDERS_TASK, program_row, write_jsonl

    require_kind("docker")
    replay = write_jsonl(
        tmp_path / "stops.jsonl", [program_row(ORDERS_TASK, fenced(_STOPS_ITS_CONTAINER))]
    )
    with _ExposeEveryContainer() as watcher:
        results = lm_eval.simple_evaluate(
            model=ReplayLM(path=str(replay)),
            tasks=["smoldataenvs_program_sample"],
            task_manager=task_manager(
                include_defaults=False,
                metadata={"sandbox": "docker", "task_ids": ORDERS_TASK, "concurrency": 1},
            ),
            confirm_run_unsafe_code=True,
            log_samples=True,
            bootstrap_iters=0,
        )
    [sample] = results["samples"]["smoldataenvs_program_sample"]
    [verdict_text] = sample["filtered_resps"]
    verdict = json.loads(verdict_text)
    assert (verdict["reward"], verdict["category"], verdict["detail"]) == (
        0.0,
        "resource_limit",
        "memory",
    ), verdict
    metrics = results["results"]["smoldataenvs_program_sample"]
    assert (metrics["pass@1,verdicts"], metrics["ungraded,verdicts"]) == (0.0, 0.0)
    assert watcher.exposed, "no container was exposed"


def test_a_program_that_stops_its_container_is_the_models_zero_through_inspect(tmp_path):
    """The same program through a whole `inspect eval` with our `docker` provider: status
    success, the sample scored 0 at the memory limit, no error and no retry."""
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
    from tests.replies import ORDERS_TASK, program_row

    require_kind("docker")
    with _ExposeEveryContainer() as watcher:
        sample = _inspect_run(
            smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="docker"),
            program_row(ORDERS_TASK, fenced(_STOPS_ITS_CONTAINER)),
            tmp_path,
            "stops_its_container",
        )
    score = sample.scores["program_scorer"]
    assert (score.value, score.metadata["category"], score.metadata.get("detail")) == (
        0.0,
        "resource_limit",
        "memory",
    ), score
    assert watcher.exposed, "no container was exposed"
