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
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from smoldataenvs_tasks.contract import ExecResult, SandboxLimits
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
class ProgramHost(Protocol):
    """Anything that can run a program (the runner's one need): our sessions, or the Inspect
    adapter's host over Inspect's sandbox. The one declaration of `exec`."""

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult: ...


@runtime_checkable
class SandboxSession(ProgramHost, Protocol):
    """One sample's sandbox, as every kind's session class gives it (this module's docstring)."""

    kind: str

    async def write_file(self, path: str, contents: str | bytes) -> None: ...

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes: ...

    async def close(self) -> None: ...

    def close_sync(self) -> None:
        """What `close` does, synchronously: needs no event loop nor executor, so an `atexit`
        hook or a finalizer may call it after the interpreter's executors have shut down.
        Idempotent and thread-safe; a command still running raises SandboxLost."""
        ...


@runtime_checkable
class SessionFactory(Protocol):
    """A kind's session class (`SandboxKind.session`): starts one session over a host directory
    holding the sample's tables (mounted read-only at /mnt/tables)."""

    async def start(self, stage_dir: Path, *, limits: SandboxLimits) -> SandboxSession: ...


@runtime_checkable
class HostInputs(Protocol):
    """A session whose /home/user/input is a host directory (`InputLinks.ON_HOST`): the harness
    links the tables in there itself, with no command in the sandbox."""

    input_dir: Path

    def link_inputs(self, names: list[str]) -> None: ...


@runtime_checkable
class RelocatedPaths(Protocol):
    """A session without the contract's paths (`SandboxKind.contract_paths` false): where its
    input dir and workdir really are, to rewrite prompts with (`data.prompts.relocate_paths`)."""

    @property
    def prompt_paths(self) -> dict[str, str]: ...


@runtime_checkable
class SparePool(Protocol):
    """Sessions started ahead of their samples (`SandboxKind.spares`), handed back after each
    sample to be reset for another, or removed."""

    async def take(self, stage_dir: Path) -> SandboxSession: ...

    # Any: a pool takes back only its own kind's sessions.
    async def give_back(self, session: Any, *, reuse: bool = True) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class SparePoolFactory(Protocol):
    """Makes a kind's spare pool for sessions whose stage dirs lie under `slot_root`, with the
    kind's own settings (`SessionSource`'s `settings`: Docker's `image`, `reuse`)."""

    def __call__(
        self, slot_root: Path, *, limits: SandboxLimits, settings: Mapping[str, object]
    ) -> SparePool: ...


@runtime_checkable
class Prerequisite(Protocol):
    """A kind's prerequisite or probe: returns when it holds, else raises SandboxUnavailable
    saying how to fix it."""

    def __call__(self) -> object: ...


@runtime_checkable
class Cleanup(Protocol):
    """A kind's sweep of what sessions of dead processes left (all of them with
    `all_sessions`, where the kind can tell): one line per thing removed."""

    def __call__(self, *, all_sessions: bool = False) -> list[str]: ...


@runtime_checkable
class Status(Protocol):
    """What `smoldataenvs sandbox info` says of a kind here: lines, each naming the kind."""

    def __call__(self) -> list[str]: ...
