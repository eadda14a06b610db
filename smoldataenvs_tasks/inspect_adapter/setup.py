"""The setup step of every SmolDataEnvs Inspect task, and the cleanup after it.

`prepare_sample` checks that the sample runs in the sandbox the task asked for (Inspect's
`--sandbox` override would drop our configuration), ends an invalid row's sample before any
model call (ungraded `invalid_row`), stages the sample's tables through `pipeline.prepare_tables`
(the staging lm-eval and `validate` use: a table that cannot be had, or whose bytes differ from
their recorded sha256, marks the sample ungraded and ends it before any model call), records the
sha256 of the bytes staged, and has `/home/user/input` linked. What differs between sandbox kinds
is read from the kind's record (`sandboxes/kinds.py`): where the tables are staged, who links
them, whether the image must be checked, and whether prompts name relocated paths (`local`).
`release_sample` (the task's cleanup) empties the sample's stage dir once no epoch uses it.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, defaultdict
from pathlib import Path

import anyio
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks import contract
from smoldataenvs_tasks.data.prompts import relocate_paths
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.inspect_adapter._compat import package_name
from smoldataenvs_tasks.inspect_adapter.providers import provider_class, runs_in, session_of
from smoldataenvs_tasks.pipeline import prepare_tables
from smoldataenvs_tasks.sandboxes.base import HostInputs, RelocatedPaths
from smoldataenvs_tasks.sandboxes.inputs import LINK_INPUTS_COMMAND
from smoldataenvs_tasks.sandboxes.kinds import CHOICES, InputLinks, SandboxKind, Staging, kind
from smoldataenvs_tasks.scorers.verdict import UngradedReason

logger = logging.getLogger(__name__)

# Keys under which a sample's state carries what the scorer needs.
TABLE_ERROR_KEY = "smoldataenvs_table_error"
TABLE_CORRUPT_KEY = "smoldataenvs_table_corrupt"  # True: the error is `table_corrupt`
TABLE_DIGESTS_KEY = "smoldataenvs_table_sha256"
STAGED_KEY = "smoldataenvs_staged"

# Per stage dir: a lock for staging, and how many running epochs use it (emptied at zero).
_stage_locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)
_stage_users: Counter[str] = Counter()

# Where a stager that fetched the tables inside the sandbox (compose.remote.yaml, values.yaml)
# names those it could not find.
_MISSING_MARKERS = ("/mnt/tables/.smoldata-missing", "/mnt/stage/tables/.smoldata-missing")

# Written into our Docker image and bwrap env; its absence means a foreign sandbox.
SANDBOX_MARKER = f"{contract.ENV_DIR}/bin/python3"
# Exit status of the link command when the image lacks our environment.
_MARKER_MISSING = 97


class SandboxOverrideError(SmolDataEnvsError, RuntimeError):
    pass


_OVERRIDE_HINT = (
    "Inspect's --sandbox option replaces the task's sandbox config and is not supported "
    f"here: choose the sandbox with -T sandbox={'|'.join(CHOICES)} instead."
)


def record_of(state: TaskState) -> TaskRecord:
    return TaskRecord.from_doc(state.metadata["record"])


async def _check_sandbox_kind(expected: SandboxKind, *, probe_image: bool = True) -> None:
    """The sample runs in the sandbox the task set: the kind's provider, and, where Inspect's own
    provider could run another image (`runs_in_image`), our image. `probe_image=False` leaves
    the image check to the caller (a kind whose inputs are linked by a command folds it into
    that command: one exec instead of two)."""
    env = current_sandbox()
    if provider_class(expected) is not None and not runs_in(env, expected):
        raise SandboxOverrideError(
            f"this sample's sandbox is not the {expected.name} one the task set. {_OVERRIDE_HINT}"
        )
    if expected.runs_in_image and probe_image:
        probe = await env.exec(["test", "-x", SANDBOX_MARKER], timeout=30)
        if not probe.success:
            raise SandboxOverrideError(
                f"this sample's sandbox is not the SmolDataEnvs Docker image. {_OVERRIDE_HINT}"
            )


def _host_input_session() -> HostInputs | None:
    """This sample's session when its input dir is a usable host directory (ours, whose kind
    links inputs on the host)."""
    session = session_of(current_sandbox())
    if not isinstance(session, HostInputs):
        return None
    input_dir = session.input_dir
    # Setup runs before any model-written code, so nothing in the sandbox can have swapped the
    # directory for a link out of it; checked anyway, since the host follows what it finds here.
    if input_dir.is_symlink() or not input_dir.is_dir():
        return None
    return session


async def _link_inputs(stage_dir: Path, sandbox_kind: SandboxKind) -> None:
    """/home/user/input gets one link per staged table (docs/design.md "The sandbox contract")."""
    if sandbox_kind.inputs is InputLinks.AT_START:
        # The session runs the image's init script, which links every staged table, in its
        # first command (before any model-written code): no exec of its own (~0.07 s).
        return
    session = _host_input_session() if sandbox_kind.inputs is InputLinks.ON_HOST else None
    if session is not None:
        # The links LINK_INPUTS_COMMAND would make, written on the host: no sandbox start
        # (~30 ms under bwrap).
        names = sorted(os.listdir(stage_dir))
        await anyio.to_thread.run_sync(lambda: session.link_inputs(names))
        return
    shell, flag, script = LINK_INPUTS_COMMAND
    check_image = sandbox_kind.runs_in_image
    if check_image:
        # The image check of _check_sandbox_kind, in the same exec (`compose exec` ~0.1 s).
        script = f"test -x {SANDBOX_MARKER} || exit {_MARKER_MISSING}; {script}"
    linked = await current_sandbox().exec([shell, flag, script], timeout=60)
    if check_image and linked.returncode == _MARKER_MISSING:
        raise SandboxOverrideError(
            f"this sample's sandbox is not the SmolDataEnvs Docker image. {_OVERRIDE_HINT}"
        )
    if not linked.success:
        raise RuntimeError(f"could not link the tables into the sandbox: {linked.stderr}")


def _relocate_prompts(state: TaskState) -> None:
    """A kind without the contract's paths (`local`): the prompts name the session's own."""
    session = session_of(current_sandbox())
    if not isinstance(session, RelocatedPaths):
        return
    paths = session.prompt_paths
    for message in state.messages:
        if isinstance(message, ChatMessageSystem | ChatMessageUser) and isinstance(
            message.content, str
        ):
            message.content = relocate_paths(message.content, **paths)


@solver(name=package_name("prepare_sample"))
def prepare_sample(*, sandbox_kind: str, mirror: str | None, revision: str | None) -> Solver:
    expected = kind(sandbox_kind)
    # A kind whose inputs are linked by a command checks the image in that command.
    probe_image = expected.inputs is not InputLinks.BY_COMMAND

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        await _check_sandbox_kind(expected, probe_image=probe_image)
        record = record_of(state)
        if record.invalid_row is not None:
            # No tables, no model call; the scorer reads the reason from the record.
            return await _end_unscorable(state, expected, None, False)
        if expected.staging is Staging.IN_SANDBOX:
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
            return await _end_unscorable(state, expected, prepared.reason, corrupt)
        await _link_inputs(stage_dir, expected)
        if not expected.contract_paths:
            _relocate_prompts(state)
        return state

    return solve


async def _end_unscorable(
    state: TaskState, sandbox_kind: SandboxKind, error: str | None, corrupt: bool
) -> TaskState:
    """End the sample before generation (no tokens spent on a task nobody can grade); the
    scorer turns the recorded error into the ungraded verdict."""
    if sandbox_kind.inputs is InputLinks.BY_COMMAND:
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
