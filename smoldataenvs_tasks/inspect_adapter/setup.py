"""The setup step of every SmolDataEnvs Inspect task, and the cleanup after it.

`prepare_sample` checks that the sample runs in the sandbox the task asked for (Inspect's
`--sandbox` override would drop our compose config), ends an invalid row's sample before any
model call (ungraded `invalid_row`), stages the sample's tables through `pipeline.prepare_tables`
(the staging lm-eval and `validate` use: a table that cannot be had, or whose bytes differ from
their recorded sha256, marks the sample ungraded and ends it before any model call), records the
sha256 of the bytes staged, links them into the sandbox's `/home/user/input`, and relocates
prompt paths for the `local` sandbox.
`release_sample` (the task's cleanup) empties the sample's stage dir once no epoch uses it.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox as current_sandbox
from inspect_ai.util import store

from smoldataenvs_tasks import contract
from smoldataenvs_tasks.data.prompts import relocate_paths
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.inspect_adapter._compat import DockerSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.bwrap_provider import BwrapSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.docker_provider import DockerSessionSandboxEnvironment
from smoldataenvs_tasks.pipeline import prepare_tables
from smoldataenvs_tasks.sandboxes.inputs import LINK_INPUTS_COMMAND
from smoldataenvs_tasks.scorers.verdict import UngradedReason

logger = logging.getLogger(__name__)

# Keys under which a sample's state carries what the scorer needs.
TABLE_ERROR_KEY = "smoldataenvs_table_error"
TABLE_CORRUPT_KEY = "smoldataenvs_table_corrupt"  # True: the error is `table_corrupt`
TABLE_DIGESTS_KEY = "smoldataenvs_table_sha256"
PATHS_KEY = "smoldataenvs_paths"
STAGED_KEY = "smoldataenvs_staged"

# Per stage dir: a lock for staging, and how many running epochs use it (emptied at zero).
_stage_locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)
_stage_users: Counter[str] = Counter()

# Sandbox kinds whose tables are fetched inside the sandbox by a stager (compose.remote.yaml,
# values.yaml), which leaves this marker when a table could not be found.
REMOTE_KINDS = ("docker-remote", "k8s")
# Inspect's docker provider with compose.yaml: its link command also checks the image.
COMPOSE_KIND = "docker-compose"
_MISSING_MARKERS = ("/mnt/tables/.smoldata-missing", "/mnt/stage/tables/.smoldata-missing")

# Written into our Docker image and bwrap env; its absence means a foreign sandbox.
SANDBOX_MARKER = f"{contract.ENV_DIR}/bin/python3"


class SandboxOverrideError(SmolDataEnvsError, RuntimeError):
    pass


_OVERRIDE_HINT = (
    "Inspect's --sandbox option replaces the task's sandbox config and is not supported "
    "here: choose the sandbox with -T sandbox=bwrap|docker|docker-compose|docker-remote|k8s|local|"
    "auto instead."
)


def record_of(state: TaskState) -> TaskRecord:
    return TaskRecord.from_doc(state.metadata["record"])


def is_provider(env: object, provider: type) -> bool:
    """Whether `env` (Inspect's recording proxy or the environment itself) is of `provider`."""
    try:
        env.as_type(provider)  # type: ignore[attr-defined]  (sees through Inspect's proxy)
    except TypeError:
        return False
    return True


async def _check_sandbox_kind(expected: str, *, probe_image: bool = True) -> None:
    """The sample runs in the sandbox the task set. `probe_image=False` leaves the image check
    to the caller (compose folds it into the link command: one exec instead of two). Our own
    Docker provider needs no probe: it runs this package's image by construction."""
    env = current_sandbox()
    hint = _OVERRIDE_HINT
    if expected == "bwrap" and not is_provider(env, BwrapSandboxEnvironment):
        raise SandboxOverrideError(
            f"this sample's sandbox is not the bwrap one the task set. {hint}"
        )
    if expected in ("docker", "docker-compose", "docker-remote", "k8s"):
        provider = {
            "docker": DockerSessionSandboxEnvironment,
            "docker-compose": DockerSandboxEnvironment,
            "docker-remote": DockerSandboxEnvironment,
        }.get(expected)
        foreign = provider is not None and not is_provider(env, provider)
        if not foreign and probe_image and expected != "docker":
            probe = await env.exec(["test", "-x", SANDBOX_MARKER], timeout=30)
            foreign = not probe.success
        if foreign:
            raise SandboxOverrideError(
                f"this sample's sandbox is not the SmolDataEnvs Docker image. {hint}"
            )


# Exit status of the Docker link command when the image lacks our environment.
_MARKER_MISSING = 97


def _bwrap_session() -> Any | None:
    """This sample's bwrap session when the sandbox is our bwrap one, with a usable input dir."""
    try:
        ours = current_sandbox().as_type(BwrapSandboxEnvironment)
    except TypeError:
        return None
    input_dir = ours.session.input_dir
    # Setup runs before any model-written code, so nothing in the sandbox can have swapped the
    # directory for a link out of it; checked anyway, since the host follows what it finds here.
    if input_dir.is_symlink() or not input_dir.is_dir():
        return None
    return ours.session


async def _link_inputs(stage_dir: Path, sandbox_kind: str) -> None:
    """/home/user/input gets one link per staged table (docs/design.md "The sandbox contract")."""
    if sandbox_kind == "docker":
        # Our provider's session runs the image's init script, which links every staged table,
        # in its first command (before any model-written code): no exec of its own (~0.07 s).
        return
    session = _bwrap_session() if sandbox_kind == "bwrap" else None
    if session is not None:
        # The links LINK_INPUTS_COMMAND would make, written on the host: no bwrap start (~30 ms).
        names = sorted(os.listdir(stage_dir))
        await anyio.to_thread.run_sync(lambda: session.link_inputs(names))
        return
    shell, flag, script = LINK_INPUTS_COMMAND
    if sandbox_kind == COMPOSE_KIND:
        # The image check of _check_sandbox_kind, in the same exec (`compose exec` ~0.1 s).
        script = f"test -x {SANDBOX_MARKER} || exit {_MARKER_MISSING}; {script}"
    linked = await current_sandbox().exec([shell, flag, script], timeout=60)
    if sandbox_kind == COMPOSE_KIND and linked.returncode == _MARKER_MISSING:
        raise SandboxOverrideError(
            f"this sample's sandbox is not the SmolDataEnvs Docker image. {_OVERRIDE_HINT}"
        )
    if not linked.success:
        raise RuntimeError(f"could not link the tables into the sandbox: {linked.stderr}")


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
        await _check_sandbox_kind(sandbox_kind, probe_image=sandbox_kind != COMPOSE_KIND)
        record = record_of(state)
        if record.invalid_row is not None:
            # No tables, no model call; the scorer reads the reason from the record.
            return await _end_unscorable(state, sandbox_kind, None, False)
        if sandbox_kind in REMOTE_KINDS:
            # The stager already ran before the sandbox started; ask it what it could not find.
            found = await current_sandbox().exec(
                ["sh", "-c", f"cat {' '.join(_MISSING_MARKERS)} 2>/dev/null"], timeout=30
            )
            if found.stdout.strip():
                state.metadata[TABLE_ERROR_KEY] = found.stdout.strip()
                state.completed = True
            return state
        stage_dir = Path(state.metadata["stage_dir"])
        # Epochs of one sample run at once and share its stage dir (Docker mounts it by path).
        async with _stage_locks[str(stage_dir)]:
            prepared = await anyio.to_thread.run_sync(
                lambda: prepare_tables(record, stage_dir, mirror=mirror, revision=revision)
            )
            if prepared.problem is None:
                _stage_users[str(stage_dir)] += 1
                state.metadata[STAGED_KEY] = True
                state.metadata[TABLE_DIGESTS_KEY] = prepared.table_sha256
        if prepared.problem is not None:
            corrupt = prepared.problem is UngradedReason.TABLE_CORRUPT
            return await _end_unscorable(state, sandbox_kind, prepared.reason, corrupt)
        if sandbox_kind == "local":
            paths = await _relocate_for_local(state)
            store().set(PATHS_KEY, paths)
            for name in sorted(prepared.table_sha256):
                await current_sandbox().exec(
                    ["ln", "-sfn", str(stage_dir / name), f"{paths['input']}/{name}"], timeout=30
                )
            return state
        await _link_inputs(stage_dir, sandbox_kind)
        return state

    return solve


async def _end_unscorable(
    state: TaskState, sandbox_kind: str, error: str | None, corrupt: bool
) -> TaskState:
    """End the sample before generation (no tokens spent on a task nobody can grade); the
    scorer turns the recorded error into the ungraded verdict."""
    if sandbox_kind == COMPOSE_KIND:
        await _check_sandbox_kind(sandbox_kind)  # no link command to check the image
    if error is not None:
        state.metadata[TABLE_ERROR_KEY] = error
    if corrupt:
        state.metadata[TABLE_CORRUPT_KEY] = True
    state.completed = True
    return state


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


def sample_paths() -> dict[str, str]:
    """Contract paths for this sample: fixed in real sandboxes, temp dirs under `local`."""
    relocated: dict[str, str] | None = store().get(PATHS_KEY)
    return relocated or {
        "input": contract.INPUT_DIR,
        "workdir": contract.WORKDIR,
        "tmp": contract.TMP_DIR,
    }
