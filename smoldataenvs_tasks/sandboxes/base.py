"""What every sandbox session offers, whether driven by Inspect or directly (lm-eval, validate).

A session is one sample's sandbox: its own writable input/work/tmp directories, the sample's
tables read-only, the contract's limits. `exec` never raises for the program's own failures
(non-zero exit, timeout, a limit hit); those come back in `ExecResult`. It raises
`SandboxFailure` only when the sandbox itself is broken (an infrastructure failure that makes the
sample ungraded, never a 0), and PermissionError when `argv[0]` exists but cannot be executed (the
caller's mistake; Inspect's sandbox API says the same).

File access runs as the sandbox's user, with paths relative to /home/user/input: `read_file`
raises FileNotFoundError, IsADirectoryError, PermissionError, or FileTooLarge past `max_bytes`
(checked before reading); `write_file` makes missing parent directories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from smoldataenvs_tasks.contract import ExecResult
from smoldataenvs_tasks.errors import SmolDataEnvsError


class SandboxFailure(SmolDataEnvsError, RuntimeError):
    """The sandbox could not start or run a command. Before any model-written code ran in it, an
    infrastructure failure (Inspect re-runs the sample; lm-eval retries it, then records it
    ungraded `sandbox_failed`); after, the model's own 0 unless it is `SandboxLost`
    (docs/threat-model.md, invariant 2)."""


class SandboxLost(SandboxFailure):
    """The sandbox went away from under the sample: its container removed or stopped, its engine
    or keeper gone, its session closed by the harness. Nothing inside a sandbox can bring that
    about, so it is never the model's 0, whenever it happens: the sample is re-run."""


class SandboxUnavailable(SandboxLost):
    """This sandbox kind cannot run on this machine (e.g. bwrap missing); says how to fix it."""


class FileTooLarge(OSError):
    """read_file of a file over the caller's size limit."""


@runtime_checkable
class SandboxSession(Protocol):
    kind: str

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult: ...

    async def write_file(self, path: str, contents: str | bytes) -> None: ...

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes: ...

    async def close(self) -> None: ...
