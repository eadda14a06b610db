"""Inspect sandbox provider `bwrap`: each sample in its own `BwrapSession`.

Registered through the package's `inspect_ai` entry point (`_registry.py` imports this module),
so a task can say `sandbox=("bwrap", BwrapSandboxConfig(...))` or `sandbox="bwrap"`. The sample's
tables come from sample metadata key `stage_dir` (a host directory of the sample's tables; an
empty one is used when absent).

    inspect eval smoldataenvs_tasks/smoldataenvs_program -T sandbox=bwrap --model ...

Behaviour matched to Inspect's local/docker providers: `exec` raises TimeoutError (with
`truncated_output`) on timeout and OutputLimitExceededError past the output cap; relative paths
resolve against the working directory (/home/user/input); `user` other than the sandbox's own
user raises SandboxUserUnsupportedError (so Inspect's root probe records "unusable").
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import override

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
from smoldataenvs_tasks.sandboxes import base
from smoldataenvs_tasks.sandboxes.bwrap import (
    SANDBOX_UID,
    BwrapSession,
    FileTooLarge,
    probe_bwrap,
)

STAGE_DIR_KEY = "stage_dir"
_SANDBOX_USERS = {"user", str(SANDBOX_UID)}


class BwrapSandboxConfig(BaseModel, frozen=True):
    """The task's sandbox settings: the contract's limits (defaults = docs/design.md)."""

    program_timeout_s: float = DEFAULT_LIMITS.program_timeout_s
    tool_timeout_s: float = DEFAULT_LIMITS.tool_timeout_s
    memory_bytes: int = DEFAULT_LIMITS.memory_bytes
    cpus: float = DEFAULT_LIMITS.cpus
    max_processes: int = DEFAULT_LIMITS.max_processes
    max_file_bytes: int = DEFAULT_LIMITS.max_file_bytes
    max_output_bytes: int = DEFAULT_LIMITS.max_output_bytes

    def limits(self) -> SandboxLimits:
        return SandboxLimits(**self.model_dump())

    @classmethod
    def from_limits(cls, limits: SandboxLimits) -> BwrapSandboxConfig:
        return cls(**{name: getattr(limits, name) for name in cls.model_fields})


def _limits(config: SandboxEnvironmentConfigType | None) -> SandboxLimits:
    if isinstance(config, BwrapSandboxConfig):
        return config.limits()
    if isinstance(config, dict):
        return BwrapSandboxConfig(**config).limits()
    if config is None:
        return DEFAULT_LIMITS
    raise ValueError(f"the bwrap sandbox takes a BwrapSandboxConfig, not {config!r}")


def _unavailable(error: base.SandboxUnavailable) -> RuntimeError:
    return PrerequisiteError(f"The bwrap sandbox cannot run here: {error}")


@sandboxenv(name="bwrap")
class BwrapSandboxEnvironment(SandboxEnvironment):
    def __init__(self, session: BwrapSession, owned_stage_dir: Path | None = None) -> None:
        super().__init__()
        self.session = session
        self.owned_stage_dir = owned_stage_dir
        # The full result of the latest exec (with cgroup limits); read by inspect_adapter.
        self.last_result: base.ExecResult | None = None

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return BwrapSandboxConfig(**config)

    @classmethod
    def default_concurrency(cls) -> int | None:
        return None  # a session costs ~30 ms and no daemon: the sample concurrency limits it

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        import asyncio

        from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

        _limits(config)  # a bad config fails at task start, not per sample
        try:
            probe_bwrap()
            await asyncio.to_thread(ensure_env)  # minutes once; then instant
        except base.SandboxUnavailable as error:
            raise _unavailable(error) from error

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        owned = None
        stage_dir = metadata.get(STAGE_DIR_KEY)
        if not stage_dir:
            owned = Path(tempfile.mkdtemp(prefix="smoldataenvs-empty-stage-"))
            stage_dir = str(owned)
        try:
            session = await BwrapSession.start(Path(stage_dir), limits=_limits(config))
        except base.SandboxUnavailable as error:
            if owned is not None:
                shutil.rmtree(owned, ignore_errors=True)
            raise _unavailable(error) from error
        except BaseException:
            if owned is not None:
                shutil.rmtree(owned, ignore_errors=True)
            raise
        return {"default": cls(session, owned)}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            ours = environment.as_type(BwrapSandboxEnvironment)
            try:
                await ours.session.close()
            finally:
                if ours.owned_stage_dir is not None:
                    shutil.rmtree(ours.owned_stage_dir, ignore_errors=True)

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if user is not None and user not in _SANDBOX_USERS:
            raise SandboxUserUnsupportedError(
                f"the bwrap sandbox runs commands only as its own user (uid {SANDBOX_UID}), "
                f"not as {user!r}"
            )
        try:
            result = await self.session.exec(cmd, input=input, cwd=cwd, timeout=timeout, env=env)
        except base.SandboxFailure as error:
            from inspect_ai.util import SandboxUnavailableError

            raise SandboxUnavailableError(str(error)) from error
        self.last_result = result
        if result.timed_out:
            timeout_error = TimeoutError(f"Command timed out after {timeout} seconds")
            timeout_error.truncated_output = result.stdout  # type: ignore[attr-defined]
            raise timeout_error
        if result.limit == "output":
            raise OutputLimitExceededError(
                limit_str=f"{self.session.limits.max_output_bytes} bytes",
                truncated_output=result.stdout,
            )
        return ExecResult(
            success=result.success,
            returncode=result.returncode if result.returncode is not None else -1,
            stdout=result.stdout,
            stderr=result.stderr,
        )

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        await self.session.write_file(file, contents)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        try:
            data = await self.session.read_file(
                file, max_bytes=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
            )
        except FileTooLarge as error:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
            ) from error
        # newline="" semantics: bytes.decode keeps \r\n as it is.
        return data.decode("utf-8") if text else data

    def default_polling_interval(self) -> float:
        return 0.2
