"""Let the program runner drive an Inspect `SandboxEnvironment` (docker, k8s, bwrap, ...).

Inspect providers signal a timeout or an output overflow by raising; the runner wants both as
an `ExecResult` it can classify. Calls go through Inspect's own object (so they are recorded in
the sample's transcript); where it is one of our providers (bwrap, smoldataenvs-docker,
smoldataenvs-local), the session's full result comes back with the call, in the result
(`provider_base.SessionExecResult`) or in the error it raised (`session_result`), since it also
reports the limit hit (memory, processes, file size) that Inspect's `ExecResult` has no field
for.

    from inspect_ai.util import sandbox
    outcome = await pipeline.run_program_outcome(as_program_host(sandbox()), code)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from smoldataenvs_tasks.contract import ExecResult
from smoldataenvs_tasks.inspect_adapter.provider_base import (
    SessionExecResult,
    session_result_of,
)
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxLost


class InspectSandboxHost:
    """`exec` (and `write_file`) over an Inspect SandboxEnvironment, never raising for the
    program's own timeout or output overflow."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment

    async def write_file(self, path: str, contents: str | bytes) -> None:
        await self.environment.write_file(path, contents)

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        from inspect_ai.util import OutputLimitExceededError, SandboxUnavailableError

        started = time.monotonic()
        try:
            result = await self.environment.exec(
                argv,
                input=input,
                cwd=cwd,
                env=dict(env) if env else None,
                timeout=math.ceil(timeout) if timeout is not None else None,
                timeout_retry=False,  # a program is run once; a retry would run it twice
            )
        except TimeoutError as error:
            full = session_result_of(error)
            if full is not None:
                return full
            return ExecResult(
                returncode=None,
                stdout=getattr(error, "truncated_output", None) or "",
                stderr="",
                timed_out=True,
                duration_s=time.monotonic() - started,
            )
        except OutputLimitExceededError as error:
            full = session_result_of(error)
            if full is not None:
                return full
            return ExecResult(
                returncode=None,
                stdout=error.truncated_output or "",
                stderr="",
                limit="output",
                duration_s=time.monotonic() - started,
            )
        except SandboxUnavailableError as error:
            cause = error.__cause__
            if isinstance(cause, SandboxFailure):
                # One of our sessions' failures, through Inspect's type: keep what it proves
                # (a SandboxLost, or a failure a sample's code may have caused). A new one:
                # re-raising the cause itself would make a cycle of causes.
                raise type(cause)(str(cause)) from None
            death = await sandbox_death(self.environment)
            if death is not None:
                return died_result(death, time.monotonic() - started)
            raise SandboxLost(f"the sandbox is unavailable: {error}") from error
        if isinstance(result, SessionExecResult):
            return result.session_result
        return ExecResult(
            returncode=result.returncode,
            stdout=result.stdout,
            stderr=result.stderr,
            limit="output" if _at_output_cap(result.stdout, result.stderr) else None,
            duration_s=time.monotonic() - started,
        )


async def sandbox_death(environment: Any) -> str | None:
    """Why an Inspect `docker` (compose) sandbox that stopped did, when the engine's record shows
    its sample did it (`container.died_of_memory`); None otherwise, and for every other provider
    (ours report a sample's doing in their own results).

    Inspect's provider raises SandboxUnavailableError for a container that stopped, whatever
    stopped it; the sample would error and `--retry-on-error` or `eval-retry` re-run it, a model
    rerolling its own 0 by filling its memory (issue 32)."""
    from smoldataenvs_tasks.inspect_adapter._compat import compose_project_service

    compose = compose_project_service(environment)
    if compose is None:
        return None
    from smoldataenvs_tasks.sandboxes.docker.container import compose_died_of_memory

    return await compose_died_of_memory(*compose)


def died_result(death: str, duration_s: float) -> ExecResult:
    """A command in a container its sample's memory took down: ended at the memory limit."""
    return ExecResult(137, "", death + "\n", limit="memory", duration_s=duration_s)


def _at_output_cap(*streams: str) -> bool:
    """Providers may cut a stream to its last MAX_EXEC_OUTPUT_SIZE bytes instead of raising
    (Inspect's `local` and `docker` do, keeping whole 4 KiB reads): a stream within one read
    buffer of the cap was cut, so the output limit was hit.

    Bytes, not characters: the cap is in bytes. Counted in characters, a flood of 4-byte
    characters cut to the cap stayed a quarter of it, and the cut stream, its runner marker gone
    from the front, ended in the runner's failure line the program printed itself: a forged
    broken sandbox (issue 32). Decoding replaces bad bytes and never shortens a stream, so a
    cut stream always counts at least its bytes."""
    from inspect_ai.util import SandboxEnvironmentLimits

    floor = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE - 65536
    return any(len(stream.encode(errors="surrogatepass")) >= floor for stream in streams)


def as_program_host(environment: Any) -> InspectSandboxHost:
    """Wrap an Inspect sandbox (e.g. `inspect_ai.util.sandbox()`) for `run_program`."""
    return InspectSandboxHost(environment)
