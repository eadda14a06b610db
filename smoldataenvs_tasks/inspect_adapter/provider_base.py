"""What our Inspect sandbox providers share: an Inspect `SandboxEnvironment` over one of our sessions.

`bwrap_provider.py` (over `BwrapSession`) and `docker_provider.py` (over `DockerSession`) differ
only in how a sample's session starts and ends; the Inspect API on top of a session is this one
class, so both behave alike:

- `exec` returns a `SessionExecResult`: Inspect's `ExecResult` carrying the session's full
  `contract.ExecResult` (the contract limit a command hit: memory, processes, file size, which
  Inspect's type has no field for); it raises TimeoutError (with `truncated_output`) on timeout
  and OutputLimitExceededError past the output cap, as Inspect's own providers do, each also
  carrying that full result as `session_result` (`inspect_adapter.program_host` reads it);
- a user other than the sandbox's own raises SandboxUserUnsupportedError (so Inspect's root probe
  records "unusable" without running anything);
- a broken sandbox raises SandboxUnavailableError; relative paths resolve against the working
  directory (/home/user/input); `read_file` refuses files over Inspect's read limit before
  reading them.

The settings a task may pass are the contract's limits (`LimitsConfig`; defaults =
docs/design.md "The sandbox contract").
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, TypeVar, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
)
from pydantic import BaseModel
from typing_extensions import override

from smoldataenvs_tasks import contract
from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
from smoldataenvs_tasks.sandboxes import base
from smoldataenvs_tasks.sandboxes.leftovers import new_empty_stage_dir


class LimitsConfig(BaseModel, frozen=True):
    """A task's sandbox settings: the contract's limits (defaults = docs/design.md)."""

    program_timeout_s: float = DEFAULT_LIMITS.program_timeout_s
    tool_timeout_s: float = DEFAULT_LIMITS.tool_timeout_s
    memory_bytes: int = DEFAULT_LIMITS.memory_bytes
    cpus: float = DEFAULT_LIMITS.cpus
    max_processes: int = DEFAULT_LIMITS.max_processes
    max_file_bytes: int = DEFAULT_LIMITS.max_file_bytes
    max_output_bytes: int = DEFAULT_LIMITS.max_output_bytes

    def limits(self) -> SandboxLimits:
        return SandboxLimits(**{name: getattr(self, name) for name in LimitsConfig.model_fields})

    @classmethod
    def from_limits(cls, limits: SandboxLimits, **settings: Any) -> Self:
        return cls(
            **{name: getattr(limits, name) for name in LimitsConfig.model_fields}, **settings
        )


def config_of(
    config: SandboxEnvironmentConfigType | None, model: type[LimitsConfig], provider: str
) -> LimitsConfig:
    """The provider's settings from what a task passed (a model, its dict, or nothing)."""
    if isinstance(config, model):
        return config
    if isinstance(config, dict):
        return model(**config)
    if config is None:
        return model()
    raise ValueError(f"the {provider} sandbox takes a {model.__name__}, not {config!r}")


def unavailable(provider: str, error: base.SandboxUnavailable) -> RuntimeError:
    """The error Inspect prints as one line: this sandbox cannot run on this machine."""
    return PrerequisiteError(f"The {provider} sandbox cannot run here: {error}")


@dataclass
class SessionExecResult(ExecResult[str]):
    """Inspect's `ExecResult` of one of our sessions' commands, with the session's full result
    (its `limit`, `timed_out`, `duration_s`, and the exit status None for a killed command)."""

    session_result: contract.ExecResult


def session_result_of(error: BaseException) -> contract.ExecResult | None:
    """The full result an exec error of ours carries: on `error`, or on its cause (Inspect's
    recording proxy re-raises a timeout as a TimeoutError of its own, from ours)."""
    for candidate in (error, error.__cause__):
        found = getattr(candidate, "session_result", None)
        if isinstance(found, contract.ExecResult):
            return found
    return None


# The sample metadata key holding the sample's stage dir (set by the task's setup).
STAGE_DIR_KEY = "stage_dir"
_Session = TypeVar("_Session")


async def start_over_stage_dir(
    metadata: dict[str, str], provider: str, start: Callable[[Path], Awaitable[_Session]]
) -> tuple[_Session, Path | None]:
    """`start` a session over the sample's stage dir, or over an empty one of its own when the
    sample has none (a task other than ours); returns the session and that owned dir, which the
    caller removes with the session. A start that fails removes it; SandboxUnavailable becomes
    the one-line prerequisite error."""
    owned = None
    stage_dir = metadata.get(STAGE_DIR_KEY)
    if not stage_dir:
        owned = new_empty_stage_dir()  # named after us: swept if we die (sandboxes/leftovers)
        stage_dir = str(owned)
    try:
        return await start(Path(stage_dir)), owned
    except BaseException as error:
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
        if isinstance(error, base.SandboxUnavailable):
            raise unavailable(provider, error) from error
        raise


class SessionSandboxEnvironment(SandboxEnvironment):
    """An Inspect sandbox over one sample's session (`sandboxes.base.SandboxSession`)."""

    # Names `exec(user=...)` accepts for the sandbox's own (only) user.
    sandbox_users: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, session: Any) -> None:
        super().__init__()
        self.session = session

    @classmethod
    def default_concurrency(cls) -> int | None:
        # No limit: with one, Inspect sleeps random() s (mean 0.5 s) before every sample's sandbox
        # (a fairness delay between tasks). Samples in flight are bounded by --max-samples, and
        # the programs running at once by the program slots (tools.program_gate).
        return None

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
        if user is not None and user not in self.sandbox_users:
            raise SandboxUserUnsupportedError(
                f"this sandbox runs commands only as its own user ({sorted(self.sandbox_users)}), "
                f"not as {user!r}"
            )
        try:
            result = await self.session.exec(cmd, input=input, cwd=cwd, timeout=timeout, env=env)
        except base.SandboxFailure as error:
            raise SandboxUnavailableError(str(error)) from error
        if result.timed_out:
            timeout_error = TimeoutError(f"Command timed out after {timeout} seconds")
            timeout_error.truncated_output = result.stdout  # type: ignore[attr-defined]
            timeout_error.session_result = result  # type: ignore[attr-defined]
            raise timeout_error
        if result.limit == "output":
            overflow = OutputLimitExceededError(
                limit_str=f"{self.session.limits.max_output_bytes} bytes",
                truncated_output=result.stdout,
            )
            overflow.session_result = result  # type: ignore[attr-defined]
            raise overflow
        return SessionExecResult(
            success=result.success,
            returncode=result.returncode if result.returncode is not None else -1,
            stdout=result.stdout,
            stderr=result.stderr,
            session_result=result,
        )

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        try:
            await self.session.write_file(file, contents)
        except base.SandboxFailure as error:
            raise SandboxUnavailableError(str(error)) from error

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
        except base.FileTooLarge as error:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
            ) from error
        except base.SandboxFailure as error:
            raise SandboxUnavailableError(str(error)) from error
        # newline="" semantics: bytes.decode keeps \r\n as it is.
        return data.decode("utf-8") if text else data

    def default_polling_interval(self) -> float:
        return 0.2
