"""What our Inspect sandbox providers share: an Inspect `SandboxEnvironment` over the sessions
of one sandbox kind (`sandboxes/kinds.py`).

`bwrap_provider.py` (over `BwrapSession`) and `docker_provider.py` (over `DockerSession`), and
the providers `providers.register_session_providers` makes from a kind's record (`local`'s,
over `LocalSession`), only name their kind, their settings and the users they accept; the
lifecycle and the Inspect API on top of a session are this one class, so all behave alike:

- `task_init` checks the kind's prerequisites (one line when it cannot run here); a sample's
  session comes from a `SessionSource` of the kind (started per sample, or taken from spares) over
  the sample's stage dir, and goes back to it at `sample_cleanup` (closed, or for kinds with
  spares reset or removed in the background; `task_cleanup` waits for those);
  `inspect sandbox cleanup <provider>` runs the kind's cleanup;
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

import asyncio
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
from smoldataenvs_tasks.sandboxes.kinds import SandboxKind
from smoldataenvs_tasks.sandboxes.leftovers import new_empty_stage_dir, remove_empty_stage_dir
from smoldataenvs_tasks.sandboxes.opening import SessionSource


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


def unavailable(provider: str, error: base.SandboxUnavailable) -> PrerequisiteError:
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
        owned = new_empty_stage_dir()  # ours under a lock: swept if we die (sandboxes/leftovers)
        stage_dir = str(owned)
    try:
        return await start(Path(stage_dir)), owned
    except BaseException as error:
        if owned is not None:
            remove_empty_stage_dir(owned)
        if isinstance(error, base.SandboxUnavailable):
            raise unavailable(provider, error) from error
        raise


class SessionSandboxEnvironment(SandboxEnvironment):
    """An Inspect sandbox over one sample's session (`sandboxes.base.SandboxSession`) of the
    subclass's `kind`; a subclass registered with `@sandboxenv(name=kind.provider)` is a
    provider."""

    kind: ClassVar[SandboxKind]
    # The settings a task may pass (`Task(sandbox=(provider, config))`).
    config_model: ClassVar[type[LimitsConfig]] = LimitsConfig
    # Names `exec(user=...)` accepts for the sandbox's own (only) user, uid 1000.
    sandbox_users: ClassVar[frozenset[str]] = frozenset({"user", "1000"})
    # Per provider class and process (`__init_subclass__`): the sessions it started and has not
    # ended (task_cleanup ends what is left), and where they come from, one source per settings.
    _open: ClassVar[set[Any]]
    _sources: ClassVar[dict[Any, SessionSource]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._open = set()
        cls._sources = {}

    def __init__(self, session: Any, owned_stage_dir: Path | None, source: SessionSource) -> None:
        super().__init__()
        self.session = session
        self.owned_stage_dir = owned_stage_dir
        self.source = source  # where the session came from (told when it ends)

    @classmethod
    def settings(cls, config: SandboxEnvironmentConfigType | None) -> LimitsConfig:
        return config_of(config, cls.config_model, cls.kind.provider)

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return cls.config_model(**config)

    @classmethod
    async def check_prerequisites(cls, settings: LimitsConfig) -> None:
        """Raises SandboxUnavailable when the kind cannot run here (before any sample)."""
        await asyncio.to_thread(cls.kind.check_prerequisites)

    @classmethod
    def source_key(cls, settings: LimitsConfig) -> Any:
        return settings.limits()

    @classmethod
    def new_source(cls, settings: LimitsConfig) -> SessionSource:
        return SessionSource(cls.kind.name, limits=settings.limits())

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        settings = cls.settings(config)  # a bad config fails at task start, not per sample
        try:
            await cls.check_prerequisites(settings)
        except base.SandboxUnavailable as error:
            raise unavailable(cls.kind.name, error) from error

    @override
    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        settings = cls.settings(config)
        key = cls.source_key(settings)
        if key not in cls._sources:
            cls._sources[key] = cls.new_source(settings)
        source = cls._sources[key]
        session, owned = await start_over_stage_dir(metadata, cls.kind.name, source.open)
        cls._open.add(session)
        return {"default": cls(session, owned, source)}

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
            ours = environment.as_type(cls)
            cls._open.discard(ours.session)
            owned = ours.owned_stage_dir

            def remove_owned(owned: Path | None = owned) -> None:
                if owned is not None:
                    remove_empty_stage_dir(owned)

            if interrupted or cls.kind.spares is None:
                # Closed before returning (a cancelled sample's too: Inspect shields this call,
                # and a half-done reset is never kept).
                await ours.source.end_now(ours.session, reuse=False, then=remove_owned)
            else:  # reset and kept for a later sample, or removed: off the sample's path
                ours.source.end(ours.session, then=remove_owned)

    @override
    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        sources = list(cls._sources.values())
        cls._sources.clear()
        # Every finished sample's reset or removal, then the spares no sample took.
        await asyncio.gather(*(source.aclose() for source in sources), return_exceptions=True)
        # Samples whose cleanup could not run (or failed): close them now, unless the user asked
        # to keep sandboxes (--no-sandbox-cleanup; `smoldataenvs sandbox cleanup` removes them).
        if not cleanup:
            return
        left = list(cls._open)
        cls._open.clear()
        await asyncio.gather(*(session.close() for session in left), return_exceptions=True)

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """`inspect sandbox cleanup <provider>`: what sessions of dead eval processes left (the
        kind's cleanup). A session of a live process is its own to end."""
        for line in await asyncio.to_thread(cls.kind.sweep):
            print(f"removed {line}")

    @classmethod
    def default_concurrency(cls) -> int | None:
        # No limit: with one, Inspect sleeps random() s (mean 0.5 s) before every sample's sandbox
        # (a fairness delay between tasks). Samples in flight are bounded by --max-samples, and
        # the programs running at once by the program slots (program_slots.program_gate).
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
