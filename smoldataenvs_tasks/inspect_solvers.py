"""Inspect solvers and tools shared by the SmolDataEnvs tasks.

- `prepare_sample`: the setup step of every variant. It checks that the sample runs in the sandbox
  the task asked for (Inspect's `--sandbox` override would drop our compose config), fetches the
  sample's tables (a table that cannot be had marks the sample ungraded and ends it before any
  model call), links them into the sandbox's `/home/user/input`, and relocates prompt paths for
  the `local` sandbox.
- `bash_tool` / `python_tool`: the SFT data's tool schema, `bash(command)` (not Inspect's built-in
  `bash(cmd)`), each call a fresh process in the sample's sandbox.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path

import anyio
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import sandbox as current_sandbox
from inspect_ai.util import store

from smoldataenvs_tasks.data.prompts import relocate_paths
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.staging import LINK_INPUTS_COMMAND, stage_tables
from smoldataenvs_tasks.data.tables import resolve_tables
from smoldataenvs_tasks.sandboxes import limits as contract

logger = logging.getLogger(__name__)

# Keys under which a sample's state carries what the scorer needs.
TABLE_ERROR_KEY = "smoldataenvs_table_error"
TABLE_DIGESTS_KEY = "smoldataenvs_table_sha256"
PATHS_KEY = "smoldataenvs_paths"
STAGED_KEY = "smoldataenvs_staged"

# Per stage dir: a lock for staging, and how many running epochs use it (emptied at zero).
_stage_locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)
_stage_users: Counter[str] = Counter()

# Sandbox kinds whose tables are fetched inside the sandbox by a stager (compose.remote.yaml,
# values.yaml), which leaves this marker when a table could not be found.
REMOTE_KINDS = ("docker-remote", "k8s")
_MISSING_MARKERS = ("/mnt/tables/.smoldata-missing", "/mnt/stage/tables/.smoldata-missing")

# Written into our Docker image and bwrap env; its absence means a foreign sandbox.
SANDBOX_MARKER = f"{contract.ENV_DIR}/bin/python3"


class SandboxOverrideError(RuntimeError):
    pass


def record_of(state: TaskState) -> TaskRecord:
    return TaskRecord.from_doc(state.metadata["record"])


def _is_provider(env: object, provider: type) -> bool:
    try:
        env.as_type(provider)  # type: ignore[attr-defined]  (sees through Inspect's proxy)
    except TypeError:
        return False
    return True


async def _check_sandbox_kind(expected: str) -> None:
    from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment

    from smoldataenvs_tasks.sandboxes.inspect_bwrap import BwrapSandboxEnvironment

    env = current_sandbox()
    hint = (
        "Inspect's --sandbox option replaces the task's sandbox config and is not supported "
        "here: choose the sandbox with -T sandbox=bwrap|docker|local|auto instead."
    )
    if expected == "bwrap" and not _is_provider(env, BwrapSandboxEnvironment):
        raise SandboxOverrideError(
            f"this sample's sandbox is not the bwrap one the task set. {hint}"
        )
    if expected in ("docker", "docker-remote", "k8s"):
        probe = await env.exec(["test", "-x", SANDBOX_MARKER], timeout=30)
        foreign = expected != "k8s" and not _is_provider(env, DockerSandboxEnvironment)
        if foreign or not probe.success:
            raise SandboxOverrideError(
                f"this sample's sandbox is not the SmolDataEnvs Docker image. {hint}"
            )


async def _relocate_for_local(state: TaskState) -> dict[str, str]:
    """The `local` sandbox has no fixed paths: use dirs under its temp cwd and say so in prompts."""
    env = current_sandbox()
    result = await env.exec(["pwd"], timeout=30)
    root = result.stdout.strip()
    paths = {
        "input": f"{root}/input",
        "workdir": f"{root}/workdir",
        "tmp": f"{root}/tmp",
    }
    await env.exec(["mkdir", "-p", *paths.values()], timeout=30)
    for message in state.messages:
        if isinstance(message, ChatMessageSystem | ChatMessageUser) and isinstance(
            message.content, str
        ):
            message.content = relocate_paths(message.content, paths["input"], paths["workdir"])
    return paths


@solver
def prepare_sample(*, sandbox_kind: str, mirror: str | None, revision: str | None) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await _check_sandbox_kind(sandbox_kind)
        if sandbox_kind in REMOTE_KINDS:
            # The stager already ran before the sandbox started; ask it what it could not find.
            found = await current_sandbox().exec(
                ["sh", "-c", f"cat {' '.join(_MISSING_MARKERS)} 2>/dev/null"], timeout=30
            )
            if found.stdout.strip():
                state.metadata[TABLE_ERROR_KEY] = found.stdout.strip()
                state.completed = True
            return state
        record = record_of(state)
        table_set = await anyio.to_thread.run_sync(
            lambda: resolve_tables(record, mirror=mirror, revision=revision)
        )
        if not table_set.available:
            # Found before generation: no tokens are spent on a task nobody can grade.
            state.metadata[TABLE_ERROR_KEY] = table_set.error
            state.completed = True
            return state
        state.metadata[TABLE_DIGESTS_KEY] = {f.name: f.sha256 for f in table_set.files}
        env = current_sandbox()
        if sandbox_kind == "local":
            paths = await _relocate_for_local(state)
            store().set(PATHS_KEY, paths)
            for table in table_set.files:
                await env.exec(
                    ["ln", "-sfn", str(table.path), f"{paths['input']}/{table.name}"], timeout=30
                )
            return state
        stage_dir = Path(state.metadata["stage_dir"])
        # Epochs of one sample run at once and share its stage dir (Docker mounts it by path).
        async with _stage_locks[str(stage_dir)]:
            await anyio.to_thread.run_sync(lambda: stage_tables(table_set, stage_dir))
            _stage_users[str(stage_dir)] += 1
            state.metadata[STAGED_KEY] = True
        linked = await env.exec(list(LINK_INPUTS_COMMAND), timeout=60)
        if not linked.success:
            raise RuntimeError(f"could not link the tables into the sandbox: {linked.stderr}")
        return state

    return solve


async def release_sample(state: TaskState) -> None:
    """Task cleanup: once no epoch of the sample runs, drop its stage dir's links.

    The links cost no space, but they keep a table's old bytes alive after `cache clear` or a
    re-download; the (empty) directory stays because Docker binds it by path for later epochs.
    """
    if not state.metadata.get(STAGED_KEY):
        return
    stage_dir = str(state.metadata["stage_dir"])
    async with _stage_locks[stage_dir]:
        _stage_users[stage_dir] -= 1
        if _stage_users[stage_dir] <= 0:
            del _stage_users[stage_dir]
            await anyio.to_thread.run_sync(empty_stage_dir, Path(stage_dir))


def empty_stage_dir(stage_dir: Path) -> None:
    for entry in stage_dir.iterdir() if stage_dir.is_dir() else []:
        if entry.is_file() or entry.is_symlink():
            entry.unlink(missing_ok=True)


def _combined_output(stdout: str, stderr: str) -> str:
    if stdout and stderr:
        return f"{stdout.rstrip()}\n{stderr}" if not stdout.endswith("\n") else stdout + stderr
    return stdout or stderr


def sample_paths() -> dict[str, str]:
    """Contract paths for this sample: fixed in real sandboxes, temp dirs under `local`."""
    relocated: dict[str, str] | None = store().get(PATHS_KEY)
    return relocated or {
        "input": contract.INPUT_DIR,
        "workdir": contract.WORKDIR,
        "tmp": contract.TMP_DIR,
    }


def bash_tool(*, timeout: float) -> Tool:
    async def execute(command: str) -> str:
        result = await current_sandbox().exec(
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
        result = await current_sandbox().exec(
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
